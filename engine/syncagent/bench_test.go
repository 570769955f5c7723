package syncagent

import (
	"context"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// Rebuild transfer benchmarks (issue 22): a snapshot disk file of
// benchData bytes of data in 64 KiB extents with 64 KiB holes between them
// (as make bench-scale's volume) sent over loopback to a new receiver file
// in the same directory, against the physical limit measured in the same
// run: a sequential O_DIRECT write of the same bytes to a new file there.
// The directory is SYNCAGENT_BENCH_DIR (default: the test's temp dir) and
// the size SYNCAGENT_BENCH_MIB (default 256).
//
//	go test ./engine/syncagent -run '^$' -bench Rebuild -benchtime 1x -count 3

const benchExtent = 64 << 10

func benchData(b *testing.B) int64 {
	mib := int64(256)
	if s := os.Getenv("SYNCAGENT_BENCH_MIB"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v <= 0 {
			b.Fatalf("SYNCAGENT_BENCH_MIB=%q", s)
		}
		mib = v
	}
	return mib << 20
}

func benchDir(b *testing.B) string {
	if d := os.Getenv("SYNCAGENT_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "syncagent-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// benchSource writes the source file: data bytes in 64 KiB extents, each
// followed by a 64 KiB hole; the file is 2*data bytes. Its pages are then
// dropped from the page cache, as a snapshot written long ago.
func benchSource(b *testing.B, path string, data int64) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(2 * data); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4<<20)
	rand.New(rand.NewSource(1)).Read(buf)
	for off := int64(0); off < data; off += benchExtent {
		i := (off / benchExtent * 4096) % int64(len(buf)-benchExtent)
		if _, err := f.WriteAt(buf[i:i+benchExtent], 2*off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// BenchmarkRebuildDiskSeqWrite is the limit: data bytes written in 1 MiB
// O_DIRECT writes, 4 in flight, to a new file, then fsync.
func BenchmarkRebuildDiskSeqWrite(b *testing.B) {
	data, dir := benchData(b), benchDir(b)
	b.SetBytes(data)
	for i := 0; i < b.N; i++ {
		path := filepath.Join(dir, "seq.img")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_DIRECT, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		const bs, inflight = 1 << 20, 4
		var wg sync.WaitGroup
		errs := make(chan error, inflight)
		for w := 0; w < inflight; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				buf := bufpool.Get(bs)
				defer bufpool.Put(buf)
				for off := int64(w) * bs; off < data; off += inflight * bs {
					if _, err := f.WriteAt(buf, off); err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.StopTimer()
		os.Remove(path)
		b.StartTimer()
	}
}

// BenchmarkRebuildSendFresh sends the snapshot file to a receiver that did
// not have it (a full rebuild), directIO as FileSend does: coalesced (our
// receiver), and one request per extent (what a Longhorn receiver gets).
func BenchmarkRebuildSendFresh(b *testing.B) {
	for _, off := range []bool{false, true} {
		name := "coalesced"
		if off {
			name = "per-extent"
		}
		b.Run(name, func(b *testing.B) {
			noCoalesce = off
			defer func() { noCoalesce = false }()
			benchSendFresh(b)
		})
	}
}

func benchSendFresh(b *testing.B) {
	data, dir := benchData(b), benchDir(b)
	name := "volume-snap-s.img"
	src := filepath.Join(dir, name)
	benchSource(b, src, data)
	b.SetBytes(data)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst := filepath.Join(dir, "dst", name)
		b.StopTimer()
		os.RemoveAll(filepath.Dir(dst))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			b.Fatal(err)
		}
		os.Remove(src + ".checksum")
		f, _ := os.Open(src)
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
		r := benchReceiver(b, dst)
		b.StartTimer()
		st, err := SendFile(context.Background(), src, hostPort("127.0.0.1", r.Port()), SendOptions{DirectIO: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if st.Sent != data {
			b.Fatalf("sent %d of %d bytes", st.Sent, data)
		}
		if got, _ := sparse.AllocatedBytesPath(dst); got > data+data/8 {
			b.Fatalf("receiver file holds %d bytes for %d of data: holes were filled", got, data)
		}
		b.StartTimer()
	}
}

func benchReceiver(b *testing.B, path string) *Receiver {
	b.Helper()
	ln, err := netListen()
	if err != nil {
		b.Fatal(err)
	}
	r := NewReceiver(ln, path, 0)
	b.Cleanup(r.Close)
	return r
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

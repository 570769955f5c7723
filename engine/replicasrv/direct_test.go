package replicasrv

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// dialDirect connects to the replica's data server as an engine on this
// node does, with the extensions the replica lists.
func dialDirect(t *testing.T, pr *Process, port int) *dataconn.Client {
	t.Helper()
	info, err := pr.Server.ReplicaGet(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := dataconn.OptionsFor(dataconn.Options{Conns: 2, Timeout: 10 * time.Second}, info.GetReplica().GetExtensions())
	c, err := dataconn.DialReplica(context.Background(), "127.0.0.1:"+strconv.Itoa(port+1), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.Local() {
		t.Fatal("client did not reach the replica over its local socket")
	}
	return c
}

// engineRead reads as the engine does: directly when it can, else through
// the replica.
func engineRead(c *dataconn.Client, p []byte, off int64) error {
	if c.ReadDirect(p, off) {
		return nil
	}
	_, err := c.ReadAt(p, off)
	return err
}

// waitDirect reads p at off until a read is served directly (the client
// fetched a current view) and returns what it read.
func waitDirect(t *testing.T, c *dataconn.Client, n int, off int64) []byte {
	t.Helper()
	p := make([]byte, n)
	deadline := time.Now().Add(10 * time.Second)
	for !c.ReadDirect(p, off) {
		if time.Now().After(deadline) {
			t.Fatal("no direct read within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return p
}

func stamp(block, version uint64) []byte {
	p := make([]byte, 4096)
	for i := 0; i < len(p); i += 16 {
		binary.LittleEndian.PutUint64(p[i:], block)
		binary.LittleEndian.PutUint64(p[i+8:], version)
	}
	return p
}

// TestDirectReadsCoherent races direct reads with writes and with chain
// changes (snapshots, snapshot removal and purge, which coalesces and prunes
// while I/O goes on, and expansion). Each block has one writer that stamps
// it with (block, version); a read must return the block's own stamp with
// a version no older than the last write completed before the read started
// and no newer than the last one started: never stale, never another
// block's data.
func TestDirectReadsCoherent(t *testing.T) { raceDirect(t, false) }

// TestDirectWritesCoherent is the same race with the writers writing the
// replica's head directly where they can (a replica without the revision
// counter gives its views a write slot), and afterwards the index rebuilt
// from the files by a reopen must give every block its last write.
func TestDirectWritesCoherent(t *testing.T) { raceDirect(t, true) }

// engineWrite writes as the engine does: directly when it can, else
// through the replica.
func engineWrite(c *dataconn.Client, p []byte, off int64, direct bool) error {
	if direct && c.WriteDirect(p, off) {
		return nil
	}
	_, err := c.WriteAt(p, off)
	return err
}

func raceDirect(t *testing.T, direct bool) {
	const size0, blocks, writers, readers = 8 << 20, 512, 4, 3
	dir := t.TempDir()
	pr, port := startProcessWith(t, Config{Dir: dir, Size: size0, Options: replica.Options{DisableRevisionCounter: direct}})
	c := dialDirect(t, pr, port)
	var done, issued [blocks]atomic.Uint64
	for b := uint64(0); b < blocks; b++ {
		if _, err := c.WriteAt(stamp(b, 0), int64(b)*4096); err != nil {
			t.Fatal(err)
		}
	}
	waitDirect(t, c, 4096, 0)
	before := c.DirectReads()
	stop := make(chan struct{})
	errc := make(chan error, writers+readers+1)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for v := uint64(1); ; v++ {
				select {
				case <-stop:
					return
				default:
				}
				b := uint64(rng.Intn(blocks/writers)*writers + w)
				issued[b].Store(v)
				if err := engineWrite(c, stamp(b, v), int64(b)*4096, direct); err != nil {
					errc <- err
					return
				}
				done[b].Store(v)
			}
		}(w)
	}
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(100 + r)))
			p := make([]byte, 8*4096)
			var lo [8]uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := 1 + rng.Intn(8)
				first := uint64(rng.Intn(blocks - n + 1))
				for i := 0; i < n; i++ {
					lo[i] = done[first+uint64(i)].Load()
				}
				if err := engineRead(c, p[:n*4096], int64(first)*4096); err != nil {
					errc <- err
					return
				}
				for i := 0; i < n; i++ {
					b := first + uint64(i)
					gotB := binary.LittleEndian.Uint64(p[i*4096:])
					gotV := binary.LittleEndian.Uint64(p[i*4096+8:])
					if hi := issued[b].Load(); gotB != b || gotV < lo[i] || gotV > hi {
						errc <- fmt.Errorf("block %d read (block %d, version %d), want version %d..%d", b, gotB, gotV, lo[i], hi)
						return
					}
				}
			}
		}(r)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		errc <- changeChain(pr, stop)
	}()
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	during := c.DirectReads() - before
	// After the last change a fresh view serves again, and reads the newest data.
	for b := uint64(0); b < blocks; b += 37 {
		if got := waitDirect(t, c, 4096, int64(b)*4096); !bytes.Equal(got, stamp(b, done[b].Load())) {
			t.Fatalf("block %d after the changes: not the last write", b)
		}
	}
	t.Logf("direct reads during the race: %d, direct writes: %d", during, c.DirectWrites())
	if during == 0 {
		t.Fatal("no read was served directly during the race")
	}
	if direct {
		checkDirectWrites(t, c, pr, dir, done[:])
	}
}

// checkDirectWrites requires direct writes to have happened, and the store
// reopened from its files (index rebuilt from their extents) to hold every
// block's last write: what the direct writers put in the head is what the
// replica itself would have.
func checkDirectWrites(t *testing.T, c *dataconn.Client, pr *Process, dir string, done []atomic.Uint64) {
	t.Helper()
	if c.DirectWrites() == 0 {
		t.Fatal("no write was served directly during the race")
	}
	c.Close() // gives the write slot back, or Close below would wait for it
	st := pr.Server.Store()
	opts := replica.Options{DisableRevisionCounter: true}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := replica.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := make([]byte, 4096)
	for b := range done {
		if _, err := st.ReadAt(p, int64(b)*4096); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p, stamp(uint64(b), done[b].Load())) {
			t.Fatalf("block %d after reopen: (block %d, version %d), want version %d", b,
				binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:]), done[b].Load())
		}
	}
}

// changeChain snapshots, removes and purges snapshots and expands the
// replica until stop is closed.
func changeChain(pr *Process, stop chan struct{}) error {
	st := pr.Server.Store()
	size := st.Size()
	var snaps []string
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		case <-time.After(20 * time.Millisecond):
		}
		name := "s" + strconv.Itoa(i)
		if err := st.Snapshot(name, false, "", nil); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		snaps = append(snaps, name)
		if len(snaps) > 3 {
			victim := snaps[len(snaps)/2]
			snaps = append(snaps[:len(snaps)/2], snaps[len(snaps)/2+1:]...)
			if err := st.MarkDiskAsRemoved(victim); err != nil {
				return fmt.Errorf("remove %s: %w", victim, err)
			}
			if _, err := st.PurgeSnapshot(context.Background(), victim, nil); err != nil {
				return fmt.Errorf("purge %s: %w", victim, err)
			}
		}
		if i%5 == 4 {
			size += 4096
			if err := st.Expand(size); err != nil {
				return fmt.Errorf("expand: %w", err)
			}
		}
	}
}

// TestDirectReadsAfterRevertAndReopen: a view taken before a revert, or
// before the store was closed and opened again, is never used afterwards.
func TestDirectReadsAfterRevertAndReopen(t *testing.T) {
	pr, port := startProcess(t, t.TempDir(), 4<<20)
	c := dialDirect(t, pr, port)
	a, b := stamp(1, 1), stamp(1, 2)
	if _, err := c.WriteAt(a, 4096); err != nil {
		t.Fatal(err)
	}
	st := pr.Server.Store()
	if err := st.Snapshot("a", true, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteAt(b, 4096); err != nil {
		t.Fatal(err)
	}
	if got := waitDirect(t, c, 4096, 4096); !bytes.Equal(got, b) {
		t.Fatal("direct read before the revert: not the last write")
	}
	if err := st.Revert("a", ""); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4096)
	if c.ReadDirect(p, 4096) {
		t.Fatal("a view from before the revert served a read")
	}
	if got := waitDirect(t, c, 4096, 4096); !bytes.Equal(got, a) {
		t.Fatal("direct read after the revert: not the snapshot's data")
	}
	ctx := context.Background()
	if _, err := pr.Server.ReplicaClose(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if c.ReadDirect(p, 4096) {
		t.Fatal("a view of a closed store served a read")
	}
	if _, err := pr.Server.ReplicaOpen(ctx, &enginerpc.ReplicaOpenRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Server.Store().WriteAt(b, 4096); err != nil {
		t.Fatal(err)
	}
	if got := waitDirect(t, c, 4096, 4096); !bytes.Equal(got, b) {
		t.Fatal("direct read after reopen: not the last write")
	}
}

// TestDirectReadDisabled: a replica started with DisableDirectRead (resource
// limits) does not list the extension and refuses views.
func TestDirectReadDisabled(t *testing.T) {
	port := testutil.FreePortRange(t, PortCount)
	pr, err := Start(Config{Dir: t.TempDir(), Size: 4 << 20, Listen: "127.0.0.1:" + strconv.Itoa(port), DisableDirectRead: true}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pr.Stop)
	if _, err := pr.Server.ReplicaOpen(context.Background(), &enginerpc.ReplicaOpenRequest{}); err != nil {
		t.Fatal(err)
	}
	info, err := pr.Server.ReplicaGet(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range info.GetReplica().GetExtensions() {
		if e == dataconn.ExtensionDirectRead {
			t.Fatalf("extensions %v list %s", info.GetReplica().GetExtensions(), e)
		}
	}
	if _, err := (dataHandler{pr.Server}).ReadView(); err != errNoDirectRead {
		t.Fatalf("ReadView: %v, want %v", err, errNoDirectRead)
	}
	// An engine that asks anyway (forcing the option) gets no direct read.
	c, err := dataconn.DialReplica(context.Background(), "127.0.0.1:"+strconv.Itoa(port+1),
		dataconn.Options{Local: true, Shm: true, DirectRead: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := make([]byte, 4096)
	for i := 0; i < 50; i++ {
		if c.ReadDirect(p, 0) {
			t.Fatal("a replica with direct reads disabled served a direct read")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStaleViewReleasedWhenIdle: an engine that reads nothing after a purge
// does not keep the purged snapshot file open (its space would not be
// freed): the client drops a stale view within its watchdog tick.
func TestStaleViewReleasedWhenIdle(t *testing.T) {
	dir := t.TempDir()
	pr, port := startProcess(t, dir, 4<<20)
	c := dialDirect(t, pr, port)
	st := pr.Server.Store()
	for i, name := range []string{"s1", "s2"} {
		if _, err := c.WriteAt(stamp(uint64(i), 1), int64(i)*4096); err != nil {
			t.Fatal(err)
		}
		if err := st.Snapshot(name, true, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	waitDirect(t, c, 8192, 0)
	if err := st.MarkDiskAsRemoved("s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PurgeSnapshot(context.Background(), "s1", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		open := deletedFilesOpen(t, dir)
		if len(open) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleted layer files still open 5 s after the purge: %v", open)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := waitDirect(t, c, 8192, 0); !bytes.Equal(got, append(stamp(0, 1), stamp(1, 1)...)) {
		t.Fatal("direct read after the purge: wrong data")
	}
}

// deletedFilesOpen lists this process's descriptors of files in dir that
// are deleted (no link left).
func deletedFilesOpen(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join("/proc/self/fd", e.Name())
		l, err := os.Readlink(p)
		var st unix.Stat_t
		// A renamed-away path shows as "(deleted)" too: count only inodes
		// without links.
		if err == nil && strings.HasPrefix(l, dir) && unix.Stat(p, &st) == nil && st.Nlink == 0 {
			out = append(out, l)
		}
	}
	return out
}

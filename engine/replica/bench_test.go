package replica

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// Benchmarks of the store on a pre-filled volume: 4 KiB random read and
// write, 128 KiB sequential read and write, serially and from parallel
// goroutines (-cpu sets GOMAXPROCS, RunParallel uses that many goroutines).
// The "raw" variants do the same I/O on a plain preallocated file: the
// store's overhead is the difference. `make bench-replica` runs them.

var benchSizeMiB = flag.Int("replica.bench-mib", 256, "benchmark volume size in MiB (pre-filled)")

var (
	benchMu     sync.Mutex
	benchDir    string
	benchStores = map[string]*Store{}
	benchFiles  = map[string]*os.File{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	for _, s := range benchStores {
		s.Close()
	}
	for _, f := range benchFiles {
		f.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func benchRoot(b *testing.B) string {
	if benchDir == "" {
		d, err := os.MkdirTemp("", "replica-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	return benchDir
}

// benchStore returns a store of benchSizeMiB, filled with data spread over
// `layers` layers (layers-1 snapshots, each holding a different stripe, so
// reads cross layer boundaries), shared by all benchmarks of that shape.
func benchStore(b *testing.B, layers int) *Store {
	benchMu.Lock()
	defer benchMu.Unlock()
	key := strconv.Itoa(layers)
	if s := benchStores[key]; s != nil {
		return s
	}
	size := int64(*benchSizeMiB) << 20
	s, err := Create(filepath.Join(benchRoot(b), "store-"+key), size, Options{DisableRevisionCounter: true})
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i*7 + 1)
	}
	for l := 0; l < layers; l++ {
		for off := int64(0); off < size; off += int64(len(chunk)) {
			if l > 0 { // later layers overwrite every layers-th 64 KiB stripe
				for o := int64(0); o < int64(len(chunk)); o += 64 << 10 {
					if (off+o)/(64<<10)%int64(layers) == int64(l) {
						if _, err := s.WriteAt(chunk[o:o+64<<10], off+o); err != nil {
							b.Fatal(err)
						}
					}
				}
				continue
			}
			if _, err := s.WriteAt(chunk, off); err != nil {
				b.Fatal(err)
			}
		}
		if l < layers-1 {
			if err := s.Snapshot("bench-"+strconv.Itoa(l), false, "", nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	benchStores[key] = s
	return s
}

func benchRaw(b *testing.B) *os.File {
	benchMu.Lock()
	defer benchMu.Unlock()
	if f := benchFiles["raw"]; f != nil {
		return f
	}
	size := int64(*benchSizeMiB) << 20
	f, err := os.OpenFile(filepath.Join(benchRoot(b), "raw.img"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(chunk)) {
		if _, err := f.WriteAt(chunk, off); err != nil {
			b.Fatal(err)
		}
	}
	f.Sync()
	benchFiles["raw"] = f
	return f
}

type ioAt interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
}

func runIO(b *testing.B, dev ioAt, size int64, bs int, write, random, parallel bool) {
	b.SetBytes(int64(bs))
	blocks := size / int64(bs)
	var seq atomic.Int64
	body := func(r *rand.Rand, buf []byte) {
		var off int64
		if random {
			off = r.Int64N(blocks) * int64(bs)
		} else {
			off = seq.Add(1) % blocks * int64(bs)
		}
		var err error
		if write {
			_, err = dev.WriteAt(buf, off)
		} else {
			_, err = dev.ReadAt(buf, off)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	if !parallel {
		r, buf := rand.New(rand.NewPCG(1, 2)), make([]byte, bs)
		for i := 0; i < b.N; i++ {
			body(r, buf)
		}
		return
	}
	var id atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		r, buf := rand.New(rand.NewPCG(id.Add(1), 2)), make([]byte, bs)
		for pb.Next() {
			body(r, buf)
		}
	})
}

func benchCases(b *testing.B, name string, dev func(b *testing.B) (ioAt, int64)) {
	for _, c := range []struct {
		name          string
		bs            int
		write, random bool
	}{
		{"randread-4k", 4096, false, true},
		{"randwrite-4k", 4096, true, true},
		{"seqread-128k", 128 << 10, false, false},
		{"seqwrite-128k", 128 << 10, true, false},
	} {
		for _, par := range []bool{false, true} {
			n := name + "/" + c.name
			if par {
				n += "/parallel"
			}
			b.Run(n, func(b *testing.B) {
				d, size := dev(b)
				runIO(b, d, size, c.bs, c.write, c.random, par)
			})
		}
	}
}

func BenchmarkStore(b *testing.B) {
	benchCases(b, "1-layer", func(b *testing.B) (ioAt, int64) { s := benchStore(b, 1); return s, s.Size() })
	benchCases(b, "8-layers", func(b *testing.B) (ioAt, int64) { s := benchStore(b, 8); return s, s.Size() })
	benchCases(b, "raw-file", func(b *testing.B) (ioAt, int64) { return benchRaw(b), int64(*benchSizeMiB) << 20 })
}

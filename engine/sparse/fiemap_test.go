package sparse

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func collectMapped(t testing.TB, f *os.File, start, end int64) []Extent {
	t.Helper()
	var out []Extent
	if err := WalkDataMapped(f, start, end, func(e Extent) error {
		out = append(out, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWalkDataMappedMatchesWalkData checks the FIEMAP walk against the
// SEEK_DATA scan on sparse files with holes, preallocated (unwritten)
// ranges partly written, delayed allocation (before a sync) and after a
// sync, over the whole file and over unaligned sub-ranges.
func TestWalkDataMappedMatchesWalkData(t *testing.T) {
	const blocks = 256
	for seed := uint64(0); seed < 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		f := newFile(t, "f", blocks)
		ops := make([]byte, 2*(1+r.IntN(60)))
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		applyOps(t, f, blocks, ops)
		for range r.IntN(4) { // preallocate a range, then write into part of it
			at := int64(r.IntN(blocks-8)) * blk
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, at, int64(1+r.IntN(8))*blk); err != nil {
				t.Skipf("fallocate: %v", err)
			}
			if r.IntN(2) == 0 {
				if _, err := f.WriteAt(fill(seed), at+int64(r.IntN(4))*blk); err != nil {
					t.Fatal(err)
				}
			}
		}
		if seed%2 == 1 {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		for _, rg := range [][2]int64{{0, blocks * blk}, {3*blk + 100, 200*blk + 7}, {0, (blocks + 10) * blk}, {50 * blk, 50 * blk}} {
			want, err := DataExtents(f, rg[0], rg[1])
			if err != nil {
				t.Fatal(err)
			}
			if got := collectMapped(t, f, rg[0], rg[1]); !sameExtents(got, want) {
				t.Fatalf("seed %d range %v: mapped %v, seek_data %v", seed, rg, got, want)
			}
		}
	}
}

func TestWalkDataMappedStopsAndChecks(t *testing.T) {
	f := newFile(t, "f", 16)
	applyOps(t, f, 16, []byte{6, 2, 6, 10}) // blocks 2-5 and 10-13 are data
	stop := errors.New("stop")
	calls := 0
	if err := WalkDataMapped(f, 0, 16*blk, func(Extent) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("walk: err %v calls %d", err, calls)
	}
	if err := WalkDataMapped(f, -1, 5, func(Extent) error { return nil }); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("negative start: %v", err)
	}
}

// BenchmarkIndexWalk compares the two walks on a 1 GiB file of 64 KiB
// extents with 64 KiB holes (what the rebuild benchmark writes).
func BenchmarkIndexWalk(b *testing.B) {
	const size, ext = 1 << 30, 64 << 10
	f := newFile(b, "f", size/blk)
	data := make([]byte, ext)
	for off := int64(0); off < size; off += 2 * ext {
		if _, err := f.WriteAt(data, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	count := func(e Extent) error { return nil }
	b.Run("seek", func(b *testing.B) {
		for range b.N {
			if err := WalkData(f, 0, size, count); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fiemap", func(b *testing.B) {
		for range b.N {
			if err := WalkDataMapped(f, 0, size, count); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package replica

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

func TestLocIndexSetGetRun(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		sectors := int64(1 + r.IntN(70))
		x := newLocIndex(sectors)
		model := make([]uint8, sectors)
		for op := 0; op < 60; op++ {
			s := r.Int64N(sectors)
			n := 1 + r.Int64N(sectors-s)
			v := uint8(r.IntN(5)) * 60
			x.set(s, n, v)
			for i := s; i < s+n; i++ {
				model[i] = v
			}
		}
		for i := int64(0); i < sectors; i++ {
			if x.get(i) != model[i] {
				t.Fatalf("seed %d sector %d: got %d want %d", seed, i, x.get(i), model[i])
			}
		}
		for s := int64(0); s < sectors; {
			end := s + 1 + r.Int64N(sectors-s)
			v, e := x.run(s, end)
			if v != model[s] || e > end || e <= s {
				t.Fatalf("seed %d run(%d,%d) = %d,%d", seed, s, end, v, e)
			}
			for i := s; i < e; i++ {
				if model[i] != v {
					t.Fatalf("seed %d run(%d,%d) crosses sector %d", seed, s, end, i)
				}
			}
			if e < end && model[e] == v {
				t.Fatalf("seed %d run(%d,%d) stopped early at %d", seed, s, end, e)
			}
			s = e
		}
	}
}

func TestLocIndexRemapAndGrow(t *testing.T) {
	x := newLocIndex(10)
	x.set(0, 3, 1)
	x.set(3, 3, 2)
	x.set(6, 2, 3)
	var table [256]uint8
	for i := range table {
		table[i] = uint8(i)
	}
	table[2], table[3] = 1, 2 // layer 2 folded into 1, 3 shifts down
	x.remap(&table)
	want := []uint8{1, 1, 1, 1, 1, 1, 2, 2, 0, 0}
	for i, w := range want {
		if x.get(int64(i)) != w {
			t.Fatalf("sector %d: %d want %d", i, x.get(int64(i)), w)
		}
	}
	y := x.grown(17)
	if y.sectors != 17 || y.get(7) != 2 || y.get(16) != 0 || y.count(1) != 6 || y.count(0) != 9 {
		t.Fatalf("grown index wrong: %d %d %d %d", y.get(7), y.get(16), y.count(1), y.count(0))
	}
}

// TestLocIndexConcurrentSet runs writers on neighbouring sectors sharing
// words; with -race this also proves the index is race-free.
func TestLocIndexConcurrentSet(t *testing.T) {
	x := newLocIndex(1024)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				for s := int64(g); s < 1024; s += 8 {
					x.set(s, 1, uint8(g+1))
					if got := x.get(s); got != uint8(g+1) {
						t.Errorf("sector %d: %d", s, got)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	for s := int64(0); s < 1024; s++ {
		if x.get(s) != uint8(s%8+1) {
			t.Fatalf("sector %d lost its update: %d", s, x.get(s))
		}
	}
}

// TestLocIndexPages covers the touched-page skipping of run, remap and
// grown on an index spanning several pages.
func TestLocIndexPages(t *testing.T) {
	const page = perWord * pageWords
	x := newLocIndex(5*page + 3)
	x.set(2*page+5, 10, 7)
	x.set(5*page, 3, 9)
	if v, e := x.run(0, x.sectors); v != 0 || e != 2*page+5 {
		t.Fatalf("run over untouched pages: %d %d", v, e)
	}
	if v, e := x.run(2*page+15, x.sectors); v != 0 || e != 5*page {
		t.Fatalf("run to the last page: %d %d", v, e)
	}
	var table [256]uint8
	for i := range table {
		table[i] = uint8(i)
	}
	table[7], table[9] = 6, 8
	x.remap(&table)
	if x.get(2*page+5) != 6 || x.get(2*page+14) != 6 || x.get(5*page+2) != 8 || x.count(0) != 5*page+3-13 {
		t.Fatal("remap across pages")
	}
	y := x.grown(9 * page)
	if y.get(2*page+6) != 6 || y.get(5*page) != 8 || y.count(0) != 9*page-13 {
		t.Fatal("grown index lost entries")
	}
	y.set(8*page, 1, 4)
	if v, e := y.run(5*page+3, 9*page); v != 0 || e != 8*page {
		t.Fatalf("run in grown index: %d %d", v, e)
	}
}

// TestBuildIndexFiemapMatchesScan builds the location index of a reopened
// store with layers full of holes both ways, from FIEMAP (what Open uses)
// and from the SEEK_DATA scan, and requires the same layer for every sector;
// the reopened store must also read what it read before.
func TestBuildIndexFiemapMatchesScan(t *testing.T) {
	const size = 8 << 20
	s := newStore(t, size, Options{DisableRevisionCounter: true})
	r := rand.New(rand.NewPCG(3, 9))
	for layer := 0; layer < 4; layer++ {
		for range 40 {
			off := r.Int64N(size/ss-8) * ss
			n := int(1+r.IntN(8)) * ss
			mustWrite(t, s, uint64(layer*1000+r.IntN(1000)), off, n)
		}
		if layer < 3 {
			if err := s.Snapshot(fmt.Sprintf("s%d", layer), true, "", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.UnmapAt(64*ss, 128*ss); err != nil { // holes punched in the head
		t.Fatal(err)
	}
	want := mustRead(t, s, 0, size)
	s = reopen(t, s)
	scanned := *s.st
	if err := scanned.buildIndexWith(sparse.WalkData); err != nil {
		t.Fatal(err)
	}
	for sec := int64(0); sec < size/ss; sec++ {
		if a, b := s.st.loc.get(sec), scanned.loc.get(sec); a != b {
			t.Fatalf("sector %d: fiemap index says layer %d, scan says %d", sec, a, b)
		}
	}
	if n := s.st.loc.count(0); n == 0 || n == size/ss {
		t.Fatalf("%d of %d sectors unmapped: the test wrote no holes or no data", n, size/ss)
	}
	expectData(t, s, 0, want)
}

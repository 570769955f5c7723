package replica

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestUnalignedWritesModel: random writes, reads and unmaps at any byte
// offset and length, with snapshots between them (so the partial sectors
// an unaligned write reads back come from older layers too), against a
// byte model; the replica reopened at the end still matches.
func TestUnalignedWritesModel(t *testing.T) {
	const size = 64 * ss
	s := newStore(t, size, Options{})
	model := make([]byte, size)
	rng := rand.New(rand.NewPCG(21, 1))
	for i := 0; i < 1500; i++ {
		off := rng.Int64N(size - 1)
		n := 1 + rng.IntN(min(3*ss, int(size-off)))
		switch op := rng.IntN(10); {
		case op < 6:
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			if w, err := s.WriteAt(p, off); err != nil || w != n {
				t.Fatalf("op %d: write %d at %d: %d %v", i, n, off, w, err)
			}
			copy(model[off:], p)
		case op < 8:
			got := make([]byte, n)
			if _, err := s.ReadAt(got, off); err != nil {
				t.Fatalf("op %d: read: %v", i, err)
			}
			if !bytes.Equal(got, model[off:off+int64(n)]) {
				t.Fatalf("op %d: read %d at %d differs from the model", i, n, off)
			}
		case op < 9:
			if _, err := s.UnmapAt(uint32(n), off); err != nil {
				t.Fatalf("op %d: unmap: %v", i, err)
			}
			inner0, inner1 := (off+ss-1)/ss*ss, (off+int64(n))/ss*ss
			if inner1 > inner0 && s.Info().Parent == "" {
				clear(model[inner0:inner1]) // no snapshot below: the whole sectors read as zeroes
			} else if inner1 > inner0 {
				got := make([]byte, inner1-inner0)
				if _, err := s.ReadAt(got, inner0); err != nil {
					t.Fatal(err)
				}
				copy(model[inner0:], got) // older data may show through (the unmap rule)
			}
		default:
			if len(s.Chain()) < 6 {
				if err := s.Snapshot("s"+itoa64(int64(i)), true, "", nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	s = reopen(t, s)
	expectData(t, s, 0, model)
}

// TestConcurrentUnalignedWrites: writers hitting the same sectors at once
// never lose each other's bytes. The volume's bytes are dealt out to the
// writers in 7-byte slots, so dozens of writers' slots share each sector;
// in every pass each writer writes each of its slots once, in random order,
// with the pass's value, and after the pass every byte must hold it (a lost
// update would leave the previous pass's value). A second test lets writes
// overlap, aligned and not.
func TestConcurrentUnalignedWrites(t *testing.T) {
	const size, writers, slot, passes = 2 * ss, 8, 7, 12
	s := newStore(t, size, Options{})
	owner := func(off int64) int { return int(off/slot) % writers }
	for pass := 1; pass <= passes; pass++ {
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				var slots []int64
				for off := int64(w * slot); off < size; off += writers * slot {
					slots = append(slots, off)
				}
				rng := rand.New(rand.NewPCG(uint64(w), uint64(pass)))
				rng.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
				for _, off := range slots {
					p := bytes.Repeat([]byte{byte(pass*writers + w)}, int(min(slot, size-off)))
					if _, err := s.WriteAt(p, off); err != nil {
						t.Error(err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		got := mustRead(t, s, 0, size)
		for off := int64(0); off < size; off++ {
			if want := byte(pass*writers + owner(off)); got[off] != want {
				t.Fatalf("pass %d: byte %d is %d, want %d (a write was lost)", pass, off, got[off], want)
			}
		}
	}
	overlappingWriters(t, s, size, writers)
}

// overlappingWriters runs writers whose writes overlap (some aligned, some
// not) and checks each byte holds the value of the last write covering it
// of some writer.
func overlappingWriters(t *testing.T, s *Store, size int64, writers int) {
	type write struct {
		off, end int64
		val      byte
	}
	plans := make([][]write, writers)
	for w := range plans {
		rng := rand.New(rand.NewPCG(uint64(w), 3))
		for i := 0; i < 200; i++ {
			off, n := rng.Int64N(size-1), 1+rng.Int64N(6000)
			if rng.IntN(3) == 0 {
				off, n = off/ss*ss, (n+ss-1)/ss*ss // aligned
			}
			plans[w] = append(plans[w], write{off, min(off+n, size), byte(1 + w*40 + i%40)})
		}
	}
	var wg sync.WaitGroup
	for w := range plans {
		wg.Add(1)
		go func(ws []write) {
			defer wg.Done()
			for _, x := range ws {
				if _, err := s.WriteAt(bytes.Repeat([]byte{x.val}, int(x.end-x.off)), x.off); err != nil {
					t.Error(err)
					return
				}
			}
		}(plans[w])
	}
	wg.Wait()
	got := mustRead(t, s, 0, int(size))
	for off := int64(0); off < size; off++ {
		allowed := map[byte]bool{}
		for _, ws := range plans {
			for i := len(ws) - 1; i >= 0; i-- {
				if ws[i].off <= off && off < ws[i].end {
					allowed[ws[i].val] = true
					break
				}
			}
		}
		if len(allowed) > 0 && !allowed[got[off]] {
			t.Fatalf("byte %d is %d, not the last write of any writer covering it (%v)", off, got[off], allowed)
		}
	}
}

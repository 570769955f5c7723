package replica

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentIOWithSnapshotsAndPurge runs many goroutines writing,
// reading and unmapping their own regions while another goroutine takes
// snapshots, expands, marks snapshots removed and purges them (coalesce and
// prune). Snapshots and purges never change what the head shows, so every
// read must match the goroutine's own model. Run it with -race.
func TestConcurrentIOWithSnapshotsAndPurge(t *testing.T) {
	const workers, region = 8, 32 // sectors per worker
	s := newStore(t, workers*region*ss, Options{})
	var stop atomic.Bool
	var wg sync.WaitGroup
	var ioOps atomic.Int64
	models := make([][][]byte, workers)
	errs := make(chan error, workers+1)
	for w := 0; w < workers; w++ {
		models[w] = make([][]byte, region)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if err := ioWorker(s, w, region, models[w], &stop, &ioOps); err != nil {
				errs <- err
				stop.Store(true)
			}
		}(w)
	}
	ops := 40
	if testing.Short() {
		ops = 10
	}
	if err := structureWorker(t.Context(), s, ops, workers*region); err != nil {
		errs <- err
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := ioOps.Load(); n < int64(10*ops) {
		t.Fatalf("only %d I/O operations ran beside %d structural rounds", n, ops)
	} else {
		t.Logf("%d I/O operations beside %d snapshot/expand/purge rounds", n, ops)
	}
	s = reopen(t, s)
	for w := 0; w < workers; w++ {
		for i, want := range models[w] {
			if want == nil {
				want = make([]byte, ss)
			}
			off := int64(w*region+i) * ss
			if got := mustRead(t, s, off, ss); !bytes.Equal(got, want) {
				t.Fatalf("after reopen: worker %d sector %d differs", w, i)
			}
		}
	}
}

func ioWorker(s *Store, w, region int, model [][]byte, stop *atomic.Bool, ops *atomic.Int64) error {
	r := rand.New(rand.NewPCG(uint64(w), 99))
	base := int64(w*region) * ss
	for gen := uint64(1); !stop.Load(); gen++ {
		ops.Add(1)
		i := r.IntN(region)
		n := 1 + r.IntN(min(4, region-i))
		off := base + int64(i)*ss
		switch r.IntN(10) {
		case 0: // unmap: afterwards each sector reads zeroes or what it held
			if _, err := s.UnmapAt(uint32(n*ss), off); err != nil {
				return err
			}
			got := make([]byte, n*ss)
			if _, err := s.ReadAt(got, off); err != nil {
				return err
			}
			for k := 0; k < n; k++ {
				sec := got[k*ss : (k+1)*ss]
				switch {
				case bytes.Equal(sec, make([]byte, ss)):
					model[i+k] = nil
				case model[i+k] == nil || !bytes.Equal(sec, model[i+k]):
					return fmt.Errorf("worker %d: unmapped sector %d shows other data", w, i+k)
				}
			}
		case 1, 2, 3, 4:
			b := pattern(gen<<8|uint64(w), off, n*ss)
			if _, err := s.WriteAt(b, off); err != nil {
				return err
			}
			for k := 0; k < n; k++ {
				model[i+k] = b[k*ss : (k+1)*ss]
			}
		default:
			got := make([]byte, n*ss)
			if _, err := s.ReadAt(got, off); err != nil {
				return err
			}
			for k := 0; k < n; k++ {
				want := model[i+k]
				if want == nil {
					want = make([]byte, ss)
				}
				if !bytes.Equal(got[k*ss:(k+1)*ss], want) {
					return fmt.Errorf("worker %d: sector %d differs", w, i+k)
				}
			}
		}
	}
	return nil
}

func structureWorker(ctx context.Context, s *Store, ops, sectors int) error {
	r := rand.New(rand.NewPCG(7, 7))
	var snaps []string
	size := int64(sectors) * ss
	for i := 0; i < ops; i++ {
		name := "c" + strconv.Itoa(i)
		if err := s.Snapshot(name, true, "", nil); err != nil {
			return err
		}
		snaps = append(snaps, name)
		if r.IntN(4) == 0 {
			size += 4 * ss
			if err := s.Expand(size); err != nil {
				return err
			}
		}
		if len(snaps) > 2 {
			k := r.IntN(len(snaps) - 1)
			if err := s.MarkDiskAsRemoved(snaps[k]); err != nil {
				return err
			}
			snaps = append(snaps[:k], snaps[k+1:]...)
		}
		if r.IntN(2) == 0 {
			if err := s.Purge(ctx, nil); err != nil {
				return err
			}
		}
		if err := s.Flush(); err != nil {
			return err
		}
	}
	// The newest snapshot sits right under the head: pruning it runs
	// concurrently with the writers.
	if err := s.MarkDiskAsRemoved(snaps[len(snaps)-1]); err != nil {
		return err
	}
	return s.Purge(ctx, nil)
}

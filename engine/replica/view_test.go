package replica

import (
	"errors"
	"testing"
	"time"
)

// TestLockWaitsForDirectWriters: an exclusive section (a snapshot) makes
// the sequence number odd and then waits while a direct write slot counts a
// write in progress; releasing the slot (its connection closed: the engine
// is gone) drops the count. Without the revision counter a view has a slot,
// with it none.
func TestLockWaitsForDirectWriters(t *testing.T) {
	s := newStore(t, 1<<20, Options{DisableRevisionCounter: true})
	v, err := s.ReadView()
	if errors.Is(err, ErrNoView) {
		t.Skip("no shared memory")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.WriteSlot < 0 {
		t.Fatal("no write slot on a store without the revision counter")
	}
	slot := &s.mu.slots[v.WriteSlot]
	for round, finish := range []func(){func() { slot.Add(-1) }, v.Release} {
		slot.Add(1)
		done := make(chan error, 1)
		go func() { done <- s.Snapshot("s"+string(rune('a'+round)), true, "", nil) }()
		select {
		case err := <-done:
			t.Fatalf("round %d: snapshot ran during a direct write: %v", round, err)
		case <-time.After(100 * time.Millisecond):
		}
		if s.mu.seq.Load()%2 != 1 {
			t.Fatalf("round %d: sequence number %d is even while the snapshot waits", round, s.mu.seq.Load())
		}
		finish()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if s.slots.used != 0 {
		t.Fatalf("slots in use after Release: %b", s.slots.used)
	}
	r := newStore(t, 1<<20, Options{})
	rv, err := r.ReadView()
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	if rv.WriteSlot != -1 {
		t.Fatalf("write slot %d on a store with the revision counter", rv.WriteSlot)
	}
}

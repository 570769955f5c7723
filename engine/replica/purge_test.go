package replica

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// chainStore builds s1 <- s2 <- s3 <- head with overlapping writes.
func chainStore(t *testing.T) *Store {
	s := newStore(t, 32*ss, Options{})
	mustWrite(t, s, 1, 0, 16*ss)
	s.Snapshot("s1", true, "", nil)
	mustWrite(t, s, 2, 4*ss, 8*ss)
	s.Snapshot("s2", true, "", nil)
	mustWrite(t, s, 3, 8*ss, 8*ss)
	s.Snapshot("s3", true, "", nil)
	mustWrite(t, s, 4, 14*ss, 4*ss)
	return s
}

func TestPurgeCoalesce(t *testing.T) {
	s := chainStore(t)
	before := views(t, s)
	head := mustRead(t, s, 0, 32*ss)
	if err := s.MarkDiskAsRemoved("s1"); err != nil {
		t.Fatal(err)
	}
	plan, err := s.PrepareRemoveDisk("s1")
	want := []PrepareRemoveAction{{ActionCoalesce, "volume-snap-s1.img", "volume-snap-s2.img"}, {ActionReplace, "volume-snap-s1.img", "volume-snap-s2.img"}}
	if err != nil || !reflect.DeepEqual(plan, want) {
		t.Fatalf("plan %v %v", plan, err)
	}
	var last [2]int64
	act, err := s.PurgeSnapshot(t.Context(), "s1", func(d, tot int64) { last = [2]int64{d, tot} })
	if err != nil || act != ActionCoalesce {
		t.Fatalf("purge: %q %v", act, err)
	}
	if last[0] != last[1] || last[1] != 8*ss {
		t.Fatalf("progress %v, want s2's 8 sectors", last)
	}
	expectData(t, s, 0, head)
	after := views(t, s)
	if _, ok := after["volume-snap-s1.img"]; ok {
		t.Fatal("s1 still listed")
	}
	for _, d := range []string{"volume-snap-s2.img", "volume-snap-s3.img", s.Info().Head} {
		if !bytes.Equal(after[d], before[d]) {
			t.Fatalf("view of %s changed", d)
		}
	}
	if p := s.ListDisks()["volume-snap-s2.img"].Parent; p != "" {
		t.Fatalf("s2 parent %q", p)
	}
	if !reflect.DeepEqual(s.Chain(), []string{"volume-head-003.img", "volume-snap-s3.img", "volume-snap-s2.img"}) {
		t.Fatalf("chain %v", s.Chain())
	}
	// The in-memory index after the swap equals the one a reopen builds.
	mustWrite(t, s, 5, 0, ss)
	head = mustRead(t, s, 0, 32*ss)
	s = reopen(t, s)
	expectData(t, s, 0, head)
}

func TestPurgePrune(t *testing.T) {
	s := chainStore(t)
	for _, n := range []string{"s3"} {
		s.MarkDiskAsRemoved(n)
	}
	before := views(t, s)
	s3 := filepath.Join(s.dir, "volume-snap-s3.img")
	allocBefore := allocated(s3)
	plan, _ := s.PrepareRemoveDisk("s3")
	if len(plan) != 1 || plan[0].Action != ActionPrune || plan[0].Target != s.Info().Head {
		t.Fatalf("plan %v", plan)
	}
	os.WriteFile(s3+checksumSuffix, []byte("{}"), 0o644)
	act, err := s.PurgeSnapshot(t.Context(), "volume-snap-s3.img", nil)
	if err != nil || act != ActionPrune {
		t.Fatalf("purge: %q %v", act, err)
	}
	if a := allocated(s3); a != allocBefore-2*ss {
		t.Fatalf("s3 allocation %d -> %d, want 2 sectors less", allocBefore, a)
	}
	if _, err := os.Stat(s3 + checksumSuffix); !os.IsNotExist(err) {
		t.Fatal("stale checksum kept")
	}
	head := s.Info().Head
	if !bytes.Equal(views(t, s)[head], before[head]) || len(s.Chain()) != 4 {
		t.Fatal("prune changed the head view or the chain")
	}
}

func TestPurgeRemoveSkipAndErrors(t *testing.T) {
	s := chainStore(t)
	expectErr(t, func() error { _, err := s.PurgeSnapshot(t.Context(), "s2", nil); return err }(), ErrNotRemoved)
	expectErr(t, func() error { _, err := s.PurgeSnapshot(t.Context(), s.Info().Head, nil); return err }(), ErrIsHead)
	if act, err := s.PurgeSnapshot(t.Context(), "nothing", nil); act != "" || err != nil {
		t.Fatalf("unknown: %q %v", act, err)
	}
	// Revert to s1 leaves s2 <- s3 off the chain; s1 gets two children.
	if err := s.Revert("s1", ""); err != nil {
		t.Fatal(err)
	}
	s.MarkDiskAsRemoved("s1")
	if act, err := s.PurgeSnapshot(t.Context(), "s1", nil); act != "" || err != nil {
		t.Fatalf("two children must be skipped: %q %v", act, err)
	}
	before := views(t, s)
	s.MarkDiskAsRemoved("s2") // off-chain, only child s3: coalesce
	if act, err := s.PurgeSnapshot(t.Context(), "s2", nil); act != ActionCoalesce || err != nil {
		t.Fatalf("off-chain coalesce: %q %v", act, err)
	}
	if !bytes.Equal(views(t, s)["volume-snap-s3.img"], before["volume-snap-s3.img"]) {
		t.Fatal("off-chain view changed")
	}
	s.MarkDiskAsRemoved("s3") // now a leaf
	if act, err := s.PurgeSnapshot(t.Context(), "s3", nil); act != ActionRemove || err != nil {
		t.Fatalf("leaf: %q %v", act, err)
	}
	for _, n := range []string{"volume-snap-s3.img", "volume-snap-s3.img.meta", "volume-snap-s2.img"} {
		if _, err := os.Stat(filepath.Join(s.dir, n)); !os.IsNotExist(err) {
			t.Fatalf("%s still present", n)
		}
	}
	// s1 has one child (the head) now: prune.
	if act, err := s.PurgeSnapshot(t.Context(), "s1", nil); act != ActionPrune || err != nil {
		t.Fatalf("s1: %q %v", act, err)
	}
}

func TestPurgeAll(t *testing.T) {
	s := chainStore(t)
	mustWrite(t, s, 9, 20*ss, 2*ss)
	if err := s.Expand(40 * ss); err != nil { // expand-163840 snapshot on top
		t.Fatal(err)
	}
	mustWrite(t, s, 10, 38*ss, 2*ss)
	head := mustRead(t, s, 0, 40*ss)
	for _, n := range []string{"s1", "s2", "s3", "expand-163840"} {
		if err := s.MarkDiskAsRemoved(n); err != nil {
			t.Fatal(err)
		}
	}
	var calls int
	if err := s.Purge(t.Context(), func(string, int64, int64) { calls++ }); err != nil {
		t.Fatal(err)
	}
	expectData(t, s, 0, head)
	chain := s.Chain()
	if len(chain) != 2 || chain[1] != "volume-snap-expand-163840.img" || calls == 0 {
		t.Fatalf("chain after purge %v (progress calls %d)", chain, calls)
	}
	if fi, _ := os.Stat(filepath.Join(s.dir, chain[1])); fi.Size() != 32*ss {
		t.Fatalf("merged snapshot size %d, want the expansion snapshot's 32 sectors", fi.Size())
	}
	s = reopen(t, s)
	expectData(t, s, 0, head)
}

func TestPurgeCancelled(t *testing.T) {
	s := chainStore(t)
	s.MarkDiskAsRemoved("s1")
	before := views(t, s)
	ctx, cancel := contextWithCancel(t)
	cancel()
	if _, err := s.PurgeSnapshot(ctx, "s1", nil); err == nil {
		t.Fatal("cancelled purge succeeded")
	}
	after := views(t, s)
	for _, d := range []string{"volume-snap-s2.img", "volume-snap-s3.img", s.Info().Head} {
		if !bytes.Equal(after[d], before[d]) {
			t.Fatalf("cancelled purge changed %s", d)
		}
	}
}

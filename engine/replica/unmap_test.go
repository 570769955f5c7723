package replica

import (
	"path/filepath"
	"testing"
)

func TestUnmapHeadOnly(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	mustWrite(t, s, 1, 0, 8*ss)
	head := filepath.Join(s.dir, s.Info().Head)
	n, err := s.UnmapAt(4*ss, 2*ss)
	if err != nil || n != 4*ss {
		t.Fatalf("unmap: %d %v", n, err)
	}
	want := pattern(1, 0, 8*ss)
	clear(want[2*ss : 6*ss])
	expectData(t, s, 0, want)
	if a := allocated(head); a != 4*ss {
		t.Fatalf("head allocation %d, want 4 sectors", a)
	}
	// Unmapping holes punches nothing.
	if n, err := s.UnmapAt(4*ss, 10*ss); err != nil || n != 0 {
		t.Fatalf("unmap of holes: %d %v", n, err)
	}
	if n, err := s.UnmapAt(0, 0); err != nil || n != 0 {
		t.Fatalf("empty unmap: %d %v", n, err)
	}
	s = reopen(t, s)
	expectData(t, s, 0, want)
}

func TestUnmapKeepsWhatRetainedSnapshotsShowThrough(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	base := mustWrite(t, s, 1, 0, 4*ss) // s1 holds sectors 0-3
	if err := s.Snapshot("s1", true, "", nil); err != nil {
		t.Fatal(err)
	}
	top := mustWrite(t, s, 2, 2*ss, 4*ss) // head holds 2-5
	n, err := s.UnmapAt(8*ss, 0)
	if err != nil || n != 2*ss {
		t.Fatalf("unmap: %d %v, want only sectors 4-5 punched", n, err)
	}
	// 0-1: s1's data (head never held them); 2-3: head data kept because s1
	// holds them below; 4-5: punched; 6-7: holes.
	want := append(append([]byte{}, base[:2*ss]...), top[:2*ss]...)
	want = append(want, make([]byte, 4*ss)...)
	expectData(t, s, 0, want)
	s = reopen(t, s)
	expectData(t, s, 0, want)
}

func TestUnmapPunchesRemovedChain(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	mustWrite(t, s, 1, 0, 4*ss) // s1: 0-3
	s.Snapshot("s1", true, "", nil)
	mustWrite(t, s, 2, 2*ss, 4*ss) // s2: 2-5
	s.Snapshot("s2", true, "", nil)
	mustWrite(t, s, 3, 4*ss, 4*ss) // head: 4-7
	s.MarkDiskAsRemoved("s2")
	s2 := filepath.Join(s.dir, "volume-snap-s2.img")
	n, err := s.UnmapAt(8*ss, 0)
	// Unmappable: head and s2. s1 (retained) holds 0-3, so 2-3 stay; 4-7 go.
	if err != nil || n != 4*ss {
		t.Fatalf("unmap: %d %v", n, err)
	}
	want := append(pattern(1, 0, 2*ss), pattern(2, 2*ss, 2*ss)...)
	want = append(want, make([]byte, 4*ss)...)
	expectData(t, s, 0, want)
	if a := allocated(s2); a != 2*ss {
		t.Fatalf("s2 allocation %d, want 2 sectors", a)
	}
	s = reopen(t, s)
	expectData(t, s, 0, want)
}

func TestUnmapMarkSnapChainRemoved(t *testing.T) {
	s := newStore(t, 16*ss, Options{UnmapMarkSnapChainRemoved: true})
	mustWrite(t, s, 1, 0, 4*ss)
	s.Snapshot("s1", true, "", nil)
	mustWrite(t, s, 2, 2*ss, 4*ss)
	s.Snapshot("s2", true, "", nil)
	n, err := s.UnmapAt(16*ss, 0)
	if err != nil || n != 6*ss {
		t.Fatalf("unmap: %d %v", n, err)
	}
	d := s.ListDisks()
	if !d["volume-snap-s1.img"].Removed || !d["volume-snap-s2.img"].Removed {
		t.Fatal("chain not marked removed")
	}
	expectData(t, s, 0, make([]byte, 16*ss))
	if err := s.Purge(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if a := allocated(filepath.Join(s.dir, s.Chain()[1])); a != 0 {
		t.Fatalf("purged chain still holds %d bytes", a)
	}
	// A branch point stops the marking: revert creates a second child of s1.
	s.SetUnmapMarkSnapChainRemoved(false)
	b := newStore(t, 8*ss, Options{})
	mustWrite(t, b, 1, 0, ss)
	b.Snapshot("a", true, "", nil)
	b.Snapshot("b", true, "", nil)
	b.Revert("a", "")
	b.Snapshot("c", true, "", nil) // a has children b and c
	b.SetUnmapMarkSnapChainRemoved(true)
	if _, err := b.UnmapAt(ss, 0); err != nil {
		t.Fatal(err)
	}
	d = b.ListDisks()
	if !d["volume-snap-c.img"].Removed || d["volume-snap-a.img"].Removed {
		t.Fatalf("marking must stop at the branching snapshot: %+v", d)
	}
	expectData(t, b, 0, pattern(1, 0, ss)) // a still shows through
}

package replica

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A snapshot file whose size no longer fits the chain (truncated, grown,
// unaligned) is an error on open; a chain made by an expansion is not.
func TestLayerOfTheWrongSizeIsCorruptOnOpen(t *testing.T) {
	for _, c := range []struct {
		name    string
		size    int64
		corrupt bool
	}{
		{"truncated below its parent", 64 << 10, true},
		{"unaligned", 1<<20 + 1, true},
		{"grown past its child", 4 << 20, true},
		{"empty", 0, true},
		{"intact", 1 << 20, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, 1<<20, Options{})
			mustWrite(t, s, 1, 0, 64<<10)
			if err := s.Snapshot("s1", true, "", nil); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, 2, 0, 4096)
			if err := s.Snapshot("s2", true, "", nil); err != nil {
				t.Fatal(err)
			}
			dir := s.dir
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(filepath.Join(dir, "volume-snap-s2.img"), c.size); err != nil {
				t.Fatal(err)
			}
			n, err := Open(dir, Options{})
			if err == nil {
				n.Close()
			}
			if c.corrupt != errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: %v, want corrupt %v", err, c.corrupt)
			}
		})
	}
	t.Run("expanded chain", func(t *testing.T) {
		s := newStore(t, 1<<20, Options{})
		mustWrite(t, s, 1, 0, 4096)
		if err := s.Snapshot("s1", true, "", nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Expand(2 << 20); err != nil {
			t.Fatal(err)
		}
		reopen(t, s)
	})
}

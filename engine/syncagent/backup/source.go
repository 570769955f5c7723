// Package backup is the replica side of backups and restores: what the sync
// agent's BackupCreate, BackupStatus, BackupRestore, RestoreStatus and
// BackupRemove do (Longhorn's pkg/sync/rpc/server.go and pkg/replica/backup.go,
// rewritten on engine/backupstore). It is independent of the gRPC shapes: the
// sync agent's methods convert their messages and call a Manager.
//
// A backup reads a snapshot as the replica holds it: the chain of layer files
// from the oldest to the snapshot, each layer's data extents (SEEK_DATA)
// over the previous ones. Incremental backups read only the blocks touched
// by the layers above the last backed-up snapshot (Longhorn's
// CompareSnapshot over its location index).
package backup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

// layer is one open layer file and its data extents.
type layer struct {
	name    string // file name, volume-snap-X.img
	f       *os.File
	extents []sparse.Extent
}

// layerSource is a snapshot as a backupstore.Source: the layer files of its
// chain, oldest first. Files are opened once, so a purge that renames or
// removes them does not change what the backup reads.
type layerSource struct {
	snap   string
	size   int64
	layers []layer
	mu     sync.Mutex
}

// snapFile is Longhorn's snapshot file name.
func snapFile(name string) string { return "volume-snap-" + name + ".img" }

// openSource opens the chain of snapshot snap (paths oldest first).
func openSource(snap string, paths []string, size int64) (*layerSource, error) {
	s := &layerSource{snap: snap, size: size}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			s.Close()
			return nil, err
		}
		ext, err := sparse.DataExtents(f, 0, size)
		if err != nil {
			f.Close()
			s.Close()
			return nil, err
		}
		s.layers = append(s.layers, layer{name: filepath.Base(p), f: f, extents: ext})
	}
	if len(s.layers) == 0 || s.layers[len(s.layers)-1].name != snapFile(snap) {
		s.Close()
		return nil, fmt.Errorf("snapshot %s: the chain does not end at %s", snap, snapFile(snap))
	}
	return s, nil
}

// Close closes the layer files.
func (s *layerSource) Close() {
	for _, l := range s.layers {
		l.f.Close()
	}
	s.layers = nil
}

// index returns the position of snapshot name in the chain, or -1.
func (s *layerSource) index(name string) int {
	for i, l := range s.layers {
		if l.name == snapFile(name) {
			return i
		}
	}
	return -1
}

// HasSnapshot reports whether name is an ancestor of (or is) the backed-up
// snapshot: only then does the diff of the layers above it give the changed
// blocks (a snapshot on another branch, after a revert, does not).
func (s *layerSource) HasSnapshot(name string) bool { return s.index(name) >= 0 }

// ChangedBlocks returns the blocks touched by the layers above base (all
// layers when base is "").
func (s *layerSource) ChangedBlocks(snap, base string, bs int64) ([]int64, error) {
	if snap != s.snap {
		return nil, fmt.Errorf("source is snapshot %s, not %s", s.snap, snap)
	}
	from := 0
	if base != "" {
		i := s.index(base)
		if i < 0 {
			return nil, fmt.Errorf("snapshot %s is not an ancestor of %s", base, snap)
		}
		from = i + 1
	}
	set := map[int64]bool{}
	for _, l := range s.layers[from:] {
		for _, e := range l.extents {
			for b := e.Offset / bs * bs; b < e.End() && b < s.size; b += bs {
				set[b] = true
			}
		}
	}
	out := make([]int64, 0, len(set))
	for b := range set {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// ReadSnapshot fills p with the snapshot's bytes at off: zeroes, then each
// layer's data extents over it, oldest first.
func (s *layerSource) ReadSnapshot(snap string, p []byte, off int64) error {
	if snap != s.snap {
		return fmt.Errorf("source is snapshot %s, not %s", s.snap, snap)
	}
	end := off + int64(len(p))
	if off < 0 || end > s.size {
		return fmt.Errorf("read [%d, %d) outside the volume size %d", off, end, s.size)
	}
	clear(p)
	for _, l := range s.layers {
		i := sort.Search(len(l.extents), func(i int) bool { return l.extents[i].End() > off })
		for ; i < len(l.extents) && l.extents[i].Offset < end; i++ {
			a, b := max(l.extents[i].Offset, off), min(l.extents[i].End(), end)
			if err := preadFull(l.f, p[a-off:b-off], a); err != nil {
				return fmt.Errorf("read %s at %d: %w", l.name, a, err)
			}
		}
	}
	return nil
}

func preadFull(f *os.File, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := f.ReadAt(b, off)
		if n > 0 {
			b, off = b[n:], off+int64(n)
			continue
		}
		if errors.Is(err, io.EOF) {
			// past the end of a layer shorter than the volume (taken
			// before an expansion): zeroes
			clear(b)
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

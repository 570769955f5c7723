package replica

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotReservedNames: names that read as the head ("volume-head") or as
// a disk file name (volume-head-NNN.img, volume-snap-X.img) are refused, since
// every API that takes a snapshot also takes file names and `snapshot ls`
// shows the head as "volume-head": such a snapshot could not be told apart
// from the head or from another snapshot, and could not be removed.
func TestSnapshotReservedNames(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	mustWrite(t, s, 1, 0, ss)
	if err := s.Snapshot("x", true, "", nil); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, s.dir)
	for _, name := range []string{"volume-head", "volume-head-001.img", "volume-head-7.img",
		"volume-snap-x.img", "volume-snap-y.img", "volume-head-001.img.meta"} {
		expectErr(t, s.Snapshot(name, true, "", nil), ErrInvalidName)
	}
	if dirState(t, s.dir) != before {
		t.Fatal("refused snapshots changed the directory")
	}
	// Names that only start alike are fine.
	for _, name := range []string{"volume-headroom", "volume-snapshot-1", "volume-head.bak"} {
		if err := s.Snapshot(name, true, "", nil); err != nil {
			t.Fatalf("snapshot %q: %v", name, err)
		}
	}
}

// TestVolumeSizeLimit: sizes above MaxVolumeSize are refused by Create and
// Expand before anything is written (a location index for them would not
// fit in memory: the process would die instead of answering), and a
// volume.meta claiming such a size does not open.
func TestVolumeSizeLimit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	_, err := Create(dir, MaxVolumeSize+SectorSize, Options{})
	expectErr(t, err, ErrInvalidSize)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("refused Create left %s behind: %v", dir, err)
	}
	s := newStore(t, 16*ss, Options{})
	before := dirState(t, s.dir)
	expectErr(t, s.Expand(MaxVolumeSize+SectorSize), ErrInvalidSize)
	expectErr(t, s.Expand(1<<62), ErrInvalidSize)
	if dirState(t, s.dir) != before {
		t.Fatal("refused Expand changed the directory")
	}
	// A head and volume.meta of a huge size (sparse, so cheap) do not open.
	d := s.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := ReadVolumeMeta(d)
	if err != nil {
		t.Fatal(err)
	}
	huge := int64(MaxVolumeSize + SectorSize)
	if err := os.Truncate(filepath.Join(d, m.Head), huge); err != nil {
		t.Skipf("filesystem cannot hold a %d-byte sparse file: %v", huge, err)
	}
	m.Size = huge
	if err := writeJSONAtomic(d, VolumeMetaFile, &m); err != nil {
		t.Fatal(err)
	}
	_, err = Open(d, Options{})
	expectOpenErr(t, err)
}

func expectOpenErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("opened a replica larger than MaxVolumeSize")
	}
}

package replica

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestBackingFile(t *testing.T) {
	backing := filepath.Join(t.TempDir(), "backing.raw")
	if err := os.WriteFile(backing, bytes.Repeat([]byte{0xbb}, 4*ss), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, 8*ss, Options{BackingFile: backing})
	want := append(bytes.Repeat([]byte{0xbb}, 4*ss), make([]byte, 4*ss)...)
	expectData(t, s, 0, want)
	w := mustWrite(t, s, 1, 3*ss, 2*ss)
	copy(want[3*ss:], w)
	expectData(t, s, 0, want)
	// The backing file is a retained layer: unmap keeps sector 3 (the
	// backing image holds it) and punches sector 4.
	if n, err := s.UnmapAt(2*ss, 3*ss); err != nil || n != ss {
		t.Fatalf("unmap: %d %v", n, err)
	}
	clear(want[4*ss : 5*ss])
	expectData(t, s, 0, want)
	if err := s.Snapshot("a", true, "", nil); err != nil {
		t.Fatal(err)
	}
	s.MarkDiskAsRemoved("a")
	if err := s.Purge(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if c := s.Chain(); len(c) != 2 || c[1] != "volume-snap-a.img" {
		t.Fatalf("chain %v (the backing file is not part of it)", c)
	}
	if f := s.RebuildFiles(); len(f) != 1 {
		t.Fatalf("rebuild files %v", f)
	}
	s.Close()
	m, _ := ReadVolumeMeta(s.dir)
	if m.BackingFilePath != backing {
		t.Fatalf("BackingFilePath %q", m.BackingFilePath)
	}
	s2, err := Open(s.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	expectData(t, s2, 0, want)
	os.Remove(backing)
	s2.Close()
	if _, err := Open(s.dir, Options{}); err == nil {
		t.Fatal("open without its backing file succeeded")
	}
}

// FuzzOpenMetadata feeds arbitrary volume.meta, disk .meta and
// revision.counter contents (a rebuild receives .meta files from another
// replica over the network) to Open: it must fail cleanly or give a store
// that reads and closes, never panic.
func FuzzOpenMetadata(f *testing.F) {
	f.Add([]byte(`{"Size":16384,"Head":"volume-head-001.img","Dirty":false,"Rebuilding":false,"Error":"","Parent":"volume-snap-a.img","SectorSize":512,"BackingFilePath":"","Encrypted":false}`),
		[]byte(`{"Name":"volume-head-001.img","Parent":"volume-snap-a.img","Removed":false,"UserCreated":false,"Created":"2024-01-01T00:00:00Z","Labels":null}`),
		[]byte("5"))
	f.Add([]byte(`{"Size":-1,"Head":"../x"}`), []byte(`{"Parent":"volume-head-001.img"}`), []byte("-3"))
	f.Add([]byte(`{"Size":4096,"Head":"volume-head-001.img"}`), []byte(`{"Parent":"volume-snap-nope.img","Removed":true}`), []byte{})
	f.Add([]byte(``), []byte(`{}`), []byte("99999999999999999999999"))
	f.Add([]byte(`{"Size":4611686018427387904,"Head":"volume-head-001.img"}`), []byte(`{"Parent":"volume-snap-a.img"}`), []byte("1"))
	f.Fuzz(func(t *testing.T, volumeMeta, headMeta, counter []byte) {
		dir := t.TempDir()
		put := func(name string, data []byte) {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		img := make([]byte, 4*ss)
		img[0] = 1
		put("volume-snap-a.img", img)
		put("volume-snap-a.img.meta", []byte(`{"Name":"volume-head-000.img","Parent":"","Removed":false,"UserCreated":true,"Created":"x","Labels":null}`))
		put("volume-head-001.img", img)
		put("volume-head-001.img.meta", headMeta)
		put(VolumeMetaFile, volumeMeta)
		put(RevisionCounterFile, counter)
		s, err := Open(dir, Options{})
		if err != nil {
			return
		}
		defer s.Close()
		size := s.Size()
		if size <= 0 || size%ss != 0 {
			t.Fatalf("opened with size %d", size)
		}
		if _, err := s.ReadAt(make([]byte, min(size, 8*ss)), 0); err != nil {
			t.Fatalf("read: %v", err)
		}
		if err := s.Snapshot("fuzz", true, "", nil); err != nil && !isRequestError(err) {
			t.Logf("snapshot: %v", err)
		}
	})
}

func isRequestError(err error) bool {
	var e *Error
	return err != nil && errorsAs(err, &e)
}

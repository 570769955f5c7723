package replica

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

type crash struct{ point string }

// withHook runs fn with testHook set to h, restoring it afterwards.
func withHook(h func(string) error, fn func()) {
	testHook = h
	defer func() { testHook = nil }()
	fn()
}

// crashAt runs op and simulates a process crash when it reaches point: the
// hook panics, so no rollback or cleanup runs after that point. It reports
// whether the point was reached.
func crashAt(point string, op func()) (hit bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			hit = true
		}
	}()
	withHook(func(p string) error {
		if p == point {
			panic(crash{p})
		}
		return nil
	}, op)
	return false
}

func cloneDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "clone")
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range fileNames(t, src) {
		if err := sparse.CopyFile(context.Background(), filepath.Join(dst, n), filepath.Join(src, n), nil); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

type dirOutcome struct {
	files []string
	views map[string][]byte // views of disks not marked removed
	disks map[string]DiskInfo
	head  []byte
}

func outcome(t *testing.T, dir string) dirOutcome {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	defer s.Close()
	o := dirOutcome{views: views(t, s), head: mustRead(t, s, 0, int(s.Size())), disks: s.ListDisks()}
	for name, d := range o.disks {
		if d.Removed {
			delete(o.views, name) // a removed snapshot's content is no longer served
		}
		d.Size = 0
		o.disks[name] = d
	}
	s.Close()
	o.files = fileNames(t, dir)
	return o
}

func sameOutcome(a, b dirOutcome) bool {
	return reflect.DeepEqual(a.files, b.files) && reflect.DeepEqual(a.views, b.views) &&
		reflect.DeepEqual(a.disks, b.disks) && bytes.Equal(a.head, b.head)
}

// crashCase prepares a replica in a fresh directory and names an operation
// on it and the points where it can be interrupted.
type crashCase struct {
	name   string
	prep   func(t *testing.T, s *Store)
	op     func(s *Store) error
	points []string
}

func crashCases() []crashCase {
	snapPrep := func(t *testing.T, s *Store) {
		mustWrite(t, s, 1, 0, 4*ss)
		s.Snapshot("a", true, "", nil)
		mustWrite(t, s, 2, 2*ss, 4*ss)
	}
	purgePrep := func(t *testing.T, s *Store) {
		snapPrep(t, s)
		s.Snapshot("b", true, "", nil)
		mustWrite(t, s, 3, 3*ss, ss)
		s.MarkDiskAsRemoved("a")
	}
	return []crashCase{
		{"snapshot", snapPrep, func(s *Store) error { return s.Snapshot("x", true, "", nil) }, []string{
			"create-head", "snapshot:head-meta", "atomic-rename:volume-head-002.img.meta", "snapshot:link",
			"snapshot:snap-meta", "atomic-rename:volume-snap-x.img.meta", "atomic-rename:volume.meta", "snapshot:committed"}},
		{"expand", snapPrep, func(s *Store) error { return s.Expand(32 * ss) }, []string{
			"create-head", "expand:link", "atomic-rename:volume.meta", "expand:committed"}},
		{"revert", snapPrep, func(s *Store) error { return s.Revert("a", "") }, []string{
			"create-head", "revert:head-meta", "atomic-rename:volume.meta", "revert:committed"}},
		{"mark-removed", snapPrep, func(s *Store) error { return s.MarkDiskAsRemoved("a") },
			[]string{"atomic-rename:volume-snap-a.img.meta"}},
		{"coalesce", purgePrep, func(s *Store) error { _, err := s.PurgeSnapshot(context.Background(), "a", nil); return err },
			[]string{"coalesce:rename", "coalesce:child-meta", "atomic-rename:volume-snap-b.img.meta", "coalesce:committed"}},
		{"remove-leaf", func(t *testing.T, s *Store) {
			snapPrep(t, s)
			s.Revert("a", "")
			s.Snapshot("b", true, "", nil)
			s.Revert("a", "")
			s.MarkDiskAsRemoved("b")
		}, func(s *Store) error { _, err := s.PurgeSnapshot(context.Background(), "b", nil); return err },
			[]string{"remove:data", "remove:meta"}},
	}
}

// TestCrashConsistency interrupts every multi-step operation at every step
// and checks that Open then finds exactly the state before the operation or
// exactly the state after it (files, every disk's view, the volume's data).
func TestCrashConsistency(t *testing.T) {
	for _, c := range crashCases() {
		t.Run(c.name, func(t *testing.T) {
			base := newStore(t, 16*ss, Options{})
			c.prep(t, base)
			if err := base.Close(); err != nil {
				t.Fatal(err)
			}
			before := outcome(t, cloneDir(t, base.dir))
			doneDir := cloneDir(t, base.dir)
			s, err := Open(doneDir, Options{Now: fixedClock})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.op(s); err != nil {
				t.Fatal(err)
			}
			s.Close()
			after := outcome(t, doneDir)
			if sameOutcome(before, after) {
				t.Fatal("operation changed nothing; the test is vacuous")
			}
			for _, p := range c.points {
				dir := cloneDir(t, base.dir)
				s, err := Open(dir, Options{Now: fixedClock})
				if err != nil {
					t.Fatal(err)
				}
				if !crashAt(p, func() { _ = c.op(s) }) {
					t.Fatalf("point %s not reached", p)
				}
				s.closeFiles() // the crashed process's descriptors
				got := outcome(t, dir)
				if !sameOutcome(got, before) && !sameOutcome(got, after) {
					t.Fatalf("crash at %s: state is neither before nor after\n got files %v\nbefore %v\n after %v\n got disks %v\n after disks %v\n views equal %v head equal %v",
						p, got.files, before.files, after.files, got.disks, after.disks, reflect.DeepEqual(got.views, after.views), bytes.Equal(got.head, after.head))
				}
			}
		})
	}
}

// TestFailureRollsBack makes each step of Snapshot fail (an error, not a
// crash) and checks that the directory and the open store are unchanged.
func TestFailureRollsBack(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	mustWrite(t, s, 1, 0, 4*ss)
	for _, p := range []string{"create-head", "snapshot:head-meta", "atomic-rename:volume-head-001.img.meta",
		"snapshot:link", "snapshot:snap-meta", "atomic-rename:volume-snap-x.img.meta", "atomic-rename:volume.meta"} {
		before := dirState(t, s.dir)
		injected := errors.New("injected at " + p)
		var err error
		withHook(func(q string) error {
			if q == p {
				return injected
			}
			return nil
		}, func() { err = s.Snapshot("x", true, "", nil) })
		if !errors.Is(err, injected) {
			t.Fatalf("%s: error %v", p, err)
		}
		if got := dirState(t, s.dir); got != before {
			t.Fatalf("%s: directory changed:\n%s\nwant\n%s", p, got, before)
		}
		if len(s.Chain()) != 1 {
			t.Fatalf("%s: chain %v", p, s.Chain())
		}
		expectData(t, s, 0, pattern(1, 0, 4*ss))
	}
	if err := s.Snapshot("x", true, "", nil); err != nil {
		t.Fatalf("snapshot after failures: %v", err)
	}
}

// TestVolumeMetaInterruptedWrite: an interrupted volume.meta write (a
// partial volume.meta.tmp left behind) keeps the old volume.meta; an empty
// or missing volume.meta is rebuilt from the head as Longhorn does.
func TestVolumeMetaInterruptedWrite(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	a := mustWrite(t, s, 1, 0, ss)
	s.Close()
	old, _ := os.ReadFile(filepath.Join(s.dir, VolumeMetaFile))
	tmp := filepath.Join(s.dir, VolumeMetaFile+tmpSuffix)
	os.WriteFile(tmp, []byte(`{"Size":4096,"Head":"volu`), 0o644)
	s2, err := Open(s.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	expectData(t, s2, 0, a)
	s2.Close()
	now, _ := os.ReadFile(filepath.Join(s.dir, VolumeMetaFile))
	if !bytes.Equal(now, old) {
		t.Fatalf("volume.meta changed: %s vs %s", now, old)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatal("stale tmp not removed")
	}
	for _, content := range []string{"", "-"} {
		if content == "-" {
			os.Remove(filepath.Join(s.dir, VolumeMetaFile))
		} else {
			os.WriteFile(filepath.Join(s.dir, VolumeMetaFile), nil, 0o644)
		}
		s3, err := Open(s.dir, Options{})
		if err != nil {
			t.Fatalf("recover %q: %v", content, err)
		}
		expectData(t, s3, 0, a)
		if m := s3.Info(); m.Size != 16*ss || m.Head != "volume-head-000.img" || m.SectorSize != 512 {
			t.Fatalf("recovered %+v", m)
		}
		s3.Close()
	}
	os.WriteFile(filepath.Join(s.dir, VolumeMetaFile), []byte("{garbage"), 0o644)
	if _, err := Open(s.dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage volume.meta: %v", err)
	}
}

func TestOpenRejectsBrokenChains(t *testing.T) {
	for _, c := range []struct {
		name    string
		breakIt func(dir string)
	}{
		{"missing parent meta", func(dir string) {
			os.Remove(filepath.Join(dir, "volume-snap-a.img.meta"))
			os.Remove(filepath.Join(dir, "volume-snap-a.img"))
		}},
		{"missing data of a kept snapshot", func(dir string) { os.Remove(filepath.Join(dir, "volume-snap-a.img")) }},
		{"loop", func(dir string) {
			m, _ := encodeJSON(&DiskMeta{Name: "volume-snap-a.img", Parent: "volume-head-001.img"})
			os.WriteFile(filepath.Join(dir, "volume-snap-a.img.meta"), m, 0o644)
		}},
		{"bad disk json", func(dir string) { os.WriteFile(filepath.Join(dir, "volume-snap-a.img.meta"), []byte("{"), 0o644) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, 4*ss, Options{})
			s.Snapshot("a", true, "", nil)
			s.Close()
			c.breakIt(s.dir)
			_, err := Open(s.dir, Options{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v", err)
			}
			if !strings.Contains(err.Error(), "volume-") {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	}
}

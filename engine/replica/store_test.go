package replica

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLayoutGolden(t *testing.T) {
	calls := 0
	clock := func() time.Time { // head-000 and snap1 at :09, snap2 at :10
		calls++
		if calls <= 2 {
			return fixedClock()
		}
		return fixedClock().Add(time.Second)
	}
	s := newStore(t, 16*ss, Options{Now: clock})
	mustWrite(t, s, 1, 0, ss)
	if err := s.Snapshot("snap1", true, "", nil); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, 2, ss, 2*ss)
	if err := s.Snapshot("snap2", false, "", map[string]string{"app": "db", "x<y": "1&2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDiskAsRemoved("snap2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"revision.counter", "volume-head-002.img", "volume-head-002.img.meta", "volume-snap-snap1.img",
		"volume-snap-snap1.img.meta", "volume-snap-snap2.img", "volume-snap-snap2.img.meta", "volume.meta"}
	if got := fileNames(t, s.dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("files %v\nwant %v", got, want)
	}
	for _, name := range []string{"volume.meta", "volume-head-002.img.meta", "volume-snap-snap1.img.meta", "volume-snap-snap2.img.meta"} {
		golden, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(filepath.Join(s.dir, name))
		if !bytes.Equal(got, golden) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, golden)
		}
	}
	rc, _ := os.ReadFile(filepath.Join(s.dir, RevisionCounterFile))
	if len(rc) != 4096 || string(bytes.TrimRight(rc, "\x00")) != "2" {
		t.Fatalf("revision.counter: %d bytes, %q", len(rc), bytes.TrimRight(rc, "\x00"))
	}
	for _, img := range []string{"volume-head-002.img", "volume-snap-snap1.img", "volume-snap-snap2.img"} {
		if fi, _ := os.Stat(filepath.Join(s.dir, img)); fi.Size() != 16*ss {
			t.Errorf("%s apparent size %d", img, fi.Size())
		}
	}
}

// TestOpenLonghornDirectory opens a directory laid out as Longhorn writes
// it (old volume.meta without Encrypted, a snapshot .meta whose Name is the
// former head, an off-chain branch left by a revert) and reads it.
func TestOpenLonghornDirectory(t *testing.T) {
	dir := t.TempDir()
	size := int64(8 * ss)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img := func(name string, blocks map[int64]byte) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.Truncate(size)
		for sec, v := range blocks {
			f.WriteAt(bytes.Repeat([]byte{v}, ss), sec*ss)
		}
	}
	img("volume-snap-a.img", map[int64]byte{0: 'a', 1: 'a', 2: 'a'})
	img("volume-snap-b.img", map[int64]byte{1: 'b'})
	img("volume-snap-c.img", map[int64]byte{2: 'c'}) // off chain: child of a
	img("volume-head-003.img", map[int64]byte{3: 'h'})
	write("volume-snap-a.img.meta", `{"Name":"volume-head-000.img","Parent":"","Removed":false,"UserCreated":true,"Created":"2022-02-22T07:36:48Z","Labels":null}`+"\n")
	write("volume-snap-b.img.meta", `{"Name":"volume-snap-b.img","Parent":"volume-snap-a.img","Removed":false,"UserCreated":false,"Created":"2022-02-22T07:40:00Z","Labels":{"k":"v"}}`+"\n")
	write("volume-snap-c.img.meta", `{"Name":"volume-head-001.img","Parent":"volume-snap-a.img","Removed":true,"UserCreated":true,"Created":"2022-02-22T07:38:00Z","Labels":null}`+"\n")
	write("volume-head-003.img.meta", `{"Name":"volume-head-003.img","Parent":"volume-snap-b.img","Removed":false,"UserCreated":false,"Created":"2022-02-22T07:40:00Z","Labels":null}`+"\n")
	write("volume.meta", `{"Size":32768,"Head":"volume-head-003.img","Dirty":true,"Rebuilding":false,"Error":"","Parent":"volume-snap-b.img","SectorSize":512,"BackingFilePath":""}`+"\n")
	rc := make([]byte, 4096)
	copy(rc, "17")
	write("revision.counter", string(rc))

	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := bytes.Join([][]byte{bytes.Repeat([]byte{'a'}, ss), bytes.Repeat([]byte{'b'}, ss),
		bytes.Repeat([]byte{'a'}, ss), bytes.Repeat([]byte{'h'}, ss), make([]byte, 4*ss)}, nil)
	expectData(t, s, 0, want)
	info := s.Info()
	if info.RevisionCounter != 17 || !reflect.DeepEqual(info.Chain, []string{"volume-head-003.img", "volume-snap-b.img", "volume-snap-a.img"}) {
		t.Fatalf("info %+v", info)
	}
	disks := s.ListDisks()
	if !disks["volume-snap-a.img"].Children["volume-snap-c.img"] || !disks["volume-snap-c.img"].Removed || disks["volume-snap-b.img"].Labels["k"] != "v" {
		t.Fatalf("disks %+v", disks)
	}
	if disks["volume-snap-a.img"].Size != 3*ss {
		t.Fatalf("size of a: %d", disks["volume-snap-a.img"].Size)
	}
	// Purge the removed off-chain leaf, as Longhorn would.
	if act, err := s.PurgeSnapshot(t.Context(), "c", nil); err != nil || act != ActionRemove {
		t.Fatalf("purge c: %q %v", act, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "volume-snap-c.img")); !os.IsNotExist(err) {
		t.Fatal("c still there")
	}
}

func TestCreateErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	for _, size := range []int64{0, -4096, 4095, 4097} {
		_, err := Create(dir, size, Options{})
		expectErr(t, err, ErrInvalidSize)
	}
	_, err := Create(dir, 4096, Options{SnapshotMaxCount: 251})
	expectErr(t, err, ErrInvalidOption)
	_, err = Create(dir, 4096, Options{MetaSectorSize: 1024})
	expectErr(t, err, ErrInvalidOption)
	s, err := Create(dir, 4096, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	before := dirState(t, dir)
	_, err = Create(dir, 8192, Options{})
	expectErr(t, err, ErrExists)
	if dirState(t, dir) != before {
		t.Fatal("failed Create changed the directory")
	}
	_, err = Open(t.TempDir(), Options{})
	if !errors.Is(err, ErrNotExist) {
		t.Fatalf("open empty dir: %v", err)
	}
	_, err = Open(filepath.Join(t.TempDir(), "missing"), Options{})
	if !errors.Is(err, ErrNotExist) {
		t.Fatalf("open missing dir: %v", err)
	}
	o, err := OpenOrCreate(dir, 8192, Options{})
	if err != nil || o.Size() != 4096 {
		t.Fatalf("OpenOrCreate existing: %v", err)
	}
	o.Close()
}

func TestReadWriteBasics(t *testing.T) {
	s := newStore(t, 64*ss, Options{DisableRevisionCounter: true})
	expectData(t, s, 0, make([]byte, 64*ss))
	a := mustWrite(t, s, 1, 4*ss, 8*ss)
	expectData(t, s, 4*ss, a)
	expectData(t, s, 3*ss, append(make([]byte, ss), a[:ss]...))
	// Unaligned reads go through a bounce buffer.
	got := make([]byte, 5000)
	if n, err := s.ReadAt(got, 4*ss+100); err != nil || n != 5000 || !bytes.Equal(got, a[100:5100]) {
		t.Fatalf("unaligned read: %d %v", n, err)
	}
	if n, err := s.ReadAt(nil, 64*ss); n != 0 || err != nil {
		t.Fatalf("empty read at end: %d %v", n, err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	expectData(t, s, 4*ss, a)
	expectData(t, s, 0, make([]byte, 4*ss))
}

func TestIOErrorsChangeNothing(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	mustWrite(t, s, 1, 0, ss)
	before := dirState(t, s.dir)
	cases := []struct {
		name string
		err  error
		do   func() error
	}{
		{"write unaligned past end", ErrOutOfRange, func() error { _, err := s.WriteAt(make([]byte, 10), 16*ss-5); return err }},
		{"write unaligned negative", ErrOutOfRange, func() error { _, err := s.WriteAt(make([]byte, 10), -5); return err }},
		{"write past end", ErrOutOfRange, func() error { _, err := s.WriteAt(make([]byte, 2*ss), 15*ss); return err }},
		{"write negative", ErrOutOfRange, func() error { _, err := s.WriteAt(make([]byte, ss), -ss); return err }},
		{"read past end", ErrOutOfRange, func() error { _, err := s.ReadAt(make([]byte, ss), 16*ss); return err }},
		{"read unaligned past end", ErrOutOfRange, func() error { _, err := s.ReadAt(make([]byte, 10), 16*ss-5); return err }},
		{"read negative", ErrOutOfRange, func() error { _, err := s.ReadAt(make([]byte, 10), -5); return err }},
		{"unmap unaligned past end", ErrOutOfRange, func() error { _, err := s.UnmapAt(100, 16*ss-50); return err }},
		{"unmap negative", ErrOutOfRange, func() error { _, err := s.UnmapAt(ss, -ss); return err }},
		{"unmap past end", ErrOutOfRange, func() error { _, err := s.UnmapAt(2*ss, 15*ss); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectErr(t, c.do(), c.err) })
	}
	if s.RevisionCounter() != 1 || dirState(t, s.dir) != before {
		t.Fatalf("bad requests changed the replica (counter %d)", s.RevisionCounter())
	}
	s.Close()
	_, err := s.WriteAt(make([]byte, ss), 0)
	expectErr(t, err, ErrClosed)
	_, err = s.ReadAt(make([]byte, ss), 0)
	expectErr(t, err, ErrClosed)
	expectErr(t, s.Flush(), ErrClosed)
	expectErr(t, s.Snapshot("x", true, "", nil), ErrClosed)
	if s.Close() != nil {
		t.Fatal("second Close")
	}
}

func TestSnapshotAndInfo(t *testing.T) {
	s := newStore(t, 32*ss, Options{})
	a := mustWrite(t, s, 1, 0, 4*ss)
	if err := s.Snapshot("s1", true, "2020-01-01T00:00:00Z", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	b := mustWrite(t, s, 2, 2*ss, 4*ss)
	expectData(t, s, 0, append(a[:2*ss:2*ss], b...))
	info := s.Info()
	if info.Head != "volume-head-001.img" || info.Parent != "volume-snap-s1.img" || info.Size != 32*ss ||
		!info.Dirty || info.SectorSize != 512 || info.RevisionCounter != 2 || info.SnapshotCount != 1 ||
		!reflect.DeepEqual(info.Chain, []string{"volume-head-001.img", "volume-snap-s1.img"}) {
		t.Fatalf("info %+v", info)
	}
	d := s.ListDisks()["volume-snap-s1.img"]
	if d.Created != "2020-01-01T00:00:00Z" || !d.UserCreated || d.Labels["k"] != "v" || d.Size != 4*ss ||
		!d.Children["volume-head-001.img"] {
		t.Fatalf("disk %+v", d)
	}
	js, _ := json.Marshal(d)
	if !strings.Contains(string(js), `"size":"16384"`) || !strings.Contains(string(js), `"usercreated":true`) {
		t.Fatalf("DiskInfo JSON %s", js)
	}
	before := dirState(t, s.dir)
	expectErr(t, s.Snapshot("s1", true, "", nil), ErrSnapshotExists)
	expectErr(t, s.Snapshot("", true, "", nil), ErrInvalidName)
	expectErr(t, s.Snapshot("a/b", true, "", nil), ErrInvalidName)
	expectErr(t, s.Snapshot("-x", true, "", nil), ErrInvalidName)
	expectErr(t, s.Snapshot(strings.Repeat("x", 201), true, "", nil), ErrInvalidName)
	if dirState(t, s.dir) != before {
		t.Fatal("failed snapshots changed the directory")
	}
	s = reopen(t, s)
	expectData(t, s, 0, append(a[:2*ss:2*ss], b...))
	if count, size := s.SnapshotUsage(); count != 1 || size != 4*ss {
		t.Fatalf("usage %d %d", count, size)
	}
}

func TestSnapshotLimits(t *testing.T) {
	s := newStore(t, 16*ss, Options{SnapshotMaxCount: 2})
	for i, n := range []string{"a", "b"} {
		mustWrite(t, s, uint64(i), 0, ss)
		if err := s.Snapshot(n, true, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	before := dirState(t, s.dir)
	expectErr(t, s.Snapshot("c", true, "", nil), ErrSnapshotCountLimit)
	expectErr(t, s.Expand(32*ss), ErrSnapshotCountLimit)
	if dirState(t, s.dir) != before {
		t.Fatal("limit failure changed the directory")
	}
	// Removed snapshots do not count.
	if err := s.MarkDiskAsRemoved("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Snapshot("c", true, "", nil); err != nil {
		t.Fatal(err)
	}
	expectErr(t, s.SetSnapshotMaxCount(300), ErrInvalidOption)

	z := newStore(t, 16*ss, Options{SnapshotMaxSize: 3 * ss})
	mustWrite(t, z, 1, 0, 2*ss)
	if err := z.Snapshot("a", true, "", nil); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, z, 2, 0, 2*ss)
	expectErr(t, z.Snapshot("b", true, "", nil), ErrSnapshotSizeLimit)
	if err := z.SetSnapshotMaxSize(0); err != nil {
		t.Fatal(err)
	}
	if err := z.Snapshot("b", true, "", nil); err != nil {
		t.Fatal(err)
	}
}

// TestChainLimit builds a Longhorn-style directory with a live chain of
// MaxChainLength disks by hand (fast: no fsync per snapshot), then checks
// that one more snapshot is refused and a longer chain does not open.
func TestChainLimit(t *testing.T) {
	dir := t.TempDir()
	size := int64(4 * ss)
	parent := ""
	for i := 0; i < MaxChainLength-1; i++ {
		name := SnapshotFileName("s" + strconv.Itoa(i))
		writeDisk(t, dir, name, parent, size, true)
		parent = name
	}
	writeDisk(t, dir, HeadFileName(MaxChainLength-1), parent, size, false)
	vm, _ := encodeJSON(&VolumeMeta{Size: size, Head: HeadFileName(MaxChainLength - 1), SectorSize: 512})
	os.WriteFile(filepath.Join(dir, VolumeMetaFile), vm, 0o644)
	s, err := Open(dir, Options{DisableRevisionCounter: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Chain()) != MaxChainLength {
		t.Fatalf("chain %d", len(s.Chain()))
	}
	expectErr(t, s.Snapshot("one-too-many", false, "", nil), ErrChainTooLong)
	mustWrite(t, s, 1, 0, ss)
	s.Close()
	// One disk more than the limit: Open refuses the directory.
	head := HeadFileName(MaxChainLength)
	writeDisk(t, dir, head, HeadFileName(MaxChainLength-1), size, false)
	os.Rename(filepath.Join(dir, HeadFileName(MaxChainLength-1)), filepath.Join(dir, SnapshotFileName("last")))
	writeDisk(t, dir, SnapshotFileName("last"), parent, size, false)
	os.Remove(filepath.Join(dir, MetaFileName(HeadFileName(MaxChainLength-1))))
	writeDisk(t, dir, head, SnapshotFileName("last"), size, false)
	vm, _ = encodeJSON(&VolumeMeta{Size: size, Head: head, SectorSize: 512})
	os.WriteFile(filepath.Join(dir, VolumeMetaFile), vm, 0o644)
	if _, err := Open(dir, Options{DisableRevisionCounter: true}); !errors.Is(err, ErrChainTooLong) {
		t.Fatalf("open of a %d-disk chain: %v", MaxChainLength+1, err)
	}
}

// writeDisk writes an empty data file and its .meta as Longhorn would.
func writeDisk(t testing.TB, dir, name, parent string, size int64, removed bool) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(size)
	f.Close()
	m, _ := encodeJSON(&DiskMeta{Name: name, Parent: parent, Removed: removed, Created: "2024-01-01T00:00:00Z"})
	if err := os.WriteFile(filepath.Join(dir, MetaFileName(name)), m, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestExpand(t *testing.T) {
	s := newStore(t, 8*ss, Options{VolumeName: "vol1"})
	a := mustWrite(t, s, 1, 4*ss, 4*ss)
	before := dirState(t, s.dir)
	expectErr(t, s.Expand(4*ss), ErrShrink)
	expectErr(t, s.Expand(8*ss+512), ErrInvalidSize)
	expectErr(t, s.Expand(0), ErrInvalidSize)
	if dirState(t, s.dir) != before {
		t.Fatal("failed expand changed the directory")
	}
	if err := s.Expand(8 * ss); err != nil || len(s.Chain()) != 1 {
		t.Fatalf("same-size expand: %v %v", err, s.Chain())
	}
	if err := s.Expand(16 * ss); err != nil {
		t.Fatal(err)
	}
	snap := "volume-snap-expand-65536-vol1.img"
	d := s.ListDisks()[snap]
	if s.Size() != 16*ss || d.Labels[ExpansionLabel] != "65536" || d.UserCreated {
		t.Fatalf("after expand: size %d disk %+v", s.Size(), d)
	}
	expectData(t, s, 4*ss, append(a, make([]byte, 8*ss)...))
	b := mustWrite(t, s, 2, 14*ss, 2*ss)
	s = reopen(t, s)
	expectData(t, s, 4*ss, a)
	expectData(t, s, 14*ss, b)
	expectData(t, s, 8*ss, make([]byte, 6*ss))
	if fi, _ := os.Stat(filepath.Join(s.dir, snap)); fi.Size() != 8*ss {
		t.Fatalf("expansion snapshot keeps the old size: %d", fi.Size())
	}
}

func TestRevert(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	a := mustWrite(t, s, 1, 0, 4*ss)
	if err := s.Snapshot("s1", true, "", nil); err != nil {
		t.Fatal(err)
	}
	b := mustWrite(t, s, 2, 0, 2*ss)
	if err := s.Snapshot("s2", true, "", nil); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, 3, 0, 8*ss)
	if err := s.MarkDiskAsRemoved("s2"); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, s.dir)
	expectErr(t, s.Revert("nope", ""), ErrNotFound)
	expectErr(t, s.Revert("s2", ""), ErrRemoved)
	expectErr(t, s.Revert(s.Info().Head, ""), ErrIsHead)
	if dirState(t, s.dir) != before {
		t.Fatal("failed revert changed the directory")
	}
	if err := s.Revert("volume-snap-s1.img", "2021-01-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	expectData(t, s, 0, append(a, make([]byte, 12*ss)...))
	info := s.Info()
	if info.Head != "volume-head-003.img" || info.Parent != "volume-snap-s1.img" {
		t.Fatalf("info %+v", info)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "volume-head-002.img")); !os.IsNotExist(err) {
		t.Fatal("old head not deleted")
	}
	if got := s.ListDisks()["volume-snap-s1.img"].Children; len(got) != 2 {
		t.Fatalf("s1 children %v", got)
	}
	// The branch off the chain is intact; revert back to it.
	if err := s.MarkDiskAsRemoved("nonexistent"); err != nil {
		t.Fatal(err)
	}
	expectErr(t, s.MarkDiskAsRemoved(s.Info().Head), ErrIsHead)
	s = reopen(t, s)
	expectData(t, s, 0, append(a, make([]byte, 12*ss)...))
	_ = b
}

func TestMarkRemovedAndRemoveDiffDisk(t *testing.T) {
	s := newStore(t, 16*ss, Options{})
	a := mustWrite(t, s, 1, 0, ss)
	s.Snapshot("s1", true, "", nil)
	b := mustWrite(t, s, 2, ss, ss)
	s.Snapshot("s2", true, "", nil)
	if err := s.MarkDiskAsRemoved("s1"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDiskAsRemoved("s1"); err != nil { // idempotent
		t.Fatal(err)
	}
	if !s.ListDisks()["volume-snap-s1.img"].Removed || s.Info().SnapshotCount != 1 {
		t.Fatal("s1 not removed")
	}
	expectErr(t, s.RemoveDiffDisk(s.Info().Head, false), ErrIsHead)
	expectErr(t, s.RemoveDiffDisk("zz", false), ErrNotFound)
	// Rebuild drops a disk whatever it holds: s2's data disappears from the view.
	if err := s.RemoveDiffDisk("s2", false); err != nil {
		t.Fatal(err)
	}
	expectData(t, s, 0, append(a, make([]byte, ss)...))
	if p := s.ListDisks()[s.Info().Head].Parent; p != "volume-snap-s1.img" || s.Info().Parent != p {
		t.Fatalf("head parent %q", p)
	}
	_ = b
}

func TestRevisionCounter(t *testing.T) {
	s := newStore(t, 8*ss, Options{})
	for i := 0; i < 5; i++ {
		mustWrite(t, s, uint64(i), 0, ss)
	}
	if _, err := s.UnmapAt(ss, 0); err != nil {
		t.Fatal(err)
	}
	if s.RevisionCounter() != 6 {
		t.Fatalf("counter %d", s.RevisionCounter())
	}
	if err := s.SetRevisionCounter(100); err != nil {
		t.Fatal(err)
	}
	expectErr(t, s.SetRevisionCounter(-1), ErrInvalidOption)
	mustWrite(t, s, 9, 0, ss)
	s = reopen(t, s)
	if s.RevisionCounter() != 101 {
		t.Fatalf("counter after reopen %d", s.RevisionCounter())
	}
	d := newStore(t, 8*ss, Options{DisableRevisionCounter: true})
	mustWrite(t, d, 1, 0, ss)
	if d.RevisionCounter() != 0 || d.SetRevisionCounter(5) != nil {
		t.Fatal("disabled counter")
	}
	if _, err := os.Stat(filepath.Join(d.dir, RevisionCounterFile)); !os.IsNotExist(err) {
		t.Fatal("disabled counter created its file")
	}
	s.Close()
	os.WriteFile(filepath.Join(s.dir, RevisionCounterFile), nil, 0o600) // created, never written
	if e, err := Open(s.dir, Options{}); err != nil || e.RevisionCounter() != 0 {
		t.Fatalf("empty counter file: %v", err)
	} else {
		e.Close()
	}
	if err := os.WriteFile(filepath.Join(s.dir, RevisionCounterFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(s.dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt counter: %v", err)
	}
}

func TestRebuildSupport(t *testing.T) {
	s := newStore(t, 8*ss, Options{})
	mustWrite(t, s, 1, 0, 2*ss)
	s.Snapshot("s1", true, "", nil)
	s.Snapshot("s2", true, "", nil)
	files := s.RebuildFiles()
	if len(files) != 2 || files[0].Name != "volume-snap-s1.img" || files[0].MetaName != "volume-snap-s1.img.meta" ||
		files[0].Allocated != 2*ss || files[1].Name != "volume-snap-s2.img" {
		t.Fatalf("rebuild files %+v", files)
	}
	for _, ok := range []string{"volume-snap-s1.img", "volume-snap-x.img.meta", "volume-head-001.img.meta", "volume-snap-a.img.checksum"} {
		if _, err := s.FilePath(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"../x", "volume.meta", "volume-snap-.img", "volume-snap-a/b.img", "volume-head-x.img", "revision.counter", "volume-head-001.img.checksum"} {
		_, err := s.FilePath(bad)
		expectErr(t, err, ErrInvalidName)
	}
	// A receiver replaces s1's data file under the open store, then Reload.
	p, _ := s.FilePath("volume-snap-s1.img")
	os.Remove(p)
	os.WriteFile(p, bytes.Repeat([]byte{7}, 8*ss), 0o644)
	if err := s.SetRebuilding(true); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{7}, 8*ss)
	expectData(t, s, 0, want)
	if !s.Info().Rebuilding {
		t.Fatal("rebuilding flag lost on reload")
	}
	m, err := ReadVolumeMeta(s.dir)
	if err != nil || !m.Rebuilding || !m.Dirty {
		t.Fatalf("volume.meta %+v %v", m, err)
	}
}

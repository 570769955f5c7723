package replica

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

const ss = SectorSize

var fixedClock = func() time.Time { return time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC) }

func newStore(t testing.TB, size int64, opts Options) *Store {
	t.Helper()
	if opts.Now == nil {
		opts.Now = fixedClock
	}
	s, err := Create(filepath.Join(t.TempDir(), "replica"), size, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n, err := Open(s.dir, s.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// pattern returns n bytes unique to (tag, offset) so stale data is detected.
func pattern(tag uint64, off int64, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := (tag*0x9E3779B97F4A7C15 ^ uint64(off+int64(i))*0xBF58476D1CE4E5B9) | 1
		binary.LittleEndian.PutUint64(b[i:], v)
	}
	return b
}

func mustWrite(t testing.TB, s *Store, tag uint64, off int64, n int) []byte {
	t.Helper()
	b := pattern(tag, off, n)
	if got, err := s.WriteAt(b, off); err != nil || got != n {
		t.Fatalf("write %d@%d: %d %v", n, off, got, err)
	}
	return b
}

func mustRead(t testing.TB, s *Store, off int64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if got, err := s.ReadAt(b, off); err != nil || got != n {
		t.Fatalf("read %d@%d: %d %v", n, off, got, err)
	}
	return b
}

func expectData(t testing.TB, s *Store, off int64, want []byte) {
	t.Helper()
	if got := mustRead(t, s, off, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("data at %d (len %d) differs", off, len(want))
	}
}

func expectErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	var e *Error
	if want != nil && !errors.As(err, &e) {
		t.Fatalf("error %v is not a *replica.Error", err)
	}
}

// dirState fingerprints every file of a directory (name, size, allocation,
// content) so a test can assert that a failed request changed nothing.
func dirState(t testing.TB, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var out bytes.Buffer
	for _, n := range names {
		p := filepath.Join(dir, n)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		out.WriteString(n)
		out.WriteString(" ")
		out.Write(sum[:8])
		out.WriteString(" ")
		out.WriteString(time.Duration(allocated(p)).String())
		out.WriteString("\n")
	}
	return out.String()
}

func fileNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// fileView computes the content a disk presents (the disk over its parents)
// straight from the files and their extents, independently of the store's
// index: the oracle for snapshot views.
func fileView(t testing.TB, dir, disk string, size int64) []byte {
	t.Helper()
	out := make([]byte, size)
	have := make([]bool, size/ss)
	for cur := disk; cur != ""; {
		f, err := os.Open(filepath.Join(dir, cur))
		if err != nil {
			t.Fatal(err)
		}
		exts, err := sparse.DataExtents(f, 0, size)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range exts {
			for sec := e.Offset / ss; sec < (e.End()+ss-1)/ss; sec++ {
				if !have[sec] {
					have[sec] = true
					if _, err := f.ReadAt(out[sec*ss:(sec+1)*ss], sec*ss); err != nil && err != io.EOF {
						t.Fatal(err)
					}
				}
			}
		}
		f.Close()
		var m DiskMeta
		if err := readJSON(filepath.Join(dir, MetaFileName(cur)), &m); err != nil {
			t.Fatal(err)
		}
		cur = m.Parent
	}
	return out
}

// views returns fileView of every disk of s.
func views(t testing.TB, s *Store) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	size := s.Size()
	for name := range s.ListDisks() {
		out[name] = fileView(t, s.dir, name, size)
	}
	return out
}

func contextWithCancel(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

// diskFiles is every disk's own data and parent, read from the files once:
// a cheaper form of fileView for checking many disks.
type diskFiles map[string]struct {
	parent string
	data   map[int64][]byte
}

func ownData(t testing.TB, dir string, size int64) diskFiles {
	t.Helper()
	out := diskFiles{}
	for _, n := range fileNames(t, dir) {
		if n == VolumeMetaFile || !strings.HasSuffix(n, metaSuffix) {
			continue
		}
		disk := strings.TrimSuffix(n, metaSuffix)
		var m DiskMeta
		if err := readJSON(filepath.Join(dir, n), &m); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, disk))
		if err != nil {
			t.Fatal(err)
		}
		exts, err := sparse.DataExtents(f, 0, size)
		if err != nil {
			t.Fatal(err)
		}
		data := map[int64][]byte{}
		for _, e := range exts {
			for sec := e.Offset / ss; sec < (e.End()+ss-1)/ss; sec++ {
				b := make([]byte, ss)
				if _, err := f.ReadAt(b, sec*ss); err != nil && err != io.EOF {
					t.Fatal(err)
				}
				data[sec] = b
			}
		}
		f.Close()
		out[disk] = struct {
			parent string
			data   map[int64][]byte
		}{m.Parent, data}
	}
	return out
}

func (d diskFiles) view(disk string, sec int64) []byte {
	for cur := disk; cur != ""; cur = d[cur].parent {
		if b, ok := d[cur].data[sec]; ok {
			return b
		}
	}
	return make([]byte, ss)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

package replica

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
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

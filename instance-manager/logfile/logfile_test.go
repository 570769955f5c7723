package logfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readAll(t *testing.T, path string, maxFiles int) []string {
	t.Helper()
	var lines []string
	if err := ReadLines(context.Background(), path, maxFiles, func(l string) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestRotationKeepsSizeCapAndOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.log")
	w, err := Open(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		fmt.Fprintf(w, "line %02d\n", i) // 8 bytes each
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := Files(path, 2)
	if len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil || st.Size() > 100 {
			t.Fatalf("%s: %v, size %d > 100", f, err, st.Size())
		}
	}
	if _, err := os.Stat(path + ".3"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("more than 2 rotated files kept: %v", err)
	}
	lines := readAll(t, path, 2)
	// 12 lines per file, 3 files: the newest 36 lines minus the current file's gap.
	if lines[len(lines)-1] != "line 49" {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
	for i := 1; i < len(lines); i++ {
		if lines[i] <= lines[i-1] {
			t.Fatalf("out of order at %d: %q after %q", i, lines[i], lines[i-1])
		}
	}
	if len(lines) < 25 {
		t.Fatalf("kept only %d lines", len(lines))
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

func TestReopenAppendsAndNoRotatedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.log")
	w, _ := Open(path, 10, 0)
	fmt.Fprint(w, "aaaa\n")
	w.Close()
	w, _ = Open(path, 10, 0)
	fmt.Fprint(w, "bbbb\n")
	fmt.Fprint(w, "cccc\n") // would exceed 10: truncates
	w.Close()
	if got := strings.Join(readAll(t, path, 0), ","); got != "cccc" {
		t.Fatalf("lines %q", got)
	}
}

func TestLongLinesSplitAndMissingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.log")
	if got := readAll(t, path, 2); len(got) != 0 {
		t.Fatalf("missing log read %q", got)
	}
	long := strings.Repeat("x", MaxLineLength+10)
	if err := os.WriteFile(path, []byte(long+"\n\nend"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, path, 2)
	if len(got) != 4 || len(got[0]) != MaxLineLength || len(got[1]) != 10 || got[2] != "" || got[3] != "end" {
		t.Fatalf("got %d lines", len(got))
	}
	stop := errors.New("stop")
	if err := ReadLines(context.Background(), path, 2, func(string) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("callback error: %v", err)
	}
	if _, err := Open(path, 0, 1); err == nil {
		t.Fatal("max size 0 accepted")
	}
}

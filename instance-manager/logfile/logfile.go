// Package logfile writes a process's output to a size-capped file with
// rotation (name.log, name.log.1 ... name.log.N, .1 the newest rotated) and
// reads it back line by line, oldest first.
package logfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
)

// Defaults for a process log: 10 MiB per file, 2 rotated files kept.
const (
	DefaultMaxSize  = 10 << 20
	DefaultMaxFiles = 2
	// MaxLineLength bounds one line handed to ReadLines' callback; longer lines
	// are split into pieces of this size.
	MaxLineLength = 64 << 10
)

// Writer is an io.Writer appending to path and rotating it before a write
// would take it over MaxSize bytes. Safe for concurrent use. On disk a log
// takes at most (MaxFiles+1) * (MaxSize + one write) bytes.
type Writer struct {
	path     string
	maxSize  int64
	maxFiles int

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (appending) or creates the log at path. maxSize must be > 0 and
// maxFiles >= 0 (0 keeps no rotated file: the log is truncated when full).
func Open(path string, maxSize int64, maxFiles int) (*Writer, error) {
	if maxSize <= 0 || maxFiles < 0 {
		return nil, fmt.Errorf("log %s: max size %d must be > 0 and max files %d >= 0", path, maxSize, maxFiles)
	}
	w := &Writer{path: path, maxSize: maxSize, maxFiles: maxFiles}
	if err := w.openNoLock(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) openNoLock() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	w.f, w.size = f, st.Size()
	return nil
}

// Write appends p, rotating first when the file would grow past MaxSize.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, fs.ErrClosed
	}
	if w.size > 0 && w.size+int64(len(p)) > w.maxSize {
		if err := w.rotateLocked(); err != nil {
			return 0, err
		}
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	return n, err
}

// rotateLocked shifts path.i to path.i+1 (dropping the oldest) and path to path.1.
func (w *Writer) rotateLocked() error {
	if err := w.f.Close(); err != nil {
		return err
	}
	w.f = nil
	if w.maxFiles == 0 {
		if err := os.Remove(w.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return w.openNoLock()
	}
	for i := w.maxFiles - 1; i >= 1; i-- {
		err := os.Rename(rotated(w.path, i), rotated(w.path, i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(w.path, rotated(w.path, 1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return w.openNoLock()
}

// Close closes the file; later writes fail with fs.ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func rotated(path string, i int) string { return path + "." + strconv.Itoa(i) }

// Files returns the files of the log at path, oldest first: path.maxFiles ...
// path.1, path. Files that do not exist are left out.
func Files(path string, maxFiles int) []string {
	var out []string
	for i := maxFiles; i >= 1; i-- {
		if _, err := os.Stat(rotated(path, i)); err == nil {
			out = append(out, rotated(path, i))
		}
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	}
	return out
}

// ReadLines calls fn for every line of the log (without the newline), oldest
// file first, until the end, ctx is done, or fn returns an error, which is
// returned. Lines longer than MaxLineLength are split. A missing log reads
// as empty. Rotation during the read may skip or repeat some lines.
func ReadLines(ctx context.Context, path string, maxFiles int, fn func(line string) error) error {
	for _, name := range Files(path, maxFiles) {
		if err := readFile(ctx, name, fn); err != nil {
			return err
		}
	}
	return nil
}

func readFile(ctx context.Context, name string, fn func(string) error) error {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, MaxLineLength)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			if ferr := fn(string(line)); ferr != nil {
				return ferr
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

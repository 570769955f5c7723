// Package filebackend is a frontend.Backend over a plain (sparse) file, the
// way tgt's rdwr backing store serves a LUN: pread/pwrite, fdatasync on
// Flush, hole punching on UnmapAt. The iSCSI tests use it to run the target
// without an engine, and the benchmark to compare with tgtd on the same file.
package filebackend

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// File is a Backend backed by one file of a fixed size.
type File struct {
	f    *os.File
	size int64
}

// Open opens (creating when needed) path and sizes it to size bytes.
func Open(path string, size int64) (*File, error) {
	if size <= 0 {
		return nil, fmt.Errorf("filebackend: size %d must be positive", size)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, err
	}
	return &File{f: f, size: size}, nil
}

// Close closes the file.
func (b *File) Close() error { return b.f.Close() }

func (b *File) check(off int64, n int) error {
	if off < 0 || off+int64(n) > b.size {
		return frontend.ErrOutOfRange
	}
	return nil
}

// ReadAt reads len(p) bytes at off.
func (b *File) ReadAt(p []byte, off int64) (int, error) {
	if err := b.check(off, len(p)); err != nil {
		return 0, err
	}
	n, err := b.f.ReadAt(p, off)
	if errors.Is(err, io.EOF) && n == len(p) {
		err = nil
	}
	return n, err
}

// WriteAt writes p at off.
func (b *File) WriteAt(p []byte, off int64) (int, error) {
	if err := b.check(off, len(p)); err != nil {
		return 0, err
	}
	return b.f.WriteAt(p, off)
}

// UnmapAt punches a hole of length bytes at off; the range reads back as zeroes.
func (b *File) UnmapAt(length uint32, off int64) (int, error) {
	if err := b.check(off, int(length)); err != nil {
		return 0, err
	}
	if length == 0 {
		return 0, nil
	}
	err := unix.Fallocate(int(b.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, int64(length))
	if err != nil {
		return 0, err
	}
	return int(length), nil
}

// Flush makes written data durable (fdatasync).
func (b *File) Flush() error { return unix.Fdatasync(int(b.f.Fd())) }

// Size is the file size in bytes.
func (b *File) Size() int64 { return b.size }

// Allocated reports whether off lies in data or in a hole, and how far the
// same state extends (at most max bytes), using SEEK_DATA/SEEK_HOLE.
func (b *File) Allocated(off, max int64) (bool, int64, error) {
	fd := int(b.f.Fd())
	data, err := unix.Seek(fd, off, unix.SEEK_DATA)
	if err != nil {
		if errors.Is(err, unix.ENXIO) { // no data after off
			return false, min(max, b.size-off), nil
		}
		return true, max, nil
	}
	if data > off {
		return false, min(max, data-off), nil
	}
	hole, err := unix.Seek(fd, off, unix.SEEK_HOLE)
	if err != nil {
		return true, max, nil
	}
	return true, min(max, hole-off), nil
}

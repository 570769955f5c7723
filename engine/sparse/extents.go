// Package sparse holds the sparse-file utilities the replica store and the
// rebuild path share: iteration over the data extents of a file
// (lseek SEEK_DATA/SEEK_HOLE, FIEMAP optional), hole punching
// (fallocate PUNCH_HOLE|KEEP_SIZE), a sparse copy that moves only data
// extents, the fold (child into parent) and prune helpers of snapshot purge
// (Longhorn's sparse-tools FoldFile and PruneFile), and a checksum of a
// byte range for rebuild's skip-if-equal.
//
// Offsets and lengths are bytes. Holes read as zeroes everywhere. The
// functions use only positional I/O (pread/pwrite, copy_file_range with
// explicit offsets), so a file may be shared with concurrent readers and
// writers that also use positional I/O.
package sparse

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Extent is a byte range [Offset, Offset+Length) of a file.
type Extent struct {
	Offset int64
	Length int64
}

// End returns the first byte after the extent.
func (e Extent) End() int64 { return e.Offset + e.Length }

// ErrInvalidRange is returned for a negative offset or length.
var ErrInvalidRange = errors.New("sparse: invalid range")

// rawFd returns the descriptor of f for syscalls. The caller keeps f alive.
func rawFd(f *os.File) int { return int(f.Fd()) }

// WalkData calls fn, in increasing offset order, for every data extent of f
// that intersects [start, end), clipped to that range. Data is what
// lseek(SEEK_DATA) reports: written blocks, including blocks that hold zeroes.
// On a filesystem without SEEK_DATA support the kernel reports the whole file
// as data, which is still correct (only less sparse). Bytes at or beyond the
// end of the file are never data. An error from fn stops the walk and is
// returned unchanged.
func WalkData(f *os.File, start, end int64, fn func(Extent) error) error {
	if start < 0 || end < start {
		return fmt.Errorf("%w: start %d end %d", ErrInvalidRange, start, end)
	}
	fd := rawFd(f)
	off := start
	for off < end {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // no data at or after off
		}
		if err != nil {
			return &os.PathError{Op: "lseek SEEK_DATA", Path: f.Name(), Err: err}
		}
		if data >= end {
			return nil
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return &os.PathError{Op: "lseek SEEK_HOLE", Path: f.Name(), Err: err}
		}
		if err := fn(Extent{Offset: data, Length: min(hole, end) - data}); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

// DataExtents returns the data extents of f within [start, end) (see WalkData).
func DataExtents(f *os.File, start, end int64) ([]Extent, error) {
	var out []Extent
	err := WalkData(f, start, end, func(e Extent) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// DataBytes returns how many bytes of [start, end) of f are data.
func DataBytes(f *os.File, start, end int64) (int64, error) {
	var n int64
	err := WalkData(f, start, end, func(e Extent) error {
		n += e.Length
		return nil
	})
	return n, err
}

// AllocatedBytes returns the space the file occupies on disk
// (st_blocks * 512), what `du` reports and what Longhorn shows as a
// snapshot's size.
func AllocatedBytes(f *os.File) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(rawFd(f), &st); err != nil {
		return 0, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st.Blocks * 512, nil
}

// AllocatedBytesPath is AllocatedBytes for a path.
func AllocatedBytesPath(path string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return st.Blocks * 512, nil
}

// ErrPunchUnsupported is returned by PunchHole when the filesystem cannot
// punch holes (fallocate returns EOPNOTSUPP).
var ErrPunchUnsupported = errors.New("sparse: filesystem does not support punching holes")

// PunchHole deallocates [off, off+length) of f without changing its size
// (fallocate FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE); the range then reads
// as zeroes. Parts beyond the end of the file are ignored. Errors:
// ErrInvalidRange, ErrPunchUnsupported, or the fallocate error.
func PunchHole(f *os.File, off, length int64) error {
	if off < 0 || length < 0 {
		return fmt.Errorf("%w: offset %d length %d", ErrInvalidRange, off, length)
	}
	if length == 0 {
		return nil
	}
	for {
		err := unix.Fallocate(rawFd(f), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, length)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP):
			return fmt.Errorf("%w: %s", ErrPunchUnsupported, f.Name())
		default:
			return &os.PathError{Op: "fallocate PUNCH_HOLE", Path: f.Name(), Err: err}
		}
	}
}

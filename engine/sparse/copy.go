package sparse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Progress reports work done so far: done and total are bytes of data
// extents processed and to process. It is called from the working
// goroutine after each chunk and once at the end with done == total.
type Progress func(done, total int64)

// copyChunk bounds one copy_file_range/pread call so cancellation and
// progress stay responsive.
const copyChunk = 4 << 20

// CopyRange copies [off, off+length) of src to the same offsets of dst,
// using copy_file_range(2) and falling back to pread/pwrite when the kernel
// cannot copy between the two files. Bytes of src beyond its end are not
// copied (they read as zeroes).
func CopyRange(dst, src *os.File, off, length int64) error {
	if off < 0 || length < 0 {
		return fmt.Errorf("%w: offset %d length %d", ErrInvalidRange, off, length)
	}
	end := off + length
	for off < end {
		n, err := copyFileRange(dst, src, off, min(end-off, copyChunk))
		if errors.Is(err, errNoCopyFileRange) {
			return copyRangeBuffered(dst, src, off, end-off)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // end of src
		}
		off += n
	}
	return nil
}

var errNoCopyFileRange = errors.New("copy_file_range unavailable")

func copyFileRange(dst, src *os.File, off, n int64) (int64, error) {
	roff, woff := off, off
	for {
		c, err := unix.CopyFileRange(rawFd(src), &roff, rawFd(dst), &woff, int(n), 0)
		switch {
		case err == nil:
			return int64(c), nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS),
			errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EBADF):
			return 0, errNoCopyFileRange
		default:
			return 0, &os.PathError{Op: "copy_file_range", Path: src.Name(), Err: err}
		}
	}
}

func copyRangeBuffered(dst, src *os.File, off, length int64) error {
	buf := make([]byte, min(length, copyChunk))
	for length > 0 {
		n, err := src.ReadAt(buf[:min(int64(len(buf)), length)], off)
		if n > 0 {
			if _, werr := dst.WriteAt(buf[:n], off); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		off += int64(n)
		length -= int64(n)
	}
	return nil
}

// copyExtents copies every data extent of src in [0, size) into dst at the
// same offsets, checking ctx between chunks and reporting progress.
func copyExtents(ctx context.Context, dst, src *os.File, size int64, progress Progress) error {
	exts, err := DataExtents(src, 0, size)
	if err != nil {
		return err
	}
	var total, done int64
	for _, e := range exts {
		total += e.Length
	}
	for _, e := range exts {
		for off := e.Offset; off < e.End(); off += copyChunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(copyChunk, e.End()-off)
			if err := CopyRange(dst, src, off, n); err != nil {
				return err
			}
			done += n
			report(progress, done, total)
		}
	}
	report(progress, total, total)
	return nil
}

func report(p Progress, done, total int64) {
	if p != nil {
		p(done, total)
	}
}

// CopyFile makes dstPath a sparse copy of srcPath: same size, same content,
// with only the data extents of src allocated. dstPath is created or
// truncated (mode 0600) and fsynced before CopyFile returns.
func CopyFile(ctx context.Context, dstPath, srcPath string, progress Progress) (err error) {
	src, err := os.Open(srcPath)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	dst, err := os.OpenFile(dstPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}()
	if err := dst.Truncate(st.Size()); err != nil {
		return err
	}
	if err := copyExtents(ctx, dst, src, st.Size(), progress); err != nil {
		return err
	}
	return dst.Sync()
}

// FoldFile folds child into parent (Longhorn's sparse-tools FoldFile used by
// snapshot purge's coalesce): every data extent of child is copied over the
// same range of parent, so parent then holds the view "child on top of
// parent". Holes of child leave parent untouched. When child is larger
// (the volume was expanded between them) parent is extended to child's size.
// The parent file is fdatasynced before FoldFile returns. Cancelled by ctx
// between 4 MiB chunks; parent is then partly folded.
func FoldFile(ctx context.Context, child, parent *os.File, progress Progress) error {
	cst, err := child.Stat()
	if err != nil {
		return err
	}
	pst, err := parent.Stat()
	if err != nil {
		return err
	}
	if cst.Size() > pst.Size() {
		if err := parent.Truncate(cst.Size()); err != nil {
			return err
		}
	}
	if err := copyExtents(ctx, parent, child, cst.Size(), progress); err != nil {
		return err
	}
	return unix.Fdatasync(rawFd(parent))
}

// PruneFile punches out of parent every range where child has data
// (Longhorn's sparse-tools PruneFile, snapshot purge's prune): those ranges
// of parent are hidden by child and never read again. As Longhorn does,
// parent is first extended to child's size when child is larger, and a parent
// larger than child is an error. ErrPunchUnsupported when the filesystem
// cannot punch holes.
func PruneFile(ctx context.Context, parent, child *os.File, progress Progress) error {
	cst, err := child.Stat()
	if err != nil {
		return err
	}
	pst, err := parent.Stat()
	if err != nil {
		return err
	}
	if pst.Size() > cst.Size() {
		return fmt.Errorf("sparse: prune: parent %s (%d bytes) larger than child %s (%d bytes)",
			parent.Name(), pst.Size(), child.Name(), cst.Size())
	}
	if cst.Size() > pst.Size() {
		if err := parent.Truncate(cst.Size()); err != nil {
			return err
		}
	}
	exts, err := DataExtents(child, 0, cst.Size())
	if err != nil {
		return err
	}
	var total, done int64
	for _, e := range exts {
		total += e.Length
	}
	for _, e := range exts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := PunchHole(parent, e.Offset, e.Length); err != nil {
			return err
		}
		done += e.Length
		report(progress, done, total)
	}
	report(progress, total, total)
	return nil
}

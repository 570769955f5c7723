package blockdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// fuseMaxIO is the largest READ/WRITE the kernel sends the FUSE daemon
// (go-fuse's MaxWrite; the kernel caps it at 256 pages = 1 MiB).
const fuseMaxIO = 1 << 20

// fuseFS serves one volume as the regular file <mountdir>/<volume> through
// FUSE: every read, write, fsync and hole punch goes straight to the engine's
// Backend. The loop device on top opens it with O_DIRECT, so the page cache
// of the FUSE file holds nothing and the kernel issues requests in parallel
// (FOPEN_PARALLEL_DIRECT_WRITES, CAP_ASYNC_DIO).
type fuseFS struct {
	dir    string
	file   string // dir/volume
	server *fuse.Server
	node   *volumeNode
}

// volumeNode is the one file of the mount.
type volumeNode struct {
	fs.Inode
	be   frontend.Backend
	size atomic.Int64
	mt   time.Time
}

var (
	_ fs.NodeGetattrer = (*volumeNode)(nil)
	_ fs.NodeSetattrer = (*volumeNode)(nil)
	_ fs.NodeOpener    = (*volumeNode)(nil)
	_ fs.NodeReader    = (*volumeNode)(nil)
	_ fs.NodeWriter    = (*volumeNode)(nil)
	_ fs.NodeFsyncer   = (*volumeNode)(nil)
	_ fs.NodeFlusher   = (*volumeNode)(nil)
	_ fs.NodeAllocater = (*volumeNode)(nil)
)

func (n *volumeNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.attr(&out.Attr)
	return 0
}

func (n *volumeNode) attr(a *fuse.Attr) {
	a.Mode = syscall.S_IFREG | 0o600
	a.Size = uint64(n.size.Load())
	a.Blocks = (a.Size + 511) / 512
	a.Blksize = 4096
	a.SetTimes(nil, &n.mt, &n.mt)
}

// Setattr accepts only what changes nothing (a truncate to the current size,
// times, modes): the volume's size changes by expansion, never by truncate.
func (n *volumeNode) Setattr(_ context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && int64(sz) != n.size.Load() {
		return syscall.EPERM
	}
	n.attr(&out.Attr)
	return 0
}

func (n *volumeNode) Open(_ context.Context, _ uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES, 0
}

func (n *volumeNode) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	size := n.size.Load()
	if off >= size {
		return fuse.ReadResultData(nil), 0
	}
	p := dest[:min(int64(len(dest)), size-off)]
	if _, err := n.be.ReadAt(p, off); err != nil {
		return nil, errnoOf(err)
	}
	return fuse.ReadResultData(p), 0
}

func (n *volumeNode) Write(_ context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if off < 0 || off+int64(len(data)) > n.size.Load() {
		return 0, syscall.ENOSPC
	}
	w, err := n.be.WriteAt(data, off)
	if err != nil {
		return 0, errnoOf(err)
	}
	return uint32(w), 0
}

func (n *volumeNode) Fsync(_ context.Context, _ fs.FileHandle, _ uint32) syscall.Errno {
	return errnoOf(n.be.Flush())
}

// Flush (close(2) of a descriptor) has nothing to write back: writes are
// never cached here.
func (n *volumeNode) Flush(_ context.Context, _ fs.FileHandle) syscall.Errno { return 0 }

// Allocate serves fallocate(2): FALLOC_FL_PUNCH_HOLE|KEEP_SIZE (what the loop
// driver sends for a discard) and ZERO_RANGE unmap; plain allocation inside
// the volume is a no-op (replicas allocate on write).
func (n *volumeNode) Allocate(_ context.Context, _ fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	if off+size > uint64(n.size.Load()) {
		if mode&unix.FALLOC_FL_KEEP_SIZE == 0 {
			return syscall.EFBIG
		}
		size = uint64(max(0, n.size.Load()-int64(off)))
	}
	if mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) == 0 {
		return 0
	}
	for size > 0 {
		chunk := min(size, 1<<30)
		if _, err := n.be.UnmapAt(uint32(chunk), int64(off)); err != nil {
			return errnoOf(err)
		}
		off, size = off+chunk, size-chunk
	}
	return 0
}

// errnoOf maps a Backend error to the errno the loop device turns into a
// block I/O error.
func errnoOf(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, frontend.ErrOutOfRange):
		return syscall.EINVAL
	default:
		return syscall.EIO
	}
}

var mountMu sync.Mutex // go-fuse's mount helper forks fusermount; one at a time

// mountFuse mounts dir (created if missing) with the volume's file.
func mountFuse(dir, volume string, size int64, be frontend.Backend) (*fuseFS, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("fuse: %w", err)
	}
	node := &volumeNode{be: be, mt: time.Now()}
	node.size.Store(size)
	root := &fs.Inode{}
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName: "longhorn-" + volume, Name: "longhorn", MaxWrite: fuseMaxIO, MaxBackground: 64,
			DirectMount: true, DirectMountStrict: false, DisableXAttrs: true,
			ExtraCapabilities: fuse.CAP_ASYNC_DIO, AllowOther: true,
		},
		OnAdd: func(ctx context.Context) {
			ch := root.NewPersistentInode(ctx, node, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 2})
			root.AddChild(volume, ch, true)
		},
		AttrTimeout:  ptr(time.Hour),
		EntryTimeout: ptr(time.Hour),
	}
	mountMu.Lock()
	server, err := fs.Mount(dir, root, opts)
	mountMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("fuse: mount %s: %w", dir, err)
	}
	return &fuseFS{dir: dir, file: filepath.Join(dir, volume), server: server, node: node}, nil
}

func ptr[T any](v T) *T { return &v }

// expand publishes the new size to the kernel (attributes and cached size).
func (f *fuseFS) expand(size int64) error {
	f.node.size.Store(size)
	if errno := f.node.NotifyContent(0, 0); errno != 0 && errno != syscall.ENOENT {
		return fmt.Errorf("fuse: invalidate attributes: %w", errno)
	}
	return nil
}

// unmount unmounts the FUSE file system and waits for its server to end.
// When the file is still held (a loop device its last user keeps open), the
// mount is detached lazily and the connection aborted, so pending and later
// I/O fail at once instead of waiting for an engine that is going away.
func (f *fuseFS) unmount() error {
	err := f.server.Unmount()
	if err != nil {
		abortFuse(f.dir)
		if lerr := unix.Unmount(f.dir, unix.MNT_DETACH); lerr != nil && !errors.Is(lerr, unix.EINVAL) {
			return fmt.Errorf("fuse: unmount %s: %w (lazy: %v)", f.dir, err, lerr)
		}
	}
	done := make(chan struct{})
	go func() { f.server.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("fuse: server of %s did not stop within 10s", f.dir)
	}
	_ = os.Remove(f.dir)
	return nil
}

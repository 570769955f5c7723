// Package shm is memory shared between the engine controller and the replicas
// on its node: sealed memfd regions (memfd_create(2) with F_SEAL_SHRINK and
// F_SEAL_GROW, fcntl(2) "File Sealing") mapped MAP_SHARED by both processes,
// and a size-class allocator over a region.
//
// Why: a 128 KiB write to three local replicas otherwise crosses the kernel
// seven times (the engine receives it, sends it three times, each replica
// receives it) before the replicas copy it into their files; with the payload
// in a region the replicas map, the engine sends 34-byte references instead.
// dataconn uses it on its local (unix socket) connections only; the wire
// protocol over TCP is unchanged.
//
// The seals make a region safe to map for a process that did not create it:
// its size cannot change, so an access inside the mapping cannot fault
// (SIGBUS) whatever the creator does later.
package shm

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	minShift = 12 // 4 KiB, the smallest block
	maxShift = 20 // 1 MiB, the largest block
	// MaxBlock is the largest buffer Get hands out (bytes); larger requests
	// get nil and go the ordinary way.
	MaxBlock = 1 << maxShift
	// MaxMapSize is the largest region Map accepts from a peer (bytes).
	MaxMapSize = 1 << 30
)

// requiredSeals are the seals a region must carry before a peer maps it.
const requiredSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW

// Errors of Map and Slice.
var (
	// ErrNotSealed means the file descriptor is not a memfd sealed against
	// shrinking and growing.
	ErrNotSealed = errors.New("shm: region not sealed against resizing")
	// ErrOutOfRange means a reference points outside the region.
	ErrOutOfRange = errors.New("shm: reference outside the region")
)

// Region is one shared memory region: a sealed memfd mapped into this
// process. The creator allocates blocks from it with Get and Put; a peer that
// mapped it (Map) resolves references with Slice. A Region is safe for
// concurrent use.
type Region struct {
	fd   int // the memfd, -1 once closed or for a peer's mapping
	mem  []byte
	base uintptr

	mu   sync.Mutex
	next int                              // bump offset of never-used memory
	free [maxShift - minShift + 1][]int32 // free block offsets / 4096, per class
}

// mapping is what a cleanup releases; it must not reference the Region.
type mapping struct {
	mem []byte
	fd  int
}

func (m mapping) release() {
	_ = unix.Munmap(m.mem)
	if m.fd >= 0 {
		_ = unix.Close(m.fd)
	}
}

// Create makes a region of size bytes (a multiple of 4096, at most
// MaxMapSize), sealed against resizing and mapped read-write. Pages are
// allocated when first touched. The region is unmapped when it becomes
// unreachable (a runtime cleanup); a slice of it must not outlive it.
func Create(name string, size int) (*Region, error) {
	if size <= 0 || size%4096 != 0 || size > MaxMapSize {
		return nil, fmt.Errorf("shm: region size %d: want a positive multiple of 4096 up to %d", size, MaxMapSize)
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: ftruncate: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, requiredSeals|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: seal: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: mmap: %w", err)
	}
	r := newRegion(mem, fd)
	runtime.AddCleanup(r, mapping.release, mapping{mem: mem, fd: fd})
	return r, nil
}

// Map maps the region behind fd (received from a peer; Map does not keep or
// close fd) read-only or read-write. It checks that fd is sealed against
// resizing (ErrNotSealed) and not larger than MaxMapSize. The mapping stays
// until Close, which the caller must call once no slice of it is in use.
func Map(fd int, writable bool) (*Region, error) {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&requiredSeals != requiredSeals {
		return nil, ErrNotSealed
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat: %w", err)
	}
	if st.Size <= 0 || st.Size > MaxMapSize {
		return nil, fmt.Errorf("shm: region of %d bytes: want 1 to %d", st.Size, MaxMapSize)
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap: %w", err)
	}
	return newRegion(mem, -1), nil
}

func newRegion(mem []byte, fd int) *Region {
	return &Region{fd: fd, mem: mem, base: uintptr(unsafe.Pointer(unsafe.SliceData(mem)))}
}

// Fd is the memfd to pass to a peer (SCM_RIGHTS), or -1 for a peer's mapping.
func (r *Region) Fd() int { return r.fd }

// Size is the region's length in bytes.
func (r *Region) Size() int { return len(r.mem) }

// Offset returns where p starts in the region (bytes) when all of p lies in
// it; ok is false otherwise (including for an empty p).
func (r *Region) Offset(p []byte) (off int64, ok bool) {
	if r == nil || len(p) == 0 {
		return 0, false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	if start < r.base || start-r.base > uintptr(len(r.mem)) || uintptr(len(p)) > uintptr(len(r.mem))-(start-r.base) {
		return 0, false
	}
	return int64(start - r.base), true
}

// Slice returns the length bytes at off in the region, or ErrOutOfRange.
// The slice is valid while the region is reachable (runtime.KeepAlive).
func (r *Region) Slice(off int64, length uint32) ([]byte, error) {
	if off < 0 || off > int64(len(r.mem)) || int64(length) > int64(len(r.mem))-off {
		return nil, fmt.Errorf("%w: %d bytes at %d in a region of %d", ErrOutOfRange, length, off, len(r.mem))
	}
	return r.mem[off : off+int64(length) : off+int64(length)], nil
}

func class(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

// Get returns a block of n bytes (1 <= n <= MaxBlock) of the region, with
// arbitrary contents, or nil when n is out of that range or the region is
// full. Return it with Put.
func (r *Region) Get(n int) []byte {
	if r == nil || n <= 0 || n > MaxBlock {
		return nil
	}
	c := class(n)
	size := 1 << (c + minShift)
	r.mu.Lock()
	var off int
	if l := len(r.free[c]); l > 0 {
		off = int(r.free[c][l-1]) << minShift
		r.free[c] = r.free[c][:l-1]
	} else if r.next+size <= len(r.mem) {
		off = r.next
		r.next += size
	} else {
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	return r.mem[off : off+n : off+size]
}

// Put returns a block obtained from Get and reports true; slices that are not
// a whole block of this region (including nil, and any slice when r is nil)
// are left alone and it reports false, so a caller holding buffers of several
// origins can offer each one here first.
func (r *Region) Put(b []byte) bool {
	c := cap(b)
	off, ok := r.Offset(b[:c])
	if !ok || c < 1<<minShift || c > MaxBlock || c&(c-1) != 0 || off%(1<<minShift) != 0 {
		return false
	}
	r.mu.Lock()
	r.free[class(c)] = append(r.free[class(c)], int32(off>>minShift))
	r.mu.Unlock()
	return true
}

// Close unmaps a peer's mapping (Map) at once; slices of it must no longer be
// used. For a created region it is a no-op (its cleanup unmaps it).
func (r *Region) Close() {
	if r == nil || r.fd >= 0 {
		return
	}
	r.mu.Lock()
	mem := r.mem
	r.mem = nil
	r.mu.Unlock()
	if mem != nil {
		_ = unix.Munmap(mem)
	}
}

// ArenaSize is the size of the process's I/O buffer region (Arena), in bytes.
// Pages are allocated when first used, so the cost is what is in flight.
const ArenaSize = 64 << 20

var arena struct {
	once sync.Once
	r    *Region
}

// Arena returns this process's I/O buffer region, created on first use: the
// engine's frontends take request buffers from it (Get) so that dataconn can
// hand writes to local replicas by reference. It returns nil when shared
// memory is not available; Get on a nil Region returns nil.
func Arena() *Region {
	arena.once.Do(func() {
		r, err := Create("longhorn-io", ArenaSize)
		if err == nil {
			arena.r = r
		}
	})
	return arena.r
}

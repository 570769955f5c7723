package replica

import (
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/shm"
)

// Direct reads: the engine on the same node may read a replica's layer files
// itself instead of asking the replica process (a round trip through two
// processes). It does so only through a ReadView, which makes its reads
// exactly the replica's own reads (readLocked) at one moment:
//
//   - the location index lives in a sealed shared memory region the engine
//     maps read-only, so it sees every write's index update as soon as the
//     replica made it;
//   - every change of the layer chain, of the index as a whole or of the
//     files' meaning (snapshot, expand, revert, reload, purge's swap, unmap,
//     rebuild flags, close) holds the store's lock exclusively, and that lock
//     (seqRWMutex) advances a sequence number in a second shared region: odd
//     while held, even otherwise. A view carries the sequence number it was
//     taken at; a direct read checks it before and after reading and throws
//     its result away when it moved (then the engine asks the replica, and
//     takes a new view).
//
// So a direct read either overlapped no exclusive section, and then it is a
// read under the shared lock (like the replica's ReadAt; writes and a purge's
// copy run under the shared lock or none, and are safe for such reads by the
// store's own rules), or it is discarded. Writes in flight are no different
// from the replica's own reads: a write is acknowledged only after its data
// and index update are in place.

// MaxViewLayers is the most layers a ReadView carries (one descriptor each,
// plus two regions, within SCM_MAX_FD = 253 of one message).
const MaxViewLayers = 250

// ErrNoView means the store cannot offer a ReadView: its index is not in
// shared memory (shared memory unavailable, or a volume over 4 TiB).
var ErrNoView = errors.New("no read view: index not in shared memory")

// seqRWMutex is the store's RWMutex; Lock and Unlock also advance seq (odd
// while held exclusively), which direct readers watch (see above).
type seqRWMutex struct {
	sync.RWMutex
	seq *atomic.Uint64
}

// Lock takes the lock exclusively and makes seq odd.
func (m *seqRWMutex) Lock() {
	m.RWMutex.Lock()
	m.seq.Add(1)
}

// Unlock makes seq even and releases the exclusive lock.
func (m *seqRWMutex) Unlock() {
	m.seq.Add(1)
	m.RWMutex.Unlock()
}

// newSeq returns the sequence word: in a 4 KiB shared region when one can be
// made (returned too, nil otherwise), else in ordinary memory.
func newSeq() (*atomic.Uint64, *shm.Region) {
	r, err := shm.Create("longhorn-replica-seq", 4096)
	if err != nil {
		return new(atomic.Uint64), nil
	}
	mem, _ := r.Slice(0, 8)
	return (*atomic.Uint64)(unsafe.Pointer(unsafe.SliceData(mem))), r
}

// ReadView is what a direct reader needs, as file descriptors the caller
// owns (Close releases them): the sequence region (a u64 at offset 0), the
// index region (one byte per 4096-byte sector, layer 0 = zeroes, i = Layers[i-1]),
// and one descriptor per layer, oldest first (a backing file included).
type ReadView struct {
	Seq     uint64 // the sequence number the view is valid at (even)
	Sectors int64  // sectors covered by the index
	SeqFd   int
	IndexFd int
	Layers  []int
}

// Close closes the view's descriptors.
func (v *ReadView) Close() {
	for _, fd := range append([]int{v.SeqFd, v.IndexFd}, v.Layers...) {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	v.Layers = nil
	v.SeqFd, v.IndexFd = -1, -1
}

// ReadView returns a view of the store for direct reads (see above), with
// duplicated descriptors. Errors: ErrClosed, ErrNoView, ErrChainTooLong (over
// MaxViewLayers layers), or a dup(2) failure.
func (s *Store) ReadView() (*ReadView, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errf("read-view", "", ErrClosed, "")
	}
	st := s.st
	if s.seqRegion == nil || st.loc.region == nil {
		return nil, errf("read-view", "", ErrNoView, "")
	}
	if len(st.layers)-1 > MaxViewLayers {
		return nil, errf("read-view", "layers", ErrChainTooLong, "%d layers, a view carries at most %d", len(st.layers)-1, MaxViewLayers)
	}
	v := &ReadView{Seq: s.mu.seq.Load(), Sectors: st.loc.sectors, SeqFd: -1, IndexFd: -1}
	var err error
	dup := func(fd int) int {
		if err != nil {
			return -1
		}
		var n int
		if n, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			return -1
		}
		return n
	}
	v.SeqFd = dup(s.seqRegion.Fd())
	v.IndexFd = dup(st.loc.region.Fd())
	for _, l := range st.layers[1:] {
		v.Layers = append(v.Layers, dup(int(l.f.Fd())))
	}
	if err != nil {
		v.Close()
		return nil, errf("read-view", "", err, "dup")
	}
	return v, nil
}

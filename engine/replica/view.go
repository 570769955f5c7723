package replica

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
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
//
// Direct writes: a view may also come with a write slot, a counter in the
// sequence region (WriteSlotOffset + 8*slot). The engine then writes an
// aligned request itself, exactly as writeAligned does: it adds 1 to its
// slot, checks that the sequence number is still the view's (else it
// subtracts 1 and sends the write to the replica), pwrites the head (the
// view's last layer) in writeChunk pieces, marks the sectors in the index
// (and their pages touched) with the head's layer number, and subtracts 1.
// Lock, after making the sequence number odd, waits until every slot is 0.
// Both sides use sequentially consistent atomics, so either the writer sees
// the odd (or moved) number and backs off, or Lock sees its count and waits:
// a direct write is a write under the shared lock, and no exclusive section
// runs while one is in progress. The slot is the view connection's: the
// replica frees it (and zeroes it) when that connection closes, which the
// engine does once its last direct write with the view has returned, and
// the kernel does when the engine process dies (after its last thread has
// left the kernel, so no write of it is in progress). Slots are given only
// without the revision counter (every write must bump it) and while direct
// reads are allowed.

// MaxViewLayers is the most layers a ReadView carries (one descriptor each,
// plus two regions, within SCM_MAX_FD = 253 of one message).
const MaxViewLayers = 250

// ErrNoView means the store cannot offer a ReadView: its index is not in
// shared memory (shared memory unavailable, or a volume over 4 TiB).
var ErrNoView = errors.New("no read view: index not in shared memory")

const (
	// WriteSlotOffset is where the direct write slots start in the sequence
	// region (bytes; u64 counters), MaxWriteSlots how many there are.
	WriteSlotOffset = 64
	MaxWriteSlots   = 32
)

// seqRWMutex is the store's RWMutex; Lock and Unlock also advance seq (odd
// while held exclusively), which direct readers and writers watch, and Lock
// waits for the direct writers in slots (see above).
type seqRWMutex struct {
	sync.RWMutex
	seq   *atomic.Uint64
	slots []atomic.Int64 // nil without shared memory
}

// Lock takes the lock exclusively, makes seq odd and waits until no direct
// write is in progress.
func (m *seqRWMutex) Lock() {
	m.RWMutex.Lock()
	m.seq.Add(1)
	for i := range m.slots {
		for spin := 0; m.slots[i].Load() != 0; spin++ {
			if spin < 100 {
				runtime.Gosched()
			} else {
				time.Sleep(20 * time.Microsecond)
			}
		}
	}
}

// Unlock makes seq even and releases the exclusive lock.
func (m *seqRWMutex) Unlock() {
	m.seq.Add(1)
	m.RWMutex.Unlock()
}

// newSeq returns the sequence word and the direct write slots in a 4 KiB
// shared region when one can be made (returned too, nil otherwise), else the
// word in ordinary memory and no slots.
func newSeq() (*atomic.Uint64, []atomic.Int64, *shm.Region) {
	r, err := shm.Create("longhorn-replica-seq", 4096)
	if err != nil {
		return new(atomic.Uint64), nil, nil
	}
	mem, _ := r.Slice(0, WriteSlotOffset+8*MaxWriteSlots)
	return (*atomic.Uint64)(unsafe.Pointer(unsafe.SliceData(mem))),
		unsafe.Slice((*atomic.Int64)(unsafe.Pointer(&mem[WriteSlotOffset])), MaxWriteSlots), r
}

// slotSet hands out the direct write slots (bit i set = slot i in use).
type slotSet struct {
	mu   sync.Mutex
	used uint64
}

// takeSlot returns a free slot, or -1 when all are in use.
func (s *Store) takeSlot() int {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	for i := range s.mu.slots {
		if s.slots.used&(1<<i) == 0 {
			s.slots.used |= 1 << i
			return i
		}
	}
	return -1
}

// releaseSlot frees slot i once its view connection closed: its writer is
// gone, so any count left (a process that died) is dropped.
func (s *Store) releaseSlot(i int) {
	s.slots.mu.Lock()
	defer s.slots.mu.Unlock()
	s.mu.slots[i].Store(0)
	s.slots.used &^= 1 << i
}

// ReadView is what a direct reader needs, as file descriptors the caller
// owns (Close releases them): the sequence region (a u64 at offset 0), the
// index region (one byte per 4096-byte sector, layer 0 = zeroes, i = Layers[i-1]),
// and one descriptor per layer, oldest first (a backing file included).
//
// WriteSlot is the direct write slot that comes with the view (-1: none);
// the caller calls Release once the engine is done with the view (its
// connection closed), which frees the slot.
type ReadView struct {
	Seq       uint64 // the sequence number the view is valid at (even)
	Sectors   int64  // sectors covered by the index
	SeqFd     int
	IndexFd   int
	Layers    []int
	WriteSlot int
	release   func()
}

// Close closes the view's descriptors (not its slot: see Release).
func (v *ReadView) Close() {
	for _, fd := range append([]int{v.SeqFd, v.IndexFd}, v.Layers...) {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	v.Layers = nil
	v.SeqFd, v.IndexFd = -1, -1
}

// Release frees the view's write slot; call it once, after the engine
// stopped using the view (its connection closed). No-op without a slot.
func (v *ReadView) Release() {
	if v.release != nil {
		v.release()
		v.release = nil
	}
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
	v.WriteSlot = -1
	if s.rev == nil && len(st.layers)-1 <= 255 {
		if i := s.takeSlot(); i >= 0 {
			v.WriteSlot = i
			v.release = func() { s.releaseSlot(i) }
		}
	}
	return v, nil
}

// Package bufpool recycles the byte buffers of the data path (the NBD and
// iSCSI frontends, dataconn, the engine controller's read-modify-write, the
// replica's and the sync agent's transfers) so that steady-state I/O
// allocates nothing. Buffers come in power-of-two size classes from 512 B
// (one logical block) to 64 MiB (the largest NBD payload accepted); Get of
// more is allocated and not recycled.
//
// GetShared takes frontend buffers of 4 KiB and more from the process's
// shared I/O region (shm.Arena) first: a WRITE payload there reaches local
// replicas by reference. Put takes back buffers of either origin.
package bufpool

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/longhorn-go/longhorn/engine/shm"
)

const (
	minShift = 9  // 512 B
	maxShift = 26 // 64 MiB
	// MaxSize is the largest buffer Get returns from a pool.
	MaxSize = 1 << maxShift
	// sharedMin is the smallest buffer GetShared takes from the shared
	// region (smaller ones would waste its 4 KiB blocks).
	sharedMin = 4096
)

var (
	pools [maxShift - minShift + 1]sync.Pool
	// holders recycles the *[]byte boxes sync.Pool needs, so that Put does
	// not allocate.
	holders sync.Pool
)

// class is the size class holding n bytes (0 for up to 512 B).
func class(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

// Get returns a slice of length n (bytes) whose contents are undefined and
// whose capacity is the next power of two at or above max(n, 512); nil for
// n <= 0. Return it with Put when done; not returning it is safe (the GC
// takes it).
func Get(n int) []byte {
	if n <= 0 {
		return nil
	}
	if n > MaxSize {
		return make([]byte, n)
	}
	c := class(n)
	if v := pools[c].Get(); v != nil {
		h := v.(*[]byte)
		b := *h
		*h = nil
		holders.Put(h)
		return b[:n]
	}
	return make([]byte, n, 1<<(c+minShift))
}

// GetShared is Get for buffers that may travel to a replica by reference:
// of 4 KiB and more they come from the shared I/O region while it has room.
func GetShared(n int) []byte {
	if n >= sharedMin {
		if b := shm.Arena().Get(n); b != nil {
			return b
		}
	}
	return Get(n)
}

// Put recycles b, which must have come from Get or GetShared and must not
// be used afterwards. nil and buffers of a capacity Get never produces are
// ignored.
func Put(b []byte) {
	c := cap(b)
	if c == 0 || shm.Arena().Put(b) {
		return
	}
	if c < 1<<minShift || c > MaxSize || c&(c-1) != 0 {
		return
	}
	h, _ := holders.Get().(*[]byte)
	if h == nil {
		h = new([]byte)
	}
	*h = b[:c]
	pools[class(c)].Put(h)
}

// Aligned reports whether b starts on a 4096-byte boundary, as O_DIRECT
// transfers need (buffers of 4 KiB and more from Get are, in practice: the
// Go allocator places objects of a power-of-two size class of 4 KiB and
// more at multiples of their size or of its 8 KiB pages).
func Aligned(b []byte) bool {
	return len(b) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4096 == 0
}

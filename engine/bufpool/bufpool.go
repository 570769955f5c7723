// Package bufpool recycles byte buffers for the data path (dataconn, the engine
// controller's read-modify-write) so that steady-state I/O allocates nothing.
// Buffers come in power-of-two size classes from 4 KiB to 32 MiB.
package bufpool

import (
	"math/bits"
	"sync"
	"unsafe"
)

const (
	minShift = 12 // 4 KiB
	maxShift = 25 // 32 MiB
	// MaxSize is the largest buffer Get returns from a pool; larger requests
	// are allocated and not recycled.
	MaxSize = 1 << maxShift
)

var (
	pools [maxShift - minShift + 1]sync.Pool
	// holders recycles the *[]byte boxes that sync.Pool needs, so that Put
	// does not allocate.
	holders sync.Pool
)

func class(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

// Get returns a slice of length n (bytes) whose contents are undefined. Return
// it with Put when done; not returning it is safe (the GC takes it).
func Get(n int) []byte {
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

// Put recycles b, which must have come from Get and must not be used afterwards.
// Buffers of a capacity Get never produces are dropped.
func Put(b []byte) {
	c := cap(b)
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

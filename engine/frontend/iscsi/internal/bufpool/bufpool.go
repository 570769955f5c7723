// Package bufpool recycles the data buffers of the iSCSI target: one buffer
// per SCSI command holds its Data-Out or Data-In bytes, so the hot path
// allocates nothing once the pools are warm.
package bufpool

import (
	"math/bits"
	"sync"

	"github.com/longhorn-go/longhorn/engine/shm"
)

const (
	minShift = 9  // 512 B, one logical block
	maxShift = 25 // 32 MiB, above the largest transfer the target advertises
)

var pools [maxShift + 1]sync.Pool

// Get returns a buffer of length n (bytes). Its capacity is the next power of
// two at or above n (at least 512); contents are not zeroed. n <= 0 returns nil.
// Buffers of 4 KiB and more come from the shared I/O region (shm.Arena).
func Get(n int) []byte {
	if n <= 0 {
		return nil
	}
	// A WRITE's data in the shared I/O region goes to local replicas by
	// reference; smaller buffers would waste the region's 4 KiB blocks.
	if n >= 4096 {
		if b := shm.Arena().Get(n); b != nil {
			return b
		}
	}
	shift := classOf(n)
	if shift > maxShift {
		return make([]byte, n)
	}
	if p, ok := pools[shift].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<shift)
}

// Put returns a buffer obtained from Get. Buffers of other capacities (and
// nil) are ignored. The caller must not use b afterwards.
func Put(b []byte) {
	if shm.Arena().Put(b) {
		return
	}
	c := cap(b)
	if c < 1<<minShift || c&(c-1) != 0 {
		return
	}
	shift := bits.TrailingZeros(uint(c))
	if shift > maxShift {
		return
	}
	b = b[:c]
	pools[shift].Put(&b)
}

func classOf(n int) int {
	if n <= 1<<minShift {
		return minShift
	}
	return bits.Len(uint(n - 1))
}

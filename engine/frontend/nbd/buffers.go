package nbd

import (
	"math/bits"
	"sync"

	"github.com/longhorn-go/longhorn/engine/shm"
)

// Payload buffers come from power-of-two size classes from 4 KiB up to
// maxPoolShift, so a steady stream of 4 KiB or 128 KiB requests allocates
// nothing after warm-up.
const (
	minPoolShift = 12 // 4 KiB
	maxPoolShift = 26 // 64 MiB, the largest MaxPayload accepted
)

var (
	pools [maxPoolShift + 1]sync.Pool
	boxes sync.Pool // *[]byte holders of arena buffers
)

// poolClass returns the size class (a power-of-two shift) that holds n bytes.
func poolClass(n int) int {
	if n <= 1<<minPoolShift {
		return minPoolShift
	}
	return bits.Len(uint(n - 1))
}

// getBuf returns a buffer of length n (1 <= n <= 1<<maxPoolShift) from the
// process's shared I/O region (shm.Arena: a WRITE payload there goes to local
// replicas by reference) or, when that is full or n is over shm.MaxBlock,
// from the pool. Its contents are arbitrary. Return it with putBuf.
func getBuf(n int) *[]byte {
	if b := shm.Arena().Get(n); b != nil {
		p, _ := boxes.Get().(*[]byte)
		if p == nil {
			p = new([]byte)
		}
		*p = b
		return p
	}
	c := poolClass(n)
	if p, ok := pools[c].Get().(*[]byte); ok {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n, 1<<c)
	return &b
}

// putBuf returns a buffer obtained from getBuf; nil is ignored.
func putBuf(p *[]byte) {
	if p == nil {
		return
	}
	if shm.Arena().Put(*p) {
		*p = nil
		boxes.Put(p)
		return
	}
	c := poolClass(cap(*p))
	if cap(*p) != 1<<c {
		return // not one of ours
	}
	pools[c].Put(p)
}

// budget bounds the bytes of requests in flight on one connection, so a client
// that pipelines without reading replies cannot make the server allocate
// without limit. acquire blocks until enough budget is free; a single request
// larger than the whole budget is still admitted alone.
type budget struct {
	mu    sync.Mutex
	cond  sync.Cond
	limit int64
	used  int64
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.cond.L = &b.mu
	return b
}

// acquire takes n bytes of budget, waiting while other requests hold it.
func (b *budget) acquire(n int64) {
	b.mu.Lock()
	for b.used > 0 && b.used+n > b.limit {
		b.cond.Wait()
	}
	b.used += n
	b.mu.Unlock()
}

// release gives back n bytes taken by acquire.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

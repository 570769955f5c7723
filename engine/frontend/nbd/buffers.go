package nbd

import "sync"

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

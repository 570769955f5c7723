package nbd

import "sync"

// flusher coalesces concurrent flushes (NBD_CMD_FLUSH and FUA writes from every
// connection) into as few Backend.Flush calls as correctness allows: a caller
// whose write completed before it asked joins the next flush that starts after
// the running one, because the running one may have started before that write
// was acknowledged. So at most two flushes are ever queued at once.
type flusher struct {
	fn func() error

	mu      sync.Mutex
	running bool
	next    *flushRound
}

// flushRound is one Backend.Flush call and the callers waiting for it.
type flushRound struct {
	done chan struct{}
	err  error
}

// flush returns once a Backend.Flush that started after this call returned
// has finished, with that flush's error.
func (f *flusher) flush() error {
	f.mu.Lock()
	if f.next == nil {
		f.next = &flushRound{done: make(chan struct{})}
	}
	r := f.next
	if !f.running {
		f.running = true
		f.next = nil
		f.mu.Unlock()
		f.run(r)
	} else {
		f.mu.Unlock()
	}
	<-r.done
	return r.err
}

// run executes round r, then hands the round that queued meanwhile (if any) to
// a new goroutine so the caller that ran r is not delayed by later rounds.
func (f *flusher) run(r *flushRound) {
	r.err = f.fn()
	close(r.done)
	f.mu.Lock()
	next := f.next
	f.next = nil
	if next == nil {
		f.running = false
	}
	f.mu.Unlock()
	if next != nil {
		go f.run(next)
	}
}

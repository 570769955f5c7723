package controller

import (
	"context"
	"errors"
	"time"
)

// purgePollInterval is how often a running purge's status is read.
const purgePollInterval = 500 * time.Millisecond

// watchPurge follows the purge just started on bs until every replica has
// finished, and marks ERR a replica whose purge failed: its layers may no
// longer match the others' (a half-coalesced chain, a layer of the wrong
// size), so it must be rebuilt rather than keep serving reads. It stops at
// Shutdown.
func (c *Controller) watchPurge(bs []*backend) {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	if c.purgeCancel != nil {
		c.purgeCancel()
	}
	c.purgeCancel = cancel
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		pending := append([]*backend(nil), bs...)
		for len(pending) > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(purgePollInterval):
			}
			pending = c.checkPurge(ctx, pending)
		}
	}()
}

// checkPurge reads the purge status of bs and returns the replicas still
// purging; a failed one is marked ERR, one that left RW is dropped.
func (c *Controller) checkPurge(ctx context.Context, bs []*backend) []*backend {
	var still []*backend
	for i, st := range c.purgeStatus(ctx, bs) {
		b := bs[i]
		switch {
		case ctx.Err() != nil:
			return nil
		case b.getMode() != ModeRW:
		case st.GetIsPurging():
			still = append(still, b)
		case st.GetError() != "":
			c.log.WithField("replica", b.addr).WithField("error", st.GetError()).Error("snapshot purge failed; marking the replica ERR")
			c.r.markERR(b, errors.New("snapshot purge failed: "+st.GetError()))
		}
	}
	return still
}

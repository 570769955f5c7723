package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// Self-abort of a hand-over: how often the socket is probed, how many
// probes in a row must find no listener, and how long closing one new
// replica may take.
const (
	handOverProbeEvery  = time.Second
	handOverProbeMisses = 3
	newReplicaCloseWait = 10 * time.Second
)

// watchHandOver probes the socket the new engine took over until ctx ends
// (HandOverDone, an abort, Shutdown). A live new engine always has a
// listener there (bound before the hand-over, then serving); when the path
// refuses connections handOverProbeMisses times in a row, the new engine
// died before it finished, and this engine takes the volume back.
func (c *Controller) watchHandOver(ctx context.Context, socket string) {
	misses := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(handOverProbeEvery):
		}
		if listening(socket) {
			misses = 0
			continue
		}
		if misses++; misses < handOverProbeMisses {
			continue
		}
		if c.selfAbort(ctx) {
			return
		}
		misses = 0
	}
}

// listening reports whether a server accepts connections on the unix
// socket: only a refused connection or a missing path count as "no".
func listening(socket string) bool {
	nc, err := net.DialTimeout("unix", socket, time.Second)
	if err == nil {
		_ = nc.Close()
		return true
	}
	return !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOENT)
}

// selfAbort closes the new engine's replicas and takes the volume back. It
// does not when a new replica cannot be confirmed closed: a replica store
// left open writes its stale revision counter and metadata when it closes,
// over the data this engine would write meanwhile. It reports whether the
// watch is over.
func (c *Controller) selfAbort(ctx context.Context) bool {
	for !c.opMu.TryLock() {
		select {
		case <-ctx.Done():
			return true
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer c.opMu.Unlock()
	if ctx.Err() != nil {
		return true
	}
	c.mu.Lock()
	h := c.handedOver
	c.mu.Unlock()
	if h == nil || h.addrs == nil {
		return true
	}
	for _, a := range h.newReplicas {
		if err := closeReplicaAt(ctx, a, c.opts.Name); err != nil {
			c.log.WithError(err).Error("hand-over: the new engine is gone but its replica may be open; not taking the volume back yet")
			return false
		}
	}
	c.log.WithField("newReplicas", h.newReplicas).Warn("hand-over: the new engine is gone, taking the volume back")
	if err := c.abortLocked(context.WithoutCancel(ctx), nil); err != nil {
		c.log.WithError(err).Error("hand-over: taking the volume back failed")
		return false
	}
	return true
}

// closeReplicaAt calls ReplicaClose on the replica at addr.
func closeReplicaAt(ctx context.Context, addr, volume string) error {
	n, err := NormalizeAddress(addr)
	if err != nil {
		return err
	}
	rem, err := newRemote(n, volume)
	if err != nil {
		return err
	}
	defer rem.close()
	cctx, cancel := context.WithTimeout(ctx, newReplicaCloseWait)
	defer cancel()
	if _, err := rem.ctl.ReplicaClose(cctx, empty); err != nil {
		return fmt.Errorf("close new replica %s: %w", addr, err)
	}
	return nil
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
)

// handOverFrontend is a frontend a new engine can take over while it runs
// (the nbd frontend on a unix socket).
type handOverFrontend interface {
	CanHandOver() error
	// HandOverSocket is the unix socket path the new engine takes over.
	HandOverSocket() string
}

// handOver is what the old engine keeps after a hand-over, for an abort.
type handOver struct {
	addrs       []string
	size        int64
	frontend    string
	newReplicas []string           // the new engine's, closed before a self-abort
	stopWatch   context.CancelFunc // ends watchHandOver
}

// HandOverResult is what HandOver reports to the new engine.
type HandOverResult struct {
	// Size is the volume size in bytes.
	Size int64
	// Replicas are the addresses of the replicas closed.
	Replicas []string
	// Frontend is the frontend that was drained.
	Frontend string
	// Drain is how long the drain, flush and replica close took.
	Drain time.Duration
}

// HandOver gives the volume to a new engine of a live upgrade
// (VolumeUpgradeHandOver). endpoint is the frontend endpoint the new engine
// took over and must be this engine's. It refuses, with ErrPrecondition, a
// volume that is not started, has a replica that is not RW (rebuilding,
// failed), is expanding or purging, and a frontend that cannot hand over
// ("not supported yet"). Then it drains the frontend (requests read are
// answered; the client re-sends the rest to the new engine), flushes, and
// closes every replica, which the new engine's replica processes on the same
// directories then open. The addresses are kept for AbortHandOver. Until
// HandOverDone, the engine watches the socket: when no engine listens on it
// any more (the new engine died), it closes newReplicas and takes the volume
// back by itself (watchHandOver).
func (c *Controller) HandOver(ctx context.Context, endpoint string, newReplicas []string) (HandOverResult, error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	feName, err := c.canHandOver(ctx, endpoint)
	if err != nil {
		return HandOverResult{}, err
	}
	socket := c.fe.(handOverFrontend).HandOverSocket()
	t0 := time.Now()
	if err := c.shutdownFrontend(); err != nil {
		return HandOverResult{}, fmt.Errorf("hand-over: drain frontend: %w", err)
	}
	bs := c.r.list()
	addrs := make([]string, len(bs))
	for i, b := range bs {
		addrs[i] = b.addr
	}
	size := c.r.Size()
	if err := c.r.Flush(); err != nil || len(c.targets(ModeRW)) != len(bs) {
		c.log.WithError(err).Warn("hand-over: flush failed, serving again")
		return HandOverResult{}, c.resumeAfterFailure(ctx, fmt.Errorf("%w: flush before hand-over: %v (%s)",
			ErrPrecondition, err, c.errSummary()), feName)
	}
	c.r.ioMu.Lock()
	c.r.setList(nil)
	c.r.ioMu.Unlock()
	closeErr := c.closeReplicas(ctx, bs)
	c.mu.Lock()
	c.started = false
	wctx, stopWatch := context.WithCancel(context.Background())
	c.handedOver = &handOver{addrs: addrs, size: size, frontend: feName, newReplicas: newReplicas, stopWatch: stopWatch}
	c.mu.Unlock()
	if closeErr != nil {
		return HandOverResult{}, c.abortLocked(ctx, closeErr)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.watchHandOver(wctx, socket)
	}()
	d := time.Since(t0)
	c.log.WithFields(logrus.Fields{"replicas": addrs, "drain": d}).Info("hand-over: volume handed to the new engine")
	return HandOverResult{Size: size, Replicas: addrs, Frontend: feName, Drain: d}, nil
}

// canHandOver checks HandOver's preconditions and returns the frontend name.
func (c *Controller) canHandOver(ctx context.Context, endpoint string) (string, error) {
	bs := c.r.list()
	c.mu.Lock()
	started, expanding, fe, feName := c.started, c.isExpanding, c.fe, c.feName
	c.mu.Unlock()
	if !started || len(bs) == 0 {
		return "", fmt.Errorf("%w: cannot hand over: the volume is not started", ErrPrecondition)
	}
	if expanding {
		return "", fmt.Errorf("%w: cannot hand over during an expansion", ErrPrecondition)
	}
	for _, b := range bs {
		if m := b.getMode(); m != ModeRW {
			return "", fmt.Errorf("%w: cannot hand over while replica %s is %s (rebuilding or failed)", ErrPrecondition, b.addr, m)
		}
	}
	if fe == nil || fe.State() != FrontendUp {
		return "", fmt.Errorf("%w: cannot hand over: no frontend is up", ErrPrecondition)
	}
	hf, ok := fe.(handOverFrontend)
	if !ok {
		return "", fmt.Errorf("%w: live upgrade is not supported yet for frontend %s", ErrPrecondition, feName)
	}
	if err := hf.CanHandOver(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrPrecondition, err)
	}
	if endpoint != fe.Endpoint() {
		return "", fmt.Errorf("%w: the new engine took over %q, this engine serves %q", ErrInvalid, endpoint, fe.Endpoint())
	}
	for i, st := range c.purgeStatus(ctx, bs) {
		if st.GetIsPurging() {
			return "", fmt.Errorf("%w: cannot hand over while replica %s purges snapshots", ErrPrecondition, bs[i].addr)
		}
	}
	return feName, nil
}

// closeReplicas closes the data connections of bs, then each replica
// (ReplicaClose), then the control connections.
func (c *Controller) closeReplicas(ctx context.Context, bs []*backend) error {
	var errs []error
	for _, b := range bs {
		if b.data != nil {
			b.data.Close()
		}
	}
	for _, b := range bs {
		cctx, cancel := callCtx(ctx)
		_, err := b.rem.ctl.ReplicaClose(cctx, empty)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("close replica %s: %w", b.addr, err))
		}
		b.rem.close()
	}
	return errors.Join(errs...)
}

// resumeAfterFailure starts the drained frontend again and returns cause.
func (c *Controller) resumeAfterFailure(ctx context.Context, cause error, feName string) error {
	if err := c.startFrontend(ctx, feName); err != nil {
		return fmt.Errorf("%w; restarting the frontend failed too: %v", cause, err)
	}
	return cause
}

// AbortHandOver takes the volume back after HandOver (VolumeUpgradeAbort):
// it opens the replicas it closed and serves its frontend again. A volume
// this engine already took back by itself is not an error.
func (c *Controller) AbortHandOver(ctx context.Context) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.mu.Lock()
	taken := c.handedOver == nil && c.started
	c.mu.Unlock()
	if taken {
		return nil
	}
	return c.abortLocked(ctx, nil)
}

// HandOverDone ends the watch of HandOver (VolumeUpgradeDone): the new
// engine serves the volume; this engine keeps nothing of it.
func (c *Controller) HandOverDone() error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.handedOver
	if h == nil {
		return fmt.Errorf("%w: no hand-over in progress", ErrPrecondition)
	}
	h.stopWatch()
	c.handedOver = &handOver{stopWatch: func() {}}
	c.log.Info("hand-over done: the new engine serves the volume")
	return nil
}

// abortLocked is AbortHandOver under opMu; a non-nil cause is returned
// (joined with any failure to take the volume back).
func (c *Controller) abortLocked(ctx context.Context, cause error) error {
	c.mu.Lock()
	h := c.handedOver
	c.mu.Unlock()
	if h == nil || h.addrs == nil {
		return fmt.Errorf("%w: no hand-over to abort", ErrPrecondition)
	}
	if err := c.start(ctx, h.addrs, h.size, 0, false, h.frontend); err != nil {
		return errors.Join(cause, fmt.Errorf("abort hand-over: %w", err))
	}
	h.stopWatch()
	c.mu.Lock()
	c.handedOver = nil
	c.mu.Unlock()
	c.log.WithField("replicas", h.addrs).Warn("hand-over aborted: serving the volume again")
	return cause
}

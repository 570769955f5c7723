package controller

import (
	"context"
	"fmt"
	"time"
)

// CreateReplica adds a replica in mode (ControllerReplicaCreate): WO with a
// snapshot for a rebuild driven from outside, RW for a replica known to be
// identical, ERR to list one that is unusable.
func (c *Controller) CreateReplica(ctx context.Context, addr, instanceName string, snapshot bool, mode Mode) error {
	addr, err := NormalizeAddress(addr)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.find(addr) != nil {
		return nil
	}
	switch {
	case mode == ModeWO && snapshot:
		if len(c.targets(ModeWO)) > 0 {
			return fmt.Errorf("%w: can only have one WO replica at a time", ErrPrecondition)
		}
		_, err := c.joinWO(ctx, addr, instanceName, false)
		return err
	case mode == ModeERR:
		rem, err := newRemote(addr, c.opts.Name)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		c.addBackend(&backend{addr: addr, rem: rem, instanceName: instanceName})
		return nil
	}
	rem, err := newRemote(addr, c.opts.Name)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	b := &backend{addr: addr, rem: rem}
	if err := c.prepareJoin(ctx, b, instanceName, false); err != nil {
		closeBackend(b)
		return err
	}
	b.mode.Store(int32(mode))
	c.addBackend(b)
	return nil
}

// RemoveReplica drops a replica from the volume (ReplicaDelete). While the
// frontend is up, neither the last replica (as Longhorn) nor the last RW one
// can be removed: the volume would have nothing left to read from.
func (c *Controller) RemoveReplica(addr string) error {
	addr, err := NormalizeAddress(addr)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	b := c.find(addr)
	if b == nil {
		return nil
	}
	if c.frontendUp() {
		if len(c.r.list()) == 1 {
			return fmt.Errorf("%w: cannot remove the last replica while the frontend is up", ErrPrecondition)
		}
		if b.getMode() == ModeRW && c.countMode(ModeRW) == 1 {
			return fmt.Errorf("%w: cannot remove the last RW replica while the frontend is up", ErrPrecondition)
		}
	}
	c.removeLocked(b)
	return nil
}

// countMode counts the listed replicas in mode m.
func (c *Controller) countMode(m Mode) int {
	n := 0
	for _, b := range c.r.list() {
		if b.getMode() == m {
			n++
		}
	}
	return n
}

// removeLocked takes b out of the list and closes it. Caller holds opMu.
func (c *Controller) removeLocked(b *backend) {
	c.mu.Lock()
	if rb := c.rebuilds[b.addr]; rb != nil {
		rb.cancel()
	}
	c.mu.Unlock()
	c.r.ioMu.Lock()
	var keep []*backend
	for _, x := range c.r.list() {
		if x != b {
			keep = append(keep, x)
		}
	}
	c.r.setList(keep)
	c.r.ioMu.Unlock()
	if b.getMode() != ModeERR {
		b.mode.Store(int32(ModeERR))
		b.errMu.Lock()
		b.errMsg, b.errAt = "removed", time.Now()
		b.errMu.Unlock()
	}
	closeBackend(b)
	c.r.adjustTimeouts()
}

// SetReplicaMode changes a replica's mode to RW or ERR (ReplicaUpdate).
func (c *Controller) SetReplicaMode(addr string, m Mode) error {
	addr, err := NormalizeAddress(addr)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if m == ModeWO {
		return fmt.Errorf("%w: cannot set mode WO", ErrInvalid)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	b := c.find(addr)
	if b == nil {
		return fmt.Errorf("%w: replica %s", ErrNotFound, addr)
	}
	c.setMode(b, m, "set to ERR by request")
	return nil
}

// SetRebuildSyncLimit sets the concurrent sync limit (1..5).
func (c *Controller) SetRebuildSyncLimit(n int) error {
	if n < 1 || n > 5 {
		return fmt.Errorf("%w: concurrent sync limit %d must be 1..5", ErrInvalid, n)
	}
	c.mu.Lock()
	c.syncLimit = n
	c.mu.Unlock()
	return nil
}

// RebuildSyncLimit returns the concurrent sync limit.
func (c *Controller) RebuildSyncLimit() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncLimit
}

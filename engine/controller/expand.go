package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// Expand grows the volume to size bytes while it stays attached (Longhorn's
// Controller.Expand): it returns once the expansion started; the replicas
// expand with no I/O in flight, then the frontend learns the new size.
// Progress and errors show in Info (IsExpanding, LastExpansionError).
func (c *Controller) Expand(ctx context.Context, size int64) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if size <= 0 || size%SectorSize != 0 || size > replica.MaxVolumeSize {
		return fmt.Errorf("%w: size %d must be a positive multiple of %d up to %d", ErrInvalid, size, SectorSize,
			int64(replica.MaxVolumeSize))
	}
	cur := c.r.Size()
	if size == cur {
		return nil
	}
	if size < cur {
		return fmt.Errorf("%w: cannot shrink the volume from %d to %d bytes", ErrInvalid, cur, size)
	}
	if len(c.targets(ModeWO)) > 0 {
		return fmt.Errorf("%w: cannot expand while a replica is rebuilding", ErrPrecondition)
	}
	c.mu.Lock()
	if c.isExpanding {
		c.mu.Unlock()
		return fmt.Errorf("%w: an expansion is in progress", ErrPrecondition)
	}
	c.isExpanding, c.lastExpansionError, c.lastExpansionFailedAt = true, "", ""
	c.mu.Unlock()
	c.r.expanding.Store(true)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.expand(context.WithoutCancel(ctx), size)
	}()
	return nil
}

func (c *Controller) expand(ctx context.Context, size int64) {
	c.opMu.Lock()
	expanded, failures := c.expandReplicas(ctx, size)
	c.opMu.Unlock()
	var feErr error
	if expanded {
		c.mu.Lock()
		fe := c.fe
		c.mu.Unlock()
		if fe != nil && fe.State() == FrontendUp {
			feErr = fe.Expand(size)
		}
	}
	c.r.expanding.Store(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.isExpanding = false
	switch {
	case !expanded:
		c.lastExpansionError = "the expansion failed since all replica expansion failed: " + strings.Join(failures, "; ")
	case len(failures) > 0:
		c.lastExpansionError = "the expansion succeeded, but some replica expansion failed: " + strings.Join(failures, "; ")
	case feErr != nil:
		c.lastExpansionError = "the replicas expanded, but the frontend failed to: " + feErr.Error()
	}
	if c.lastExpansionError != "" {
		c.lastExpansionFailedAt = time.Now().UTC().Format(time.RFC3339Nano)
		c.log.WithField("size", size).Error(c.lastExpansionError)
		return
	}
	c.log.WithField("size", size).Info("volume expanded")
}

// expandReplicas expands every RW replica with I/O stopped; replicas that
// fail become ERR. It returns whether the volume now has the new size.
func (c *Controller) expandReplicas(ctx context.Context, size int64) (bool, []string) {
	c.r.ioMu.Lock()
	defer c.r.ioMu.Unlock()
	bs := c.targets(ModeRW)
	errs := onEach(ctx, bs, func(ctx context.Context, b *backend) error {
		_, err := b.rem.ctl.ReplicaExpand(ctx, &enginerpc.ReplicaExpandRequest{Size: size})
		return err
	})
	var failures []string
	ok := 0
	for i, err := range errs {
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", bs[i].addr, err))
			continue
		}
		ok++
	}
	if ok == 0 {
		return false, failures
	}
	for i, err := range errs {
		if err != nil {
			c.r.markERR(bs[i], fmt.Errorf("expand to %d: %w", size, err))
		}
	}
	c.r.size = size
	return true, failures
}

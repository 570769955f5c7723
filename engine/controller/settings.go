package controller

import (
	"context"
	"fmt"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// SetUnmapMarkSnapChainRemoved sets --unmap-mark-snap-chain-removed on the
// engine and every RW and WO replica; a replica that cannot take it is ERR.
func (c *Controller) SetUnmapMarkSnapChainRemoved(ctx context.Context, enabled bool) error {
	return c.pushSetting(ctx, "unmap-mark-snap-chain-removed", func() { c.unmapMarkChain = enabled },
		func(ctx context.Context, b *backend) error {
			_, err := b.rem.ctl.UnmapMarkDiskChainRemovedSet(ctx, &enginerpc.UnmapMarkDiskChainRemovedSetRequest{Enabled: enabled})
			return err
		})
}

// SetSnapshotMaxCount sets snapshot-max-count (2..250, Longhorn's range; 0
// restores the default 250).
func (c *Controller) SetSnapshotMaxCount(ctx context.Context, n int) error {
	if n != 0 && (n < 2 || n > 250) {
		return fmt.Errorf("%w: snapshot max count %d must be 2..250", ErrInvalid, n)
	}
	return c.pushSetting(ctx, "snapshot-max-count", func() { c.snapshotMaxCount = n },
		func(ctx context.Context, b *backend) error {
			_, err := b.rem.ctl.SnapshotMaxCountSet(ctx, &enginerpc.SnapshotMaxCountSetRequest{Count: int32(n)})
			return err
		})
}

// SetSnapshotMaxSize sets snapshot-max-size in bytes (0 = no limit).
func (c *Controller) SetSnapshotMaxSize(ctx context.Context, n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: snapshot max size %d must be >= 0", ErrInvalid, n)
	}
	return c.pushSetting(ctx, "snapshot-max-size", func() { c.snapshotMaxSize = n },
		func(ctx context.Context, b *backend) error {
			_, err := b.rem.ctl.SnapshotMaxSizeSet(ctx, &enginerpc.SnapshotMaxSizeSetRequest{Size: n})
			return err
		})
}

func (c *Controller) pushSetting(ctx context.Context, what string, set func(), push func(context.Context, *backend) error) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.mu.Lock()
	set()
	c.mu.Unlock()
	bs := c.targets(ModeRW, ModeWO)
	if len(bs) == 0 {
		return nil
	}
	return c.settle("set "+what, bs, onEach(ctx, bs, push))
}

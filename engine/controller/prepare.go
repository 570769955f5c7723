package controller

import (
	"context"
	"fmt"
	"sort"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// PrepareRebuild is Longhorn's ReplicaPrepareRebuild for the WO replica at
// addr (longhorn-engine-wire.md §7 step 8), with no I/O in flight: the
// target's revision counter is reset (counter enabled), the reference (the
// last RW replica) is listed, the target's disks the reference lacks are
// removed, the reference head's .meta is copied over the target head's,
// and the files to sync come back: every disk of the reference but its
// head and backing file, each followed by its .meta.
func (c *Controller) PrepareRebuild(ctx context.Context, addr string) ([]*enginerpc.SyncFileInfo, error) {
	addr, err := NormalizeAddress(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	b := c.find(addr)
	if b == nil {
		return nil, fmt.Errorf("%w: replica %s", ErrNotFound, addr)
	}
	if b.getMode() != ModeWO {
		return nil, fmt.Errorf("%w: replica %s is %v, not WO", ErrPrecondition, addr, b.getMode())
	}
	rws := c.targets(ModeRW)
	if len(rws) == 0 {
		return nil, fmt.Errorf("%w: no healthy replica to rebuild from", ErrPrecondition)
	}
	ref := rws[len(rws)-1]
	c.r.ioMu.Lock()
	defer c.r.ioMu.Unlock()
	cctx, cancel := callCtx(ctx)
	defer cancel()
	if !c.opts.DisableRevisionCounter {
		if _, err := b.rem.ctl.RevisionCounterSet(cctx, &enginerpc.RevisionCounterSetRequest{Counter: 0}); err != nil {
			return nil, fmt.Errorf("reset revision counter of %s: %w", addr, err)
		}
	}
	from, err := ref.rem.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("reference %s: %w", ref.addr, err)
	}
	to, err := b.rem.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", addr, err)
	}
	for _, name := range extraDisks(from, to) {
		if _, err := b.rem.ctl.DiskRemove(cctx, &enginerpc.DiskRemoveRequest{Name: name, Force: true}); err != nil {
			return nil, fmt.Errorf("remove extra disk %s from %s: %w", name, addr, err)
		}
	}
	if err := c.syncHeadMeta(ctx, ref, b, from.GetHead(), to.GetHead()); err != nil {
		return nil, err
	}
	return rebuildFiles(from), nil
}

// rebuildFiles lists the disks of the reference a target must receive.
func rebuildFiles(from *enginerpc.Replica) []*enginerpc.SyncFileInfo {
	var names []string
	for name := range from.GetDisks() {
		if name != from.GetHead() && name != from.GetBackingFile() {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var files []*enginerpc.SyncFileInfo
	for _, name := range names {
		files = append(files,
			&enginerpc.SyncFileInfo{FromFileName: name, ToFileName: name, ActualSize: from.GetDisks()[name].SizeBytes()},
			&enginerpc.SyncFileInfo{FromFileName: name + ".meta", ToFileName: name + ".meta"})
	}
	return files
}

// extraDisks are the target's disks (not its head) the reference lacks.
func extraDisks(from, to *enginerpc.Replica) []string {
	var out []string
	for name := range to.GetDisks() {
		if _, ok := from.GetDisks()[name]; !ok && name != to.GetHead() && name != to.GetBackingFile() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// syncHeadMeta copies the reference head's .meta over the target head's:
// a receiver on the target's agent, FileSend from the reference's.
func (c *Controller) syncHeadMeta(ctx context.Context, ref, b *backend, refHead, toHead string) error {
	if refHead == "" || toHead == "" {
		return fmt.Errorf("%w: replica without a head (reference %q, target %q)", ErrPrecondition, refHead, toHead)
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	recv, err := b.rem.agent.ReceiverLaunch(cctx, &enginerpc.ReceiverLaunchRequest{ToFileName: toHead + ".meta"})
	if err != nil {
		return fmt.Errorf("receiver for the head metadata on %s: %w", b.addr, err)
	}
	_, err = ref.rem.agent.FileSend(cctx, &enginerpc.FileSendRequest{FromFileName: refHead + ".meta", Host: b.rem.host,
		Port: recv.GetPort(), FileSyncHttpClientTimeout: int32(c.opts.FileSyncHTTPClientTimeout)})
	if err != nil {
		return fmt.Errorf("send the head metadata from %s to %s: %w", ref.addr, b.addr, err)
	}
	return nil
}

// VerifyRebuild is Longhorn's ReplicaVerifyRebuild: the WO replica at addr
// must have the same disks as an RW replica (removed ones included, heads
// and backing files left out), or it becomes ERR; its revision counter
// takes the RW replica's (counter enabled) and it becomes RW, with no I/O
// in flight. The rebuilding flag stays: whoever drives the rebuild clears
// it (Longhorn's CLI does, and refuses to when it is already clear).
func (c *Controller) VerifyRebuild(ctx context.Context, addr string) error {
	addr, err := NormalizeAddress(addr)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	b := c.find(addr)
	if b == nil {
		return fmt.Errorf("%w: replica %s", ErrNotFound, addr)
	}
	switch b.getMode() {
	case ModeRW:
		return nil
	case ModeERR:
		return fmt.Errorf("%w: replica %s is ERR", ErrPrecondition, addr)
	}
	srcs := c.targets(ModeRW)
	if len(srcs) == 0 {
		return fmt.Errorf("%w: no healthy replica to verify against", ErrPrecondition)
	}
	c.r.ioMu.Lock()
	defer c.r.ioMu.Unlock()
	from, err := srcs[0].rem.get(ctx)
	if err != nil {
		return err
	}
	to, err := b.rem.get(ctx)
	if err != nil {
		return err
	}
	if err := sameDisks(from, to); err != nil {
		err = fmt.Errorf("%w: replica %s vs %s: %v", ErrPrecondition, addr, srcs[0].addr, err)
		c.r.markERR(b, err)
		return err
	}
	if !c.opts.DisableRevisionCounter {
		cctx, cancel := callCtx(ctx)
		defer cancel()
		if _, err := b.rem.ctl.RevisionCounterSet(cctx, &enginerpc.RevisionCounterSetRequest{Counter: from.GetRevisionCounter()}); err != nil {
			return fmt.Errorf("set revision counter of %s: %w", addr, err)
		}
	}
	c.setMode(b, ModeRW, "")
	c.log.WithField("replica", addr).Info("rebuild verified, replica is RW")
	return nil
}

// sameDisks compares two replicas' disks other than their heads.
func sameDisks(a, b *enginerpc.Replica) error {
	names := func(r *enginerpc.Replica) map[string]string {
		m := map[string]string{}
		for n, d := range r.GetDisks() {
			if n != r.GetHead() && n != r.GetBackingFile() {
				m[n] = d.GetParent()
			}
		}
		return m
	}
	da, db := names(a), names(b)
	if len(da) != len(db) {
		return fmt.Errorf("%d disks vs %d", len(da), len(db))
	}
	for n, p := range da {
		q, ok := db[n]
		if !ok {
			return fmt.Errorf("disk %s missing", n)
		}
		if p != q {
			return fmt.Errorf("disk %s parent %q vs %q", n, p, q)
		}
	}
	if len(a.GetChain()) != len(b.GetChain()) {
		return fmt.Errorf("chain length %d vs %d", len(a.GetChain()), len(b.GetChain()))
	}
	return nil
}

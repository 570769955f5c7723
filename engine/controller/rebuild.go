package controller

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/syncagent"
)

// Rebuild states (Longhorn's ReplicaRebuildStatus.State).
const (
	RebuildInProgress = "in_progress"
	RebuildComplete   = "complete"
	RebuildError      = "error"
)

// rebuildPoll is how often the engine polls the target's sync agent.
const rebuildPoll = 300 * time.Millisecond

// rebuildState tracks one rebuild the engine runs (guarded by Controller.mu).
type rebuildState struct {
	addr     string
	from     string
	state    string
	err      string
	progress int32
	cancel   context.CancelFunc
}

// AddRequest is ReplicaAdd: rebuild a replica into the volume.
type AddRequest struct {
	Address      string
	InstanceName string
	// FastSync skips data ranges whose checksums already match.
	FastSync bool
	// FileSyncHTTPClientTimeout is in seconds (0 = the engine's default).
	FileSyncHTTPClientTimeout int
}

// AddReplica rebuilds a replica into the volume while I/O continues
// (Longhorn's sync.AddReplica, run by the engine): the volume is snapshotted
// on every replica and on the new one, the new replica joins as WO so it gets
// every new write, then the snapshot files are copied from an RW replica
// (sparse, checksum-skipping), the new replica reloads, its chain is checked
// and it becomes RW. It returns once the replica joined as WO; the copy runs
// in the background (RebuildStatus). A volume with no replica is started with
// this one instead.
func (c *Controller) AddReplica(ctx context.Context, req AddRequest) error {
	addr, err := NormalizeAddress(req.Address)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(c.r.list()) == 0 {
		return c.Start(ctx, []string{addr}, 0, 0, false)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if err := c.canAdd(ctx, addr); err != nil {
		return err
	}
	b, err := c.joinWO(ctx, addr, req.InstanceName, true)
	if err != nil {
		return err
	}
	if req.FileSyncHTTPClientTimeout <= 0 {
		req.FileSyncHTTPClientTimeout = c.opts.FileSyncHTTPClientTimeout
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rb := &rebuildState{addr: addr, state: RebuildInProgress, cancel: cancel}
	c.mu.Lock()
	c.rebuilds[addr] = rb
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		c.finishRebuild(b, rb, c.rebuild(rctx, b, rb, req))
	}()
	return nil
}

// canAdd checks Longhorn's conditions for adding a replica. Caller holds opMu.
func (c *Controller) canAdd(ctx context.Context, addr string) error {
	if old := c.find(addr); old != nil {
		if old.getMode() != ModeERR {
			return fmt.Errorf("%w: replica %s is already in the volume (%v)", ErrPrecondition, addr, old.getMode())
		}
		c.removeLocked(old)
	}
	if len(c.targets(ModeWO)) > 0 {
		return fmt.Errorf("%w: can only have one WO replica at a time", ErrPrecondition)
	}
	if c.r.expanding.Load() {
		return fmt.Errorf("%w: cannot add a replica during an expansion", ErrPrecondition)
	}
	if len(c.targets(ModeRW)) == 0 {
		return fmt.Errorf("%w: no healthy replica to rebuild from", ErrPrecondition)
	}
	for _, st := range c.purgeStatus(ctx, c.targets(ModeRW)) {
		if st.GetIsPurging() {
			return fmt.Errorf("%w: a snapshot purge is in progress", ErrPrecondition)
		}
	}
	return nil
}

// joinWO connects to the replica at addr, optionally snapshots the volume and
// the replica with the same (system) snapshot, and adds it in mode WO, all
// with no I/O in flight so that it misses no write. Caller holds opMu.
func (c *Controller) joinWO(ctx context.Context, addr, instanceName string, rebuilding bool) (*backend, error) {
	rem, err := newRemote(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	b := &backend{addr: addr, rem: rem}
	if err := c.prepareJoin(ctx, b, instanceName, rebuilding); err != nil {
		closeBackend(b)
		return nil, err
	}
	name := NewUUID()
	created := time.Now().UTC().Format(time.RFC3339)
	c.r.ioMu.Lock()
	bs := append(c.targets(ModeRW, ModeWO), b)
	errs := onEach(ctx, bs, func(ctx context.Context, x *backend) error {
		_, err := x.rem.ctl.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: name, Created: created})
		return err
	})
	if errs[len(errs)-1] != nil {
		c.r.ioMu.Unlock()
		closeBackend(b)
		return nil, fmt.Errorf("snapshot %s on the new replica %s: %w", name, addr, errs[len(errs)-1])
	}
	if err := c.settle("rebuild snapshot "+name, bs[:len(bs)-1], errs[:len(errs)-1]); err != nil {
		c.r.ioMu.Unlock()
		closeBackend(b)
		return nil, err
	}
	b.mode.Store(int32(ModeWO))
	c.r.setList(append(append([]*backend(nil), c.r.list()...), b))
	c.r.ioMu.Unlock()
	c.watch(b)
	c.log.WithField("replica", addr).WithField("snapshot", name).Info("replica added WO for rebuild")
	return b, nil
}

// prepareJoin opens the new replica, checks its identity, grows it to the
// volume size, marks it rebuilding and dials its data server.
func (c *Controller) prepareJoin(ctx context.Context, b *backend, instanceName string, rebuilding bool) error {
	info, err := c.openOne(ctx, b.rem, rebuilding)
	if err != nil {
		return fmt.Errorf("%w: replica %s: %v", ErrPrecondition, b.addr, err)
	}
	b.instanceName = info.GetInstanceName()
	if instanceName != "" && info.GetInstanceName() != "" && instanceName != info.GetInstanceName() {
		return fmt.Errorf("%w: replica %s is instance %q, not %q", ErrPrecondition, b.addr, info.GetInstanceName(), instanceName)
	}
	if info.GetRevisionCounterDisabled() != c.opts.DisableRevisionCounter {
		return fmt.Errorf("%w: replica %s has revision counter disabled=%v, the engine %v", ErrPrecondition,
			b.addr, info.GetRevisionCounterDisabled(), c.opts.DisableRevisionCounter)
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	size := c.r.Size()
	if info.GetSize() < size {
		if _, err := b.rem.ctl.ReplicaExpand(cctx, &enginerpc.ReplicaExpandRequest{Size: size}); err != nil {
			return fmt.Errorf("expand replica %s to %d: %w", b.addr, size, err)
		}
	} else if info.GetSize() > size {
		return fmt.Errorf("%w: replica %s is larger (%d) than the volume (%d)", ErrPrecondition, b.addr, info.GetSize(), size)
	}
	if rebuilding {
		if _, err := b.rem.ctl.RebuildingSet(cctx, &enginerpc.RebuildingSetRequest{Rebuilding: true}); err != nil {
			return fmt.Errorf("mark replica %s rebuilding: %w", b.addr, err)
		}
	}
	if err := c.syncReplicaSettings(ctx, b, info); err != nil {
		return err
	}
	b.data, err = b.rem.dialData(ctx, c.dataOpts())
	return err
}

// rebuild copies the snapshot files into the WO replica b and switches it to RW.
func (c *Controller) rebuild(ctx context.Context, b *backend, rb *rebuildState, req AddRequest) error {
	src, files, err := c.prepareRebuild(ctx, b)
	if err != nil {
		return err
	}
	c.mu.Lock()
	rb.from = src.addr
	c.mu.Unlock()
	c.log.WithFields(map[string]any{"replica": b.addr, "from": src.addr, "files": len(files)}).Info("rebuild: syncing files")
	cctx, cancel := callCtx(ctx)
	_, err = b.rem.agent.FilesSync(cctx, &enginerpc.FilesSyncRequest{
		FromAddress: src.addr, ToHost: b.rem.host, SyncFileInfoList: files,
		FastSync: req.FastSync, FileSyncHttpClientTimeout: int32(req.FileSyncHTTPClientTimeout)})
	cancel()
	if err != nil {
		return fmt.Errorf("start files sync on %s: %w", b.addr, err)
	}
	if err := c.waitFilesSync(ctx, b, rb); err != nil {
		return err
	}
	rctx, rcancel := callCtx(ctx)
	_, err = b.rem.ctl.ReplicaReload(rctx, &enginerpc.Empty{})
	rcancel()
	if err != nil {
		return fmt.Errorf("reload %s: %w", b.addr, err)
	}
	return c.VerifyRebuild(ctx, b.addr)
}

// prepareRebuild is Longhorn's PrepareRebuildReplica: reset the target's
// revision counter, list the source's disks (all but the head) with their
// .meta files, and remove the disks the target has and the source lacks.
func (c *Controller) prepareRebuild(ctx context.Context, b *backend) (*backend, []*enginerpc.SyncFileInfo, error) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	if _, err := b.rem.ctl.RevisionCounterSet(cctx, &enginerpc.RevisionCounterSetRequest{Counter: 0}); err != nil {
		return nil, nil, fmt.Errorf("reset revision counter of %s: %w", b.addr, err)
	}
	srcs := c.targets(ModeRW)
	if len(srcs) == 0 {
		return nil, nil, fmt.Errorf("%w: no healthy replica to rebuild from", ErrPrecondition)
	}
	src := srcs[int(c.r.rr.Add(1))%len(srcs)]
	from, err := src.rem.get(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("source %s: %w", src.addr, err)
	}
	to, err := b.rem.get(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("target %s: %w", b.addr, err)
	}
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
			&enginerpc.SyncFileInfo{FromFileName: name, ToFileName: name, ActualSize: from.GetDisks()[name].GetSize()},
			&enginerpc.SyncFileInfo{FromFileName: name + ".meta", ToFileName: name + ".meta"})
	}
	for name := range to.GetDisks() {
		if _, ok := from.GetDisks()[name]; ok || name == to.GetHead() {
			continue
		}
		if _, err := b.rem.ctl.DiskRemove(cctx, &enginerpc.DiskRemoveRequest{Name: name, Force: true}); err != nil {
			return nil, nil, fmt.Errorf("remove extra disk %s from %s: %w", name, b.addr, err)
		}
	}
	return src, files, nil
}

// waitFilesSync polls the target's sync agent until the copy ends.
func (c *Controller) waitFilesSync(ctx context.Context, b *backend, rb *rebuildState) error {
	t := time.NewTicker(rebuildPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if b.getMode() == ModeERR {
			return fmt.Errorf("replica %s failed during the rebuild", b.addr)
		}
		cctx, cancel := callCtx(ctx)
		st, err := b.rem.agent.ReplicaRebuildStatus(cctx, &enginerpc.Empty{})
		cancel()
		if err != nil {
			return fmt.Errorf("rebuild status of %s: %w", b.addr, err)
		}
		c.mu.Lock()
		rb.progress = min(st.GetProgress(), 99)
		c.mu.Unlock()
		switch {
		case st.GetState() == syncagent.StateError:
			return fmt.Errorf("files sync into %s: %s", b.addr, st.GetError())
		case !st.GetIsRebuilding() && st.GetState() == syncagent.StateComplete:
			return nil
		}
	}
}

// VerifyRebuild checks that a WO replica has the same disks as an RW replica,
// copies the RW replica's revision counter, clears its rebuilding flag and
// makes it RW (Longhorn's VerifyRebuildReplica), with no I/O in flight.
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
		return fmt.Errorf("%w: replica %s vs %s: %v", ErrPrecondition, addr, srcs[0].addr, err)
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	if _, err := b.rem.ctl.RevisionCounterSet(cctx, &enginerpc.RevisionCounterSetRequest{Counter: from.GetRevisionCounter()}); err != nil {
		return fmt.Errorf("set revision counter of %s: %w", addr, err)
	}
	if _, err := b.rem.ctl.RebuildingSet(cctx, &enginerpc.RebuildingSetRequest{Rebuilding: false}); err != nil {
		return fmt.Errorf("clear rebuilding flag of %s: %w", addr, err)
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

func (c *Controller) finishRebuild(b *backend, rb *rebuildState, err error) {
	c.mu.Lock()
	if err != nil {
		rb.state, rb.err = RebuildError, err.Error()
	} else {
		rb.state, rb.progress = RebuildComplete, 100
	}
	c.mu.Unlock()
	if err != nil {
		c.log.WithError(err).WithField("replica", b.addr).Error("rebuild failed")
		c.r.markERR(b, fmt.Errorf("rebuild: %w", err))
	}
}

// RebuildStatus is one rebuild as ReplicaRebuildingStatus reports it.
type RebuildStatus struct {
	IsRebuilding bool
	Error        string
	Progress     int32
	State        string
	From         string
}

// RebuildStatus reports, by address, the rebuild of every replica that is
// still WO, and the error of a failed rebuild whose replica is still listed
// (Longhorn reports only WO replicas; a finished rebuild's replica is RW).
func (c *Controller) RebuildStatus() map[string]RebuildStatus {
	listed := map[string]Mode{}
	for _, b := range c.r.list() {
		listed[b.addr] = b.getMode()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]RebuildStatus{}
	for addr, rb := range c.rebuilds {
		m, ok := listed[addr]
		if !ok || (m == ModeRW && rb.state == RebuildComplete) {
			continue
		}
		out[addr] = RebuildStatus{IsRebuilding: rb.state == RebuildInProgress, Error: rb.err,
			Progress: rb.progress, State: rb.state, From: rb.from}
	}
	return out
}

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
		rem, err := newRemote(addr)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		c.addBackend(&backend{addr: addr, rem: rem, instanceName: instanceName})
		return nil
	}
	rem, err := newRemote(addr)
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

package controller

import (
	"context"
	"fmt"
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

// rebuildPoll is how often the engine polls the target's sync agent for
// progress while FilesSync runs.
const rebuildPoll = 300 * time.Millisecond

// filesSyncTimeout bounds the FilesSync call of one rebuild (Longhorn's
// FileSend default, 24 h; the target's sync agent returns when every file
// arrived).
const filesSyncTimeout = 24 * time.Hour

// rebuildState tracks one rebuild the engine runs (guarded by Controller.mu).
type rebuildState struct {
	addr     string
	from     []string
	state    string
	err      string
	progress int32
	limit    int64 // bandwidth limit, MB/s (0 = none)
	cancel   context.CancelFunc
}

// AddRequest is ReplicaAdd: rebuild a replica into the volume.
type AddRequest struct {
	Address      string
	InstanceName string
	// FastSync skips files whose recorded checksums already match.
	FastSync bool
	// FileSyncHTTPClientTimeout is in seconds (0 = the engine's default).
	FileSyncHTTPClientTimeout int
	// BandwidthLimit caps what the rebuild writes, in MB/s of 2^20 bytes
	// (Longhorn's replicaRebuildingBandwidthLimit); 0 = no limit.
	BandwidthLimit int64
}

// AddReplica rebuilds a replica into the volume while I/O continues, in
// the order Longhorn's add-replica runs (longhorn-engine-wire.md §7), so
// the replica and the healthy ones may each be Longhorn's or ours: the new
// replica is opened, grown to the volume size and marked rebuilding; the
// volume is snapshotted on every replica and on the new one, which joins as
// WO and gets every new write; then, in the background, PrepareRebuild
// lists the files of the reference replica, the target's sync agent pulls
// them from the RW replicas (FilesSync, up to the concurrent sync limit
// of sources), the target reloads, VerifyRebuild makes it RW and its
// rebuilding flag is cleared. It returns once the replica joined as WO
// (RebuildStatus follows). A volume with no replica is started with this
// one instead.
func (c *Controller) AddReplica(ctx context.Context, req AddRequest) error {
	addr, err := NormalizeAddress(req.Address)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if req.BandwidthLimit < 0 {
		return fmt.Errorf("%w: bandwidth limit %d MB/s: want 0 (no limit) or more", ErrInvalid, req.BandwidthLimit)
	}
	if len(c.r.list()) == 0 {
		return c.Start(ctx, []string{addr}, 0, 0, false)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	t0 := time.Now()
	if err := c.canAdd(ctx, addr); err != nil {
		return err
	}
	b, err := c.joinWO(ctx, addr, req.InstanceName, true)
	if err != nil {
		return err
	}
	c.log.WithField("replica", addr).WithField("took", time.Since(t0).Round(time.Millisecond).String()).Info("rebuild: replica joined")
	if req.FileSyncHTTPClientTimeout <= 0 {
		req.FileSyncHTTPClientTimeout = c.opts.FileSyncHTTPClientTimeout
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rb := &rebuildState{addr: addr, state: RebuildInProgress, limit: req.BandwidthLimit, cancel: cancel}
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

// joinWO connects to the replica at addr, snapshots the volume and the
// replica with the same (system) snapshot, and adds it in mode WO, all
// with no I/O in flight so that it misses no write (the heads' dirty data
// is written back first, while I/O still flows: writeBack). Caller holds
// opMu.
func (c *Controller) joinWO(ctx context.Context, addr, instanceName string, rebuilding bool) (*backend, error) {
	rem, err := newRemote(addr, c.opts.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	b := &backend{addr: addr, rem: rem}
	t0 := time.Now()
	if err := c.prepareJoin(ctx, b, instanceName, rebuilding); err != nil {
		closeBackend(b)
		return nil, err
	}
	name := NewUUID()
	created := time.Now().UTC().Format(time.RFC3339)
	t1 := time.Now()
	c.writeBack()
	t2 := time.Now()
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
	c.log.WithFields(map[string]any{"replica": addr, "snapshot": name, "open": t1.Sub(t0).Round(time.Millisecond).String(),
		"write_back":   t2.Sub(t1).Round(time.Millisecond).String(),
		"snapshot_all": time.Since(t2).Round(time.Millisecond).String()}).Info("replica added WO for rebuild")
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
	if b.instanceName == "" {
		b.instanceName = instanceName
	}
	if info.GetRevisionCounterDisabled() != c.opts.DisableRevisionCounter {
		return fmt.Errorf("%w: replica %s has revision counter disabled=%v, the engine %v", ErrPrecondition,
			b.addr, info.GetRevisionCounterDisabled(), c.opts.DisableRevisionCounter)
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	size := c.r.Size()
	if info.SizeBytes() < size {
		if _, err := b.rem.ctl.ReplicaExpand(cctx, &enginerpc.ReplicaExpandRequest{Size: size}); err != nil {
			return fmt.Errorf("expand replica %s to %d: %w", b.addr, size, err)
		}
	} else if info.SizeBytes() > size {
		return fmt.Errorf("%w: replica %s is larger (%d) than the volume (%d)", ErrPrecondition, b.addr, info.SizeBytes(), size)
	}
	if rebuilding {
		if _, err := b.rem.ctl.RebuildingSet(cctx, &enginerpc.RebuildingSetRequest{Rebuilding: true}); err != nil {
			return fmt.Errorf("mark replica %s rebuilding: %w", b.addr, err)
		}
	}
	if err := c.syncReplicaSettings(ctx, b, info); err != nil {
		return err
	}
	b.data, err = b.rem.dialData(ctx, c.dataOpts(), info)
	return err
}

// rebuild copies the snapshot files into the WO replica b and switches it to RW.
func (c *Controller) rebuild(ctx context.Context, b *backend, rb *rebuildState, req AddRequest) error {
	tp := time.Now()
	files, err := c.PrepareRebuild(ctx, b.addr)
	if err != nil {
		return err
	}
	sources := c.syncSources()
	if len(sources) == 0 {
		return fmt.Errorf("%w: no healthy replica to rebuild from", ErrPrecondition)
	}
	c.mu.Lock()
	rb.from = sources
	c.mu.Unlock()
	c.log.WithFields(map[string]any{"replica": b.addr, "from": sources, "files": len(files),
		"prepare": time.Since(tp).Round(time.Millisecond).String()}).Info("rebuild: syncing files")
	fromMap := map[string]bool{}
	for _, s := range sources {
		fromMap[s] = true
	}
	syncReq := &enginerpc.FilesSyncRequest{
		FromAddress: sources[0], FromAddressMap: fromMap, ToHost: b.rem.host, SyncFileInfoList: files,
		FastSync: req.FastSync, FileSyncHttpClientTimeout: int32(req.FileSyncHTTPClientTimeout),
		GrpcTimeoutSeconds: int64(filesSyncTimeout / time.Second), BandwidthLimitBytesPerSecond: req.BandwidthLimit * syncagent.MiB}
	t0 := time.Now()
	if err := c.filesSync(ctx, b, rb, syncReq); err != nil {
		return err
	}
	t1 := time.Now()
	rctx, rcancel := callCtx(ctx)
	_, err = b.rem.ctl.ReplicaReload(rctx, empty)
	rcancel()
	if err != nil {
		return fmt.Errorf("reload %s: %w", b.addr, err)
	}
	t2 := time.Now()
	if err := c.VerifyRebuild(ctx, b.addr); err != nil {
		return err
	}
	c.log.WithFields(map[string]any{"replica": b.addr, "sync": t1.Sub(t0).Round(time.Millisecond).String(),
		"reload": t2.Sub(t1).Round(time.Millisecond).String(), "verify": time.Since(t2).Round(time.Millisecond).String()}).Info("rebuild: files synced")
	cctx, cancel := callCtx(ctx)
	defer cancel()
	if _, err := b.rem.ctl.RebuildingSet(cctx, &enginerpc.RebuildingSetRequest{Rebuilding: false}); err != nil {
		return fmt.Errorf("clear rebuilding flag of %s: %w", b.addr, err)
	}
	return nil
}

// syncSources returns the addresses of the RW replicas a rebuild copies
// from, in list order, up to the concurrent sync limit (Longhorn's CLI with
// controllerAPIVersion >= 6).
func (c *Controller) syncSources() []string {
	var out []string
	limit := c.RebuildSyncLimit()
	for _, b := range c.targets(ModeRW) {
		if len(out) == limit {
			break
		}
		out = append(out, b.addr)
	}
	return out
}

// filesSync runs the target's FilesSync, which returns when the copy is
// over, and follows its progress meanwhile.
func (c *Controller) filesSync(ctx context.Context, b *backend, rb *rebuildState, req *enginerpc.FilesSyncRequest) error {
	done := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, filesSyncTimeout)
		defer cancel()
		_, err := b.rem.agent.FilesSync(cctx, req)
		done <- err
	}()
	t := time.NewTicker(rebuildPoll)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("files sync into %s: %w", b.addr, err)
			}
			return nil
		case <-t.C:
		}
		if b.getMode() == ModeERR {
			return fmt.Errorf("replica %s failed during the rebuild", b.addr)
		}
		cctx, cancel := callCtx(ctx)
		st, err := b.rem.agent.ReplicaRebuildStatus(cctx, empty)
		cancel()
		if err == nil && st.GetState() == syncagent.StateInProgress {
			c.mu.Lock()
			rb.progress = min(st.GetProgress(), 99)
			c.mu.Unlock()
		}
	}
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
	From         []string
	// AppliedMBps is the rebuild's bandwidth limit, MB/s (0 = none).
	AppliedMBps int64
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
			Progress: rb.progress, State: rb.state, From: rb.from, AppliedMBps: rb.limit}
	}
	return out
}

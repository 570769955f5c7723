package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// lastModifyCheckPeriod: with the revision counter off, a salvage considers
// the replicas whose head changed within this period of the newest one
// (Longhorn's lastModifyCheckPeriod).
const lastModifyCheckPeriod = 5 * time.Second

// candidate is a replica opened by Start, with the state Start decides on.
type candidate struct {
	addr string
	rem  *remote
	info *enginerpc.Replica
	err  error
}

// Start opens the given replicas and serves them (VolumeStart): unreachable or
// unusable replicas are added as ERR; of the rest, those without the newest
// data are marked ERR (revision counter, or with the counter off and
// salvageRequested, head mtime within 5 s of the newest and the largest head).
// size and currentSize override --size/--current-size when non-zero. A
// started volume ignores a second Start, as Longhorn does.
func (c *Controller) Start(ctx context.Context, addrs []string, size, currentSize int64, salvage bool) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if len(c.r.list()) > 0 {
		return nil
	}
	c.mu.Lock()
	handed := c.handedOver != nil
	c.mu.Unlock()
	if handed {
		return fmt.Errorf("%w: the volume was handed over to a new engine (live upgrade)", ErrPrecondition)
	}
	return c.start(ctx, addrs, size, currentSize, salvage, c.opts.Frontend)
}

// start is Start under opMu; fe is the frontend to start ("" = none).
func (c *Controller) start(ctx context.Context, addrs []string, size, currentSize int64, salvage bool, fe string) error {
	if len(addrs) == 0 {
		return fmt.Errorf("%w: no replica addresses", ErrInvalid)
	}
	norm, err := normalizeAll(addrs)
	if err != nil {
		return err
	}
	if size == 0 {
		size = c.opts.Size
	}
	if currentSize == 0 {
		currentSize = c.opts.CurrentSize
	}
	cands := c.openAll(ctx, norm)
	size = decideSize(size, currentSize, cands)
	if size <= 0 {
		return c.failStart(cands, fmt.Errorf("%w: volume size unknown: pass --size", ErrInvalid))
	}
	ok := 0
	for _, cd := range cands {
		if cd.err == nil && cd.info.SizeBytes() != size {
			cd.err = fmt.Errorf("size %d differs from the volume size %d", cd.info.SizeBytes(), size)
		}
		if cd.err == nil {
			ok++
		}
	}
	if ok == 0 {
		return c.failStart(cands, fmt.Errorf("%w: no usable replica among %v: %v", ErrPrecondition, norm, firstErr(cands)))
	}
	c.r.ioMu.Lock()
	c.r.size = size
	c.r.ioMu.Unlock()
	for _, cd := range cands {
		c.admit(ctx, cd)
	}
	c.pickNewest(ctx, salvage)
	if len(c.targets(ModeRW)) == 0 {
		err := fmt.Errorf("%w: no replica usable among %v: %s", ErrPrecondition, norm, c.errSummary())
		c.r.ioMu.Lock()
		bs := c.r.list()
		c.r.setList(nil)
		c.r.ioMu.Unlock()
		for _, b := range bs {
			closeBackend(b)
		}
		return err
	}
	c.mu.Lock()
	c.started = true
	c.mu.Unlock()
	if fe != "" {
		return c.startFrontend(ctx, fe)
	}
	return nil
}

// errSummary lists why replicas are ERR.
func (c *Controller) errSummary() string {
	var parts []string
	for _, r := range c.Replicas() {
		if r.Mode == ModeERR {
			parts = append(parts, r.Address+": "+r.Error)
		}
	}
	return strings.Join(parts, "; ")
}

func normalizeAll(addrs []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, a := range addrs {
		n, err := NormalizeAddress(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if seen[n] {
			return nil, fmt.Errorf("%w: duplicate replica address %s", ErrInvalid, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

func firstErr(cands []*candidate) error {
	for _, cd := range cands {
		if cd.err != nil {
			return fmt.Errorf("%s: %w", cd.addr, cd.err)
		}
	}
	return nil
}

func (c *Controller) failStart(cands []*candidate, err error) error {
	for _, cd := range cands {
		if cd.rem != nil {
			cd.rem.close()
		}
	}
	return err
}

// openAll contacts every replica in parallel: get its state and open it when
// closed. A single replica gets a stale Rebuilding flag cleared (Longhorn
// issue 6626).
func (c *Controller) openAll(ctx context.Context, addrs []string) []*candidate {
	cands := make([]*candidate, len(addrs))
	done := make(chan struct{}, len(addrs))
	for i, a := range addrs {
		cands[i] = &candidate{addr: a}
		go func(cd *candidate) {
			defer func() { done <- struct{}{} }()
			cd.rem, cd.err = newRemote(cd.addr, c.opts.Name)
			if cd.err != nil {
				return
			}
			cd.info, cd.err = c.openOne(ctx, cd.rem, len(addrs) == 1)
		}(cands[i])
	}
	for range addrs {
		<-done
	}
	return cands
}

// openOne gets a replica's state and opens it when closed. resetRebuilding
// clears a stale Rebuilding flag: for the single replica of a volume at start
// (Longhorn issue 6626) and for a replica about to be rebuilt (Longhorn's
// checkAndResetFailedRebuild); otherwise a rebuilding replica is refused.
func (c *Controller) openOne(ctx context.Context, rem *remote, resetRebuilding bool) (*enginerpc.Replica, error) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	info, err := c.notInUse(cctx, rem)
	if err != nil {
		return nil, err
	}
	if len(info.GetExtensions()) == 0 && info.GetState() != "closed" {
		// A Longhorn replica does not count its data connections: as
		// Longhorn's controller, take it only closed (another engine may
		// be using an open one).
		return nil, fmt.Errorf("replica must be closed, cannot add in state: %s", info.GetState())
	}
	if info.GetState() == "closed" {
		resp, err := rem.ctl.ReplicaOpen(cctx, &enginerpc.ReplicaOpenRequest{})
		if err != nil {
			return nil, err
		}
		info = resp.GetReplica()
	}
	if resetRebuilding && info.GetRebuilding() {
		if r, err := rem.ctl.RebuildingSet(cctx, &enginerpc.RebuildingSetRequest{Rebuilding: false}); err == nil {
			info = r.GetReplica()
		} else {
			c.log.WithError(err).WithField("replica", rem.addr).Warn("cannot reset the rebuilding flag")
		}
	}
	switch info.GetState() {
	case "open", "dirty":
	default:
		return nil, fmt.Errorf("replica state %q, want open or dirty", info.GetState())
	}
	return info, nil
}

// inUseWait is how long notInUse waits for the data connections of an
// engine that just went away (killed, or this one after dropping the
// replica) to close.
const inUseWait = 3 * time.Second

// notInUse returns the replica's state once no data connection is open to
// it. An engine keeps its data connections open while it uses a replica;
// a second engine writing to the same replica would make the replicas
// diverge (Longhorn refuses a replica that is not closed for the same
// reason). Errors: ErrPrecondition when connections stay open.
func (c *Controller) notInUse(ctx context.Context, rem *remote) (*enginerpc.Replica, error) {
	deadline := time.Now().Add(inUseWait)
	for {
		resp, err := rem.ctl.ReplicaGet(ctx, empty)
		info := resp.GetReplica()
		if err != nil || info.GetDataConnections() == 0 {
			return info, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: replica %s is in use: %d data connections are open (another engine?)",
				ErrPrecondition, rem.addr, info.GetDataConnections())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// decideSize is Longhorn's determineCorrectVolumeSize: the requested size,
// unless an expansion was interrupted (current size given and the replicas
// do not all have the requested size), then the current size.
func decideSize(size, current int64, cands []*candidate) int64 {
	if current == 0 {
		if size == 0 {
			for _, cd := range cands {
				if cd.err == nil {
					return cd.info.SizeBytes()
				}
			}
		}
		return size
	}
	sizes := map[int64]bool{}
	for _, cd := range cands {
		if cd.err == nil {
			sizes[cd.info.SizeBytes()] = true
		}
	}
	if len(sizes) == 1 && sizes[size] {
		return size
	}
	return current
}

// admit adds one candidate: RW with its data connections, or ERR.
func (c *Controller) admit(ctx context.Context, cd *candidate) {
	b := &backend{addr: cd.addr, rem: cd.rem}
	if cd.info != nil {
		b.instanceName = cd.info.GetInstanceName()
	}
	if cd.err == nil && cd.info.GetRevisionCounterDisabled() != c.opts.DisableRevisionCounter {
		cd.err = fmt.Errorf("revision counter disabled=%v on the replica, %v on the engine",
			cd.info.GetRevisionCounterDisabled(), c.opts.DisableRevisionCounter)
	}
	if cd.err == nil {
		if err := c.syncReplicaSettings(ctx, b, cd.info); err != nil {
			cd.err = err
		}
	}
	if cd.err == nil {
		b.data, cd.err = cd.rem.dialData(ctx, c.dataOpts(), cd.info)
	}
	if cd.err != nil {
		b.errMsg, b.errAt = cd.err.Error(), time.Now()
		c.log.WithError(cd.err).WithField("replica", cd.addr).Warn("replica unusable at start, marking ERR")
		c.addBackend(b)
		return
	}
	b.mode.Store(int32(ModeRW))
	c.addBackend(b)
}

// syncReplicaSettings pushes the engine's unmap-mark-snap-chain-removed and
// snapshot limits to a replica whose settings differ.
func (c *Controller) syncReplicaSettings(ctx context.Context, b *backend, info *enginerpc.Replica) error {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	c.mu.Lock()
	unmap, maxCount, maxSize := c.unmapMarkChain, c.snapshotMaxCount, c.snapshotMaxSize
	c.mu.Unlock()
	if info.GetUnmapMarkDiskChainRemoved() != unmap {
		if _, err := b.rem.ctl.UnmapMarkDiskChainRemovedSet(cctx, &enginerpc.UnmapMarkDiskChainRemovedSetRequest{Enabled: unmap}); err != nil {
			return err
		}
	}
	if maxCount > 0 {
		if _, err := b.rem.ctl.SnapshotMaxCountSet(cctx, &enginerpc.SnapshotMaxCountSetRequest{Count: int32(maxCount)}); err != nil {
			return err
		}
	}
	if maxSize > 0 {
		if _, err := b.rem.ctl.SnapshotMaxSizeSet(cctx, &enginerpc.SnapshotMaxSizeSetRequest{Size: maxSize}); err != nil {
			return err
		}
	}
	return nil
}

// pickNewest marks ERR every RW replica without the newest data.
func (c *Controller) pickNewest(ctx context.Context, salvage bool) {
	var rw []*backend
	for _, b := range c.r.list() {
		if b.getMode() == ModeRW {
			rw = append(rw, b)
		}
	}
	infos := make([]replicaState, 0, len(rw))
	for _, b := range rw {
		info, err := b.rem.get(ctx)
		if err != nil {
			c.r.markERR(b, err)
			continue
		}
		infos = append(infos, replicaState{addr: b.addr, counter: info.GetRevisionCounter(),
			mtime: info.GetLastModifyTime(), headSize: info.GetHeadFileSize()})
	}
	keep := chooseReplicas(infos, !c.opts.DisableRevisionCounter, salvage)
	for _, b := range rw {
		if !keep[b.addr] && b.getMode() == ModeRW {
			c.r.markERR(b, fmt.Errorf("replica does not have the newest data (start)"))
		}
	}
}

// replicaState is what chooseReplicas compares.
type replicaState struct {
	addr     string
	counter  int64
	mtime    int64 // head mtime, Unix ns
	headSize int64 // head allocated bytes
}

// chooseReplicas decides which replicas keep RW at start (pure):
//   - revision counter on: those with the highest counter;
//   - counter off with salvage: one replica, among those whose head changed
//     within 5 s of the newest head, the one with the largest head (ties:
//     the newest, then the first address);
//   - counter off without salvage: all.
func chooseReplicas(rs []replicaState, counterOn, salvage bool) map[string]bool {
	keep := map[string]bool{}
	if len(rs) == 0 {
		return keep
	}
	switch {
	case counterOn:
		var best int64 = -1
		for _, r := range rs {
			best = max(best, r.counter)
		}
		for _, r := range rs {
			if r.counter == best {
				keep[r.addr] = true
			}
		}
	case salvage:
		var newest int64
		for _, r := range rs {
			newest = max(newest, r.mtime)
		}
		var cands []replicaState
		for _, r := range rs {
			if r.mtime+int64(lastModifyCheckPeriod) >= newest {
				cands = append(cands, r)
			}
		}
		sort.SliceStable(cands, func(i, j int) bool {
			if cands[i].headSize != cands[j].headSize {
				return cands[i].headSize > cands[j].headSize
			}
			if cands[i].mtime != cands[j].mtime {
				return cands[i].mtime > cands[j].mtime
			}
			return cands[i].addr < cands[j].addr
		})
		keep[cands[0].addr] = true
	default:
		for _, r := range rs {
			keep[r.addr] = true
		}
	}
	return keep
}

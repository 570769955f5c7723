package controller

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// rebuildRequestTimeout: a ReplicaAdd that shows no WO replica and no
// rebuild status within this time counts as failed.
const rebuildRequestTimeout = 60 * time.Second

// rebuildRecord is the engine controller's memory of one rebuild.
type rebuildRecord struct {
	state       lifecycle.RebuildState
	requestedAt time.Time
}

func (c *EngineController) record(engine, replica string) *rebuildRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.rebuilds[engine]
	if m == nil {
		m = map[string]*rebuildRecord{}
		c.rebuilds[engine] = m
	}
	r := m[replica]
	if r == nil {
		r = &rebuildRecord{}
		m[replica] = r
	}
	return r
}

// reconcileReplicas makes the engine's replica set follow
// spec.replicaAddressMap: replicas the engine lists but the spec does not,
// and ERR replicas, are removed; spec replicas the engine lacks are rebuilt
// (one lifecycle.NextRebuild step each), within
// concurrent-replica-rebuild-per-node-limit.
//
// A spec replica left waiting (its process not running yet, or the limit
// reached) gives WaitShort: what it waits for may change on objects that do
// not enqueue this engine (another engine's rebuild ending).
func (c *EngineController) reconcileReplicas(ctx context.Context, e *longhorn.Engine, obs *engineObservation) (Result, error) {
	// While spec.upgradedReplicaAddressMap is set, the replica set is
	// changing hands (live upgrade): nothing is added or removed.
	if obs == nil || obs.Err != "" || e.DeletionTimestamp != nil || len(e.Spec.UpgradedReplicaAddressMap) > 0 {
		return Done, nil
	}
	client, err := c.api.Engine(ctx, imAddressOfEngine(e), engineRef(e))
	if err != nil {
		return Done, err
	}
	c.noteClientPath(e, client)
	inEngine := map[string]engineapi.Replica{}
	for _, r := range obs.Replicas {
		n := replicaNameForAddress(e, r)
		addr, wanted := e.Spec.ReplicaAddressMap[n]
		if !wanted || addr != strings.TrimPrefix(r.Address, "tcp://") || r.Mode == engineapi.ReplicaModeERR {
			if err := client.ReplicaRemove(ctx, r.Address, r.InstanceName); err != nil && !engineapi.IsNotFound(err) {
				return Done, err
			}
			continue
		}
		inEngine[n] = r
	}
	res := Done
	for name, addr := range e.Spec.ReplicaAddressMap {
		waiting, err := c.stepRebuild(ctx, e, client, name, addr, inEngine)
		if err != nil {
			return Done, err
		}
		if waiting {
			res = WaitShort
		}
	}
	return res, c.cleanupAfterRebuild(ctx, e, client, obs)
}

// cleanupAfterRebuild removes the system snapshots a rebuild left behind
// once no replica is rebuilding, when auto-cleanup-system-generated-snapshot
// is on (Longhorn's default): without it each rebuild adds a snapshot, and
// every replica grows by the data written between two rebuilds. A purge the
// engine refuses (a rebuild started meanwhile) is tried again on a later
// sync.
func (c *EngineController) cleanupAfterRebuild(ctx context.Context, e *longhorn.Engine, client engineapi.EngineClient, obs *engineObservation) error {
	if !c.takeCleanup(e.Name, false) {
		return nil
	}
	for _, r := range obs.Replicas {
		if r.Mode == engineapi.ReplicaModeWO {
			c.takeCleanup(e.Name, true)
			return nil
		}
	}
	on, err := c.ds.GetSettingAsBool(ctx, types.SettingNameAutoCleanupSystemGeneratedSnapshot)
	if err != nil || !on {
		return err
	}
	if off, _ := c.ds.GetSettingAsBool(ctx, types.SettingNameDisableSnapshotPurge); off {
		c.takeCleanup(e.Name, true) // cleaned up once purging is allowed again
		return nil
	}
	names, err := engineapi.CleanupSystemSnapshots(ctx, client)
	if len(names) > 0 {
		c.recorder.Eventf(e, corev1.EventTypeNormal, "SystemSnapshotsCleanedUp",
			"Removing %d system snapshot(s) of volume %s after rebuilding: %s", len(names), e.Spec.VolumeName, strings.Join(names, ", "))
	}
	if err != nil {
		c.takeCleanup(e.Name, true)
	}
	if engineapi.Code(err) == codes.FailedPrecondition {
		return nil
	}
	return err
}

// takeCleanup reads and clears the engine's pending cleanup (set=false), or
// marks one pending (set=true); it reports whether one was pending.
func (c *EngineController) takeCleanup(engine string, set bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.cleanups[engine]
	if set {
		c.cleanups[engine] = true
	} else {
		delete(c.cleanups, engine)
	}
	return was
}

// stepRebuild takes one lifecycle.NextRebuild step for spec replica name; it
// reports whether the replica waits, outside the engine and not requested.
func (c *EngineController) stepRebuild(ctx context.Context, e *longhorn.Engine, client engineapi.EngineClient,
	name, addr string, inEngine map[string]engineapi.Replica) (bool, error) {
	rec := c.record(e.Name, name)
	r, listed := inEngine[name]
	o := lifecycle.RebuildObserved{InEngine: listed, Mode: lifecycle.ReplicaMode(r.Mode), Timeout: rebuildRequestTimeout}
	if rs := e.Status.RebuildStatus["tcp://"+addr]; rs != nil {
		o.StatusError, o.StatusRebuilding = rs.Error, rs.IsRebuilding
	}
	if !rec.requestedAt.IsZero() {
		o.SinceRequested = c.now().Sub(rec.requestedAt)
	}
	if rep, err := c.ds.GetReplicaRO(ctx, name); err == nil {
		o.ReplicaRunning = rep.Status.CurrentState == longhorn.InstanceStateRunning &&
			rep.Spec.FailedAt == "" && replicaAddress(rep) == addr
		if rec.state == lifecycle.RebuildIdle && !listed && o.ReplicaRunning {
			o.Allowed = c.rebuildAllowed(ctx, rep.Spec.NodeID)
		}
	}
	next, acts := lifecycle.NextRebuild(rec.state, o)
	rec.state = next
	for _, a := range acts {
		switch a {
		case lifecycle.ActionAddReplica:
			rec.requestedAt = c.now()
			if err := client.ReplicaAdd(ctx, c.replicaAddRequest(ctx, e, name, addr)); err != nil {
				rec.state = lifecycle.RebuildIdle
				return false, err
			}
			c.recorder.Eventf(e, corev1.EventTypeNormal, "Rebuilding", "Start rebuilding replica %s with address %s", name, addr)
		case lifecycle.ActionRebuildFailed:
			c.recorder.Eventf(e, corev1.EventTypeWarning, "FailedRebuilding", "Failed rebuilding replica %s", name)
			if err := client.ReplicaRemove(ctx, "tcp://"+addr, name); err != nil && !engineapi.IsNotFound(err) {
				return false, err
			}
		case lifecycle.ActionRebuildDone:
			c.recorder.Eventf(e, corev1.EventTypeNormal, "Rebuilt", "Replica %s with address %s rebuilt", name, addr)
			c.takeCleanup(e.Name, true)
		}
	}
	if next == lifecycle.RebuildFailed {
		rec.state, rec.requestedAt = lifecycle.RebuildIdle, time.Time{}
	}
	return next == lifecycle.RebuildIdle && !listed, nil
}

func (c *EngineController) replicaAddRequest(ctx context.Context, e *longhorn.Engine, name, addr string) engineapi.ReplicaAddRequest {
	fast, err := c.ds.GetSettingAsBoolByDataEngine(ctx, types.SettingNameFastReplicaRebuildEnabled, longhorn.DataEngineTypeV1)
	if err != nil {
		fast = false
	}
	limit, err := c.ds.GetSettingAsIntByDataEngine(ctx, types.SettingNameReplicaRebuildConcurrentSyncLimit, longhorn.DataEngineTypeV1)
	if err != nil {
		limit = 0
	}
	if e.Spec.RebuildConcurrentSyncLimit > 0 {
		limit = int64(e.Spec.RebuildConcurrentSyncLimit)
	}
	return engineapi.ReplicaAddRequest{Address: "tcp://" + addr, InstanceName: name, Size: e.Spec.VolumeSize,
		CurrentSize: e.Status.CurrentSize, FastSync: fast, ConcurrentSyncLimit: int32(limit),
		BandwidthLimit: c.rebuildBandwidthLimit(ctx, e)}
}

// rebuildBandwidthLimit is the rebuild bandwidth limit of e's volume, MB/s
// of 2^20 bytes, 0 = none, by Longhorn's rule: the volume's
// replicaRebuildingBandwidthLimit when above 0, else the setting
// replica-rebuilding-bandwidth-limit for the volume's data engine (this
// product also reads a "v1" entry; a negative value is no limit).
func (c *EngineController) rebuildBandwidthLimit(ctx context.Context, e *longhorn.Engine) int64 {
	engine := e.Spec.DataEngine
	if engine == "" {
		engine = longhorn.DataEngineTypeV1
	}
	if v, err := c.ds.GetVolumeRO(ctx, e.Spec.VolumeName); err == nil && v.Spec.ReplicaRebuildingBandwidthLimit > 0 {
		return v.Spec.ReplicaRebuildingBandwidthLimit
	}
	global, err := c.ds.GetSettingAsIntByDataEngine(ctx, types.SettingNameReplicaRebuildingBandwidthLimit, engine)
	if err != nil || global < 0 {
		return 0
	}
	return global
}

// rebuildAllowed checks concurrent-replica-rebuild-per-node-limit for a
// replica on node (Longhorn counts rebuilding replicas per node across every
// volume).
func (c *EngineController) rebuildAllowed(ctx context.Context, node string) bool {
	limit, err := c.ds.GetSettingAsInt(ctx, types.SettingNameConcurrentReplicaRebuildPerNodeLimit)
	if err != nil {
		return false
	}
	engines, err := c.ds.ListEnginesRO(ctx, nil)
	if err != nil {
		return false
	}
	return rebuildUnderLimit(engines, func(replica string) string {
		if r, err := c.ds.GetReplicaRO(ctx, replica); err == nil {
			return r.Spec.NodeID
		}
		return ""
	}, node, limit)
}

// rebuildUnderLimit reports whether one more replica on node may start
// rebuilding: the WO (rebuilding) replicas on node, over every engine, must
// number fewer than limit; a limit of 0 or less disables rebuilding.
// nodeOf maps a replica name to its node ("" when unknown).
func rebuildUnderLimit(engines []*longhorn.Engine, nodeOf func(replica string) string, node string, limit int64) bool {
	if limit <= 0 {
		return false
	}
	var n int64
	for _, e := range engines {
		for rname, mode := range e.Status.ReplicaModeMap {
			if mode == longhorn.ReplicaModeWO && nodeOf(rname) == node {
				n++
			}
		}
	}
	return n < limit
}

// replicaAddress is "storageIP:port" of a running replica.
func replicaAddress(r *longhorn.Replica) string {
	if r.Status.StorageIP == "" || r.Status.Port == 0 {
		return ""
	}
	return joinHostPort(r.Status.StorageIP, r.Status.Port)
}

// reconcileExpansion asks the engine to grow to spec.volumeSize.
func (c *EngineController) reconcileExpansion(ctx context.Context, e *longhorn.Engine, obs *engineObservation) error {
	if obs == nil || obs.Volume == nil || e.Status.IsExpanding || e.Spec.VolumeSize <= e.Status.CurrentSize || e.Status.CurrentSize == 0 {
		return nil
	}
	client, err := c.api.Engine(ctx, imAddressOfEngine(e), engineRef(e))
	if err != nil {
		return err
	}
	if err := client.VolumeExpand(ctx, e.Spec.VolumeSize); err != nil {
		return err
	}
	c.recorder.Eventf(e, corev1.EventTypeNormal, "Expanding", "Expanding volume %s from %d to %d bytes", e.Spec.VolumeName, e.Status.CurrentSize, e.Spec.VolumeSize)
	e.Status.IsExpanding = true
	return nil
}

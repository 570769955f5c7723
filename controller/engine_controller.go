package controller

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// EngineController runs engine processes, mirrors what the engine monitor
// observes into status, and starts rebuilds and replica removals.
type EngineController struct {
	*env
	w        *Worker
	monitors *engineMonitors

	mu       sync.Mutex
	rebuilds map[string]map[string]*rebuildRecord // engine -> replica -> record
	cleanups map[string]bool                      // engines with system snapshots to clean up
	restores map[string]restoreStart              // engine -> the restore it last started
	clones   map[string]cloneStart                // engine -> the clone it last asked for
	// paths is how each engine was last reached: true through the
	// instance manager's proxy, false directly (an instance manager older
	// than the proxy). Kept while the Engine object exists, across stops
	// and ownership moves (forget keeps it), so that the first attach
	// through a newer instance manager records EngineClientProxy.
	paths map[string]bool
}

func newEngineController(e *env) (runner, error) {
	c := &EngineController{env: e, rebuilds: map[string]map[string]*rebuildRecord{}, cleanups: map[string]bool{}, restores: map[string]restoreStart{}, clones: map[string]cloneStart{}, paths: map[string]bool{}}
	c.w = NewWorker("longhorn-engine", c.syncEngine)
	c.monitors = newEngineMonitors(e.api, c.w.Enqueue)
	if err := addHandler(e.ds.EngineInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	byNode := func(obj any) {
		node := nameOf(obj)
		if im, ok := obj.(*longhorn.InstanceManager); ok {
			node = im.Spec.NodeID
		}
		es, err := e.ds.ListEnginesByNodeRO(context.Background(), node)
		if err != nil {
			return
		}
		for _, en := range es {
			c.w.Enqueue(e.key(en.Name))
		}
	}
	// An instance manager's state, address or ownership concerns all of
	// its node's engines; a process that starts or stops only its own.
	if err := addHandler(e.ds.InstanceManagerInformer(), onIMFanout(func(im *longhorn.InstanceManager) { byNode(im) },
		func(_ *longhorn.InstanceManager, engines, replicas []string) {
			for _, name := range engines {
				c.w.Enqueue(e.key(name))
			}
		})); err != nil {
		return nil, err
	}
	// Disk capacity (every replica scheduled) concerns scheduling only.
	if err := addHandler(e.ds.NodeInformer(), onNodeFanout(func(n *longhorn.Node, scope nodeFanout) {
		if scope == nodeFanoutAll {
			byNode(n)
		}
	})); err != nil {
		return nil, err
	}
	// A replica that starts or stops may be rebuilt or dropped by its engine.
	if err := addHandler(e.ds.ReplicaInformer(), onChange(func(obj any) {
		if r, ok := obj.(*longhorn.Replica); ok {
			es, _ := e.ds.ListEnginesByVolumeRO(context.Background(), r.Spec.VolumeName)
			for _, en := range es {
				c.w.Enqueue(e.key(en.Name))
			}
		}
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *EngineController) run(ctx context.Context, workers int) error {
	defer c.monitors.stopAll()
	return c.w.Run(ctx, workers)
}

// syncEngine reconciles one engine.
func (c *EngineController) syncEngine(ctx context.Context, key string) (Result, error) {
	name := splitKey(key)
	eRO, err := c.ds.GetEngineRO(ctx, name)
	if apierrors.IsNotFound(err) {
		c.forget(name)
		c.mu.Lock()
		delete(c.paths, name)
		c.mu.Unlock()
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, eRO.Spec.NodeID, eRO.Status.OwnerID) {
		c.forget(name)
		return Done, nil
	}
	if c.skipReconcile(eRO, "Engine") {
		return Done, nil
	}
	e := eRO.DeepCopy()
	e.Status.OwnerID = c.opts.NodeName
	if e.DeletionTimestamp != nil {
		e.Spec.DesireState = longhorn.InstanceStateStopped
	}
	err = c.reconcileInstance(ctx, instanceTarget{
		Object: e, Name: e.Name, Type: engineapi.InstanceTypeEngine, Spec: &e.Spec.InstanceSpec, Status: &e.Status.InstanceStatus,
		ProcessSpec: func(im *longhorn.InstanceManager) (engineapi.InstanceSpec, error) {
			spec, err := engineProcessSpec(e, im, c.engineSettings(ctx))
			if err != nil {
				return spec, err
			}
			l, err := volumeResourceLimits(ctx, c.ds, e.Spec.VolumeName)
			spec.Limits = types.EngineLimits(l)
			return spec, err
		},
	})
	if err != nil {
		return Done, err
	}
	res, err := c.reconcileUpgrade(ctx, e)
	if err != nil {
		return Done, err
	}
	r, err := c.reconcileObserved(ctx, key, e)
	if err != nil {
		return Done, err
	}
	res = sooner(res, r)
	if e.Status.CurrentState != longhorn.InstanceState(e.Spec.DesireState) {
		res = sooner(res, WaitShort)
	}
	if !reflect.DeepEqual(eRO.Status, e.Status) {
		if _, err := c.ds.UpdateEngineStatus(ctx, e); err != nil {
			if apierrors.IsConflict(err) {
				return Done, nil
			}
			return Done, fmt.Errorf("update engine %s status: %w", e.Name, err)
		}
	}
	if e.DeletionTimestamp != nil {
		return c.reconcileDelete(ctx, e)
	}
	return res, nil
}

// reconcileObserved applies what the engine monitor observes of a running
// engine and takes the steps that depend on it (rebuilds, expansion,
// restore, clone); a stopped engine forgets its monitor. While a live
// upgrade holds the engine, nothing is applied: the old engine hands the
// volume over, and what it reports meanwhile (no replicas, no frontend) must
// not fail replicas or detach the volume.
func (c *EngineController) reconcileObserved(ctx context.Context, key string, e *longhorn.Engine) (Result, error) {
	if phase, _ := upgradePhase(e); phase.Holding() || wantsUpgrade(e) {
		return Done, nil
	}
	if e.Status.CurrentState != longhorn.InstanceStateRunning || e.Status.IP == "" {
		c.forget(e.Name)
		clearObservation(e)
		return Done, nil
	}
	c.monitors.ensure(e.Name, engineTarget{Key: key, IM: imAddressOfEngine(e), Ref: engineRef(e),
		Restore: e.Spec.RequestedBackupRestore != "", Clone: e.Spec.RequestedDataSource != ""})
	obs := c.monitors.latest(e.Name)
	applyObservation(e, obs)
	res, err := c.reconcileReplicas(ctx, e, obs)
	if err != nil {
		return Done, err
	}
	if err := c.reconcileExpansion(ctx, e, obs); err != nil {
		return Done, err
	}
	for _, step := range []func(context.Context, *longhorn.Engine, *engineObservation) (Result, error){c.reconcileRestore, c.reconcileClone} {
		r, err := step(ctx, e, obs)
		if err != nil {
			return Done, err
		}
		res = sooner(res, r)
	}
	return res, nil
}

// forget drops what the controller tracks for a stopped engine (its
// monitor, rebuild, cleanup, restore and clone records); the client path
// is dropped only with the object.
func (c *EngineController) forget(name string) {
	c.monitors.stop(name)
	c.mu.Lock()
	delete(c.rebuilds, name)
	delete(c.cleanups, name)
	delete(c.restores, name)
	delete(c.clones, name)
	c.mu.Unlock()
}

// reconcileDelete removes the finalizer once the process is stopped (or its
// node is down).
func (c *EngineController) reconcileDelete(ctx context.Context, e *longhorn.Engine) (Result, error) {
	if !slices.Contains(e.Finalizers, FinalizerName) {
		return Done, nil
	}
	if e.Status.CurrentState != longhorn.InstanceStateStopped && !c.isNodeDown(ctx, e.Spec.NodeID) {
		return WaitShort, nil
	}
	latest, err := c.ds.GetEngine(ctx, e.Name)
	if err != nil {
		return Done, ignoreNotFound(err)
	}
	latest.Finalizers = slices.DeleteFunc(latest.Finalizers, func(f string) bool { return f == FinalizerName })
	_, err = c.ds.UpdateEngine(ctx, latest)
	return Done, ignoreNotFound(err)
}

// engineFrontend maps the volume frontend to the engine's: blockdev makes
// /dev/longhorn/<volume> on the engine's node (engine/frontend/blockdev),
// "" or a disabled frontend is maintenance mode.
func engineFrontend(e *longhorn.Engine) string {
	if e.Spec.DisableFrontend {
		return ""
	}
	switch e.Spec.Frontend {
	case longhorn.VolumeFrontendISCSI:
		return "iscsi"
	case longhorn.VolumeFrontendNBD:
		return "nbd"
	case longhorn.VolumeFrontendBlockDev:
		return "blockdev"
	}
	return ""
}

// engineLaunchSettings are the settings an engine process starts with.
type engineLaunchSettings struct {
	// ReplicaTimeout is engine-replica-timeout (v1), in seconds; 0: the
	// engine's default.
	ReplicaTimeout int64
	// SnapshotMaxCount is snapshot-max-count, for volumes whose
	// spec.snapshotMaxCount is 0; 0: the engine's default.
	SnapshotMaxCount int64
}

// engineSettings reads engineLaunchSettings; a setting that cannot be read
// leaves the engine's default.
func (c *EngineController) engineSettings(ctx context.Context) engineLaunchSettings {
	var st engineLaunchSettings
	if v, err := c.ds.GetSettingAsIntByDataEngine(ctx, types.SettingNameEngineReplicaTimeout, longhorn.DataEngineTypeV1); err == nil {
		st.ReplicaTimeout = v
	}
	if v, err := c.ds.GetSettingAsInt(ctx, types.SettingNameSnapshotMaxCount); err == nil {
		st.SnapshotMaxCount = v
	}
	return st
}

// engineProcessSpec renders `longhorn engine controller VOL` with the
// replicas of spec.replicaAddressMap, the volume's snapshot limits (else
// snapshot-max-count) and engine-replica-timeout; an engine without
// replicas waits.
func engineProcessSpec(e *longhorn.Engine, im *longhorn.InstanceManager, st engineLaunchSettings) (engineapi.InstanceSpec, error) {
	m := engineReplicaMap(e)
	if len(m) == 0 {
		return engineapi.InstanceSpec{}, errNotReady
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	var replicas []string
	for _, n := range names {
		replicas = append(replicas, "tcp://"+m[n])
	}
	var extra []string
	if e.Spec.RevisionCounterDisabled {
		extra = append(extra, "--disable-revision-counter")
	}
	switch {
	case e.Spec.SnapshotMaxCount > 0:
		extra = append(extra, "--snapshot-max-count", strconv.Itoa(e.Spec.SnapshotMaxCount))
	case st.SnapshotMaxCount > 0: // the engine takes 2..250
		extra = append(extra, "--snapshot-max-count", strconv.FormatInt(min(max(st.SnapshotMaxCount, 2), 250), 10))
	}
	if st.ReplicaTimeout >= 1 && st.ReplicaTimeout <= 30 {
		extra = append(extra, "--engine-replica-timeout", strconv.FormatInt(st.ReplicaTimeout, 10))
	}
	if e.Spec.SnapshotMaxSize > 0 {
		extra = append(extra, "--snapshot-max-size", strconv.FormatInt(e.Spec.SnapshotMaxSize, 10))
	}
	return engineapi.EngineInstanceSpec(engineapi.EngineOptions{
		Name: e.Name, VolumeName: e.Spec.VolumeName, Size: e.Spec.VolumeSize,
		Frontend: engineFrontend(e), Replicas: replicas, ListenHost: im.Status.IP, ExtraArgs: extra,
	}), nil
}

func imAddressOfEngine(e *longhorn.Engine) engineapi.IMAddress { return imAddress(e.Status.IP) }

func engineRef(e *longhorn.Engine) engineapi.EngineRef {
	return engineapi.EngineRef{Name: e.Name, VolumeName: e.Spec.VolumeName,
		Address: net.JoinHostPort(e.Status.IP, strconv.Itoa(e.Status.Port))}
}

// replicaNameForAddress maps an engine-side replica to its name: the
// instance name the engine reports, or the spec entry with its address.
func replicaNameForAddress(e *longhorn.Engine, r engineapi.Replica) string {
	if r.InstanceName != "" {
		return r.InstanceName
	}
	addr := strings.TrimPrefix(r.Address, "tcp://")
	for n, a := range engineReplicaMap(e) {
		if a == addr {
			return n
		}
	}
	return ""
}

// applyObservation folds the monitor's last poll into status. Replica modes
// go through lifecycle.NextReplicaMode, so a replica that drops out of the
// engine after RW or WO is reported as ERR until the volume controller takes
// it out of spec.replicaAddressMap.
func applyObservation(e *longhorn.Engine, obs *engineObservation) {
	if obs == nil {
		return
	}
	if obs.Err != "" {
		e.Status.SnapshotsError = obs.Err
		return
	}
	e.Status.SnapshotsError = ""
	spec := engineReplicaMap(e)
	observed := map[string]lifecycle.ReplicaMode{}
	current := map[string]string{}
	for _, r := range obs.Replicas {
		n := replicaNameForAddress(e, r)
		if n == "" {
			continue
		}
		addr := strings.TrimPrefix(r.Address, "tcp://")
		current[n] = addr
		// A replica that came back at another address is a new member: its
		// old entry says nothing about the new process.
		if spec[n] == addr {
			observed[n] = lifecycle.ReplicaMode(r.Mode)
		}
	}
	modes := map[string]longhorn.ReplicaMode{}
	for n := range spec {
		next, _ := lifecycle.NextReplicaMode(lifecycle.ReplicaMode(e.Status.ReplicaModeMap[n]), observed[n])
		if next != lifecycle.ModeNone {
			modes[n] = longhorn.ReplicaMode(next)
		}
	}
	e.Status.ReplicaModeMap, e.Status.CurrentReplicaAddressMap = emptyToNil(modes), emptyToNil(current)
	if v := obs.Volume; v != nil {
		e.Status.CurrentSize, e.Status.Endpoint, e.Status.IsExpanding = v.Size, v.Endpoint, v.IsExpanding
		e.Status.LastExpansionError, e.Status.LastExpansionFailedAt = v.LastExpansionError, v.LastExpansionFailedAt
	}
	e.Status.RebuildStatus = rebuildStatusOf(obs.Rebuild)
	e.Status.Snapshots = snapshotsOf(obs.Snapshots)
}

func clearObservation(e *longhorn.Engine) {
	e.Status.ReplicaModeMap, e.Status.CurrentReplicaAddressMap = nil, nil
	e.Status.Endpoint, e.Status.RebuildStatus, e.Status.IsExpanding = "", nil, false
	e.Status.RestoreStatus, e.Status.CloneStatus = nil, nil
}

func emptyToNil[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

func rebuildStatusOf(in map[string]*engineapi.RebuildStatus) map[string]*longhorn.RebuildStatus {
	out := map[string]*longhorn.RebuildStatus{}
	for addr, s := range in {
		out[addr] = &longhorn.RebuildStatus{Error: s.Error, IsRebuilding: s.IsRebuilding, Progress: s.Progress, State: s.State,
			FromReplicaAddress: s.FromReplicaAddress, FromReplicaAddressList: s.FromReplicaAddressList,
			AppliedRebuildingMBps: s.AppliedRebuildingMBps}
	}
	return emptyToNil(out)
}

func snapshotsOf(in map[string]*engineapi.Snapshot) map[string]*longhorn.SnapshotInfo {
	out := map[string]*longhorn.SnapshotInfo{}
	for n, s := range in {
		out[n] = &longhorn.SnapshotInfo{Name: s.Name, Parent: s.Parent, Children: s.Children, Removed: s.Removed,
			UserCreated: s.UserCreated, Created: s.Created, Size: strconv.FormatInt(s.Size, 10), Labels: s.Labels}
	}
	return emptyToNil(out)
}

// noteClientPath records an event when the way the engine is reached
// changes: through the instance manager's proxy, or directly because the
// instance manager is older than the proxy (Longhorn's fallback for
// instance managers that predate it).
func (c *EngineController) noteClientPath(e *longhorn.Engine, client engineapi.EngineClient) {
	viaProxy := client.IsGRPC()
	c.mu.Lock()
	last, seen := c.paths[e.Name]
	c.paths[e.Name] = viaProxy
	c.mu.Unlock()
	if seen && last == viaProxy {
		return
	}
	if viaProxy {
		if seen {
			c.recorder.Eventf(e, corev1.EventTypeNormal, "EngineClientProxy", "Reaching engine %s through the proxy of instance manager %s", e.Name, e.Status.InstanceManagerName)
		}
		return
	}
	c.recorder.Eventf(e, corev1.EventTypeNormal, "EngineClientDirect",
		"Instance manager %s serves no engine proxy (proxy API version 0): reaching engine %s directly at %s", e.Status.InstanceManagerName, e.Name, engineRef(e).Address)
}

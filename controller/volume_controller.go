package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// VolumeController drives a volume from its spec to running, replicated,
// healthy data: it creates the engine and the replicas, places replicas with
// the scheduler, follows the attach lifecycle, computes robustness,
// replenishes failed replicas, salvages, expands and deletes.
type VolumeController struct {
	*env
	w      *Worker
	expect *replicaExpectations
}

func newVolumeController(e *env) (runner, error) {
	c := &VolumeController{env: e, expect: newReplicaExpectations()}
	c.w = NewWorker("longhorn-volume", c.syncVolume)
	if err := addHandler(e.ds.VolumeInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	// Engines and replicas map to their volume, the root kind.
	byVolume := func(obj any) {
		switch o := obj.(type) {
		case *longhorn.Engine:
			c.w.Enqueue(e.key(o.Spec.VolumeName))
		case *longhorn.Replica:
			c.w.Enqueue(e.key(o.Spec.VolumeName))
		}
	}
	if err := addHandler(e.ds.EngineInformer(), onChange(byVolume)); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.ReplicaInformer(), onChange(byVolume)); err != nil {
		return nil, err
	}
	seen := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if r, ok := obj.(*longhorn.Replica); ok {
			c.expect.observed(r, e.now())
		}
	}
	if err := addHandler(e.ds.ReplicaInformer(), cache.ResourceEventHandlerFuncs{AddFunc: seen, DeleteFunc: seen}); err != nil {
		return nil, err
	}
	// Node, instance manager and setting changes can unblock scheduling or
	// change ownership: look at every volume again.
	// Disk capacity alone (it changes with every replica scheduled) can
	// only unblock a volume waiting for a replica; an instance manager's
	// processes reach volumes through their Engine and Replica objects.
	all := func(any) { c.enqueueAll() }
	if err := addHandler(e.ds.NodeInformer(), onNodeFanout(func(_ *longhorn.Node, scope nodeFanout) {
		if scope == nodeFanoutAll {
			c.enqueueAll()
		} else {
			c.enqueueWaitingForReplicas()
		}
	})); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.InstanceManagerInformer(), onIMFanout(func(*longhorn.InstanceManager) { c.enqueueAll() }, nil)); err != nil {
		return nil, err
	}
	// A cordon evicts replicas under the block-for-eviction drain policies.
	if err := addHandler(e.kubeFactory.Core().V1().Nodes().Informer(), onCordon(all)); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.SettingInformer(), onChange(all)); err != nil {
		return nil, err
	}
	// A backup volume's new last backup is restored by its standby volumes.
	if err := addHandler(e.ds.BackupVolumeInformer(), onChange(func(any) { c.enqueueStandby() })); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *VolumeController) enqueueAll() {
	vols, err := c.ds.ListVolumesRO(context.Background(), nil)
	if err != nil {
		return
	}
	for _, v := range vols {
		c.w.Enqueue(c.key(v.Name))
	}
}

// enqueueWaitingForReplicas looks again at the volumes a change of disk
// capacity can concern: not fully scheduled, being created, or degraded
// (a replica to replenish).
func (c *VolumeController) enqueueWaitingForReplicas() {
	vols, err := c.ds.ListVolumesRO(context.Background(), nil)
	if err != nil {
		return
	}
	for _, v := range vols {
		if waitsForReplicas(v) {
			c.w.Enqueue(c.key(v.Name))
		}
	}
}

// waitsForReplicas reports whether v may be waiting for disk space (pure).
func waitsForReplicas(v *longhorn.Volume) bool {
	sched := longhorn.GetCondition(v.Status.Conditions, longhorn.VolumeConditionTypeScheduled).Status == longhorn.ConditionStatusTrue
	return !sched || v.Status.State == longhorn.VolumeStateCreating || v.Status.State == "" ||
		v.Status.Robustness == longhorn.VolumeRobustnessDegraded
}

// enqueueStandby looks at every standby (DR) volume again.
func (c *VolumeController) enqueueStandby() {
	vols, err := c.ds.ListVolumesRO(context.Background(), nil)
	if err != nil {
		return
	}
	for _, v := range vols {
		if v.Status.IsStandby {
			c.w.Enqueue(c.key(v.Name))
		}
	}
}

func (c *VolumeController) run(ctx context.Context, workers int) error { return c.w.Run(ctx, workers) }

// syncVolume is the queue entry point: ownership, finalizer, deletion, then
// the step list on a snapshot of the volume and its children.
func (c *VolumeController) syncVolume(ctx context.Context, key string) (Result, error) {
	vRO, err := c.ds.GetVolumeRO(ctx, splitKey(key))
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, vRO.Spec.NodeID, vRO.Status.OwnerID) {
		LoggerFrom(ctx).WithField("owner", vRO.Status.OwnerID).Debug("Not responsible for volume")
		return Done, nil
	}
	if c.skipReconcile(vRO, "Volume") {
		return Done, nil
	}
	if vRO.Status.OwnerID != c.opts.NodeName {
		v := vRO.DeepCopy()
		v.Status.OwnerID = c.opts.NodeName
		_, err := c.ds.UpdateVolumeStatus(ctx, v)
		if apierrors.IsConflict(err) {
			return Done, nil // another manager took it
		}
		if err == nil {
			LoggerFrom(ctx).WithField("previousOwner", vRO.Status.OwnerID).Info("Took over volume")
		}
		return Done, err
	}
	if vRO.DeletionTimestamp == nil && !slices.Contains(vRO.Finalizers, FinalizerName) {
		v := vRO.DeepCopy()
		v.Finalizers = append(v.Finalizers, FinalizerName)
		_, err := c.ds.UpdateVolume(ctx, v)
		return Done, err
	}
	snap, err := c.observe(ctx, vRO)
	if err != nil {
		return Done, err
	}
	if vRO.DeletionTimestamp != nil {
		return c.reconcileDelete(ctx, snap)
	}
	return c.reconcile(ctx, snap)
}

// reconcile runs the steps on the snapshot's working copies, then writes
// what changed.
func (c *VolumeController) reconcile(ctx context.Context, s *volumeSnapshot) (Result, error) {
	steps := []struct {
		name string
		fn   func(context.Context, *volumeSnapshot) error
	}{
		{"ensure engine", c.ensureEngine},
		{"ensure attachment", c.ensureVolumeAttachment},
		{"restore", c.reconcileRestore},
		{"clone", c.reconcileClone},
		{"engine upgrade", c.reconcileEngineUpgrade},
		{"replica health", c.reconcileReplicaHealth},
		{"sizes", c.reconcileSizes},
		{"robustness", c.reconcileRobustness},
		{"eviction", c.reconcileEviction},
		{"replenish", c.reconcileReplenish},
		{"data locality", c.reconcileLocality},
		{"auto-balance", c.reconcileAutoBalance},
		{"schedule", c.reconcileScheduling},
		{"cleanup", c.reconcileCleanup},
		{"state", c.reconcileState},
		{"conditions", c.reconcileConditions},
	}
	for _, st := range steps {
		if err := st.fn(ctx, s); err != nil {
			return Done, fmt.Errorf("%s: %w", st.name, err)
		}
	}
	if err := c.applyChanges(ctx, s); err != nil {
		return Done, err
	}
	LoggerFrom(ctx).WithFields(map[string]any{"state": s.vol.Status.State, "robustness": s.vol.Status.Robustness,
		"replicas": len(s.reps), "created": len(s.fresh), "deleted": len(s.gone)}).Debug("Synced volume")
	return s.result(), nil
}

// result turns the snapshot's waits into a Result: poll while a transition
// is in flight or a replenishment timer runs.
func (s *volumeSnapshot) result() Result {
	wait := s.requeueAfter
	if s.inTransition() && (wait == 0 || wait > WaitShort.RequeueAfter) {
		wait = WaitShort.RequeueAfter
	}
	if wait > 0 {
		return After(wait)
	}
	return Done
}

func (s *volumeSnapshot) inTransition() bool {
	switch s.vol.Status.State {
	case longhorn.VolumeStateAttaching, longhorn.VolumeStateDetaching, longhorn.VolumeStateCreating, longhorn.VolumeStateDeleting:
		return true
	}
	return s.vol.Status.Robustness == longhorn.VolumeRobustnessDegraded
}

// waitAtMost records that the volume must be looked at again within d.
func (s *volumeSnapshot) waitAtMost(d time.Duration) {
	if d > 0 && (s.requeueAfter == 0 || d < s.requeueAfter) {
		s.requeueAfter = d
	}
}

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/controller/monitor"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// FinalizerName is the finalizer the manager puts on volumes, engines and
// replicas (Longhorn's "longhorn.io").
const FinalizerName = "longhorn.io"

// ReplicaController runs replica processes through the node's instance
// manager and removes a deleted replica's data directory.
type ReplicaController struct {
	*env
	w *Worker
}

func newReplicaController(e *env) (runner, error) {
	c := &ReplicaController{env: e}
	c.w = NewWorker("longhorn-replica", c.syncReplica)
	if err := addHandler(e.ds.ReplicaInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	byNode := func(obj any) {
		node := nameOf(obj)
		if im, ok := obj.(*longhorn.InstanceManager); ok {
			node = im.Spec.NodeID
		}
		rs, err := e.ds.ListReplicasByNodeRO(context.Background(), node)
		if err != nil {
			return
		}
		for _, r := range rs {
			c.w.Enqueue(e.key(r.Name))
		}
	}
	// An instance manager's state, address or ownership concerns all of
	// its node's replicas; a process that starts or stops only its own.
	if err := addHandler(e.ds.InstanceManagerInformer(), onIMFanout(func(im *longhorn.InstanceManager) { byNode(im) },
		func(_ *longhorn.InstanceManager, engines, replicas []string) {
			for _, name := range replicas {
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
	return c, nil
}

func (c *ReplicaController) run(ctx context.Context, workers int) error { return c.w.Run(ctx, workers) }

// syncReplica reconciles one replica.
func (c *ReplicaController) syncReplica(ctx context.Context, key string) (Result, error) {
	rRO, err := c.ds.GetReplicaRO(ctx, splitKey(key))
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, rRO.Spec.NodeID, rRO.Status.OwnerID) {
		return Done, nil
	}
	if c.skipReconcile(rRO, "Replica") {
		return Done, nil
	}
	r := rRO.DeepCopy()
	r.Status.OwnerID = c.opts.NodeName
	if r.DeletionTimestamp != nil {
		r.Spec.DesireState = longhorn.InstanceStateStopped
	}
	err = c.reconcileInstance(ctx, instanceTarget{
		Object: r, Name: r.Name, Type: engineapi.InstanceTypeReplica, Spec: &r.Spec.InstanceSpec, Status: &r.Status.InstanceStatus,
		ProcessSpec: func(im *longhorn.InstanceManager) (engineapi.InstanceSpec, error) { return c.processSpec(r, im) },
	})
	if err != nil {
		return Done, err
	}
	if !reflect.DeepEqual(rRO.Status, r.Status) {
		if _, err := c.ds.UpdateReplicaStatus(ctx, r); err != nil {
			if apierrors.IsConflict(err) {
				return Done, nil
			}
			return Done, fmt.Errorf("update replica %s status: %w", r.Name, err)
		}
	}
	if r.DeletionTimestamp != nil {
		return c.reconcileDelete(ctx, r)
	}
	if r.Status.CurrentState != longhorn.InstanceState(r.Spec.DesireState) {
		return WaitShort, nil
	}
	return Done, nil
}

// processSpec renders `longhorn engine replica <disk>/replicas/<dir>`
// listening on the instance manager's storage IP.
func (c *ReplicaController) processSpec(r *longhorn.Replica, im *longhorn.InstanceManager) (engineapi.InstanceSpec, error) {
	if r.Spec.NodeID == "" || r.Spec.DiskPath == "" || r.Spec.DataDirectoryName == "" {
		return engineapi.InstanceSpec{}, errNotReady
	}
	l, err := volumeResourceLimits(context.Background(), c.ds, r.Spec.VolumeName)
	if err != nil {
		return engineapi.InstanceSpec{}, err
	}
	dir := filepath.Join(r.Spec.DiskPath, monitor.ReplicaDirectory, r.Spec.DataDirectoryName)
	spec := engineapi.ReplicaInstanceSpec(engineapi.ReplicaOptions{
		Name: r.Name, VolumeName: r.Spec.VolumeName, Size: r.Spec.VolumeSize,
		DataDir:                dir,
		ListenHost:             c.storageIP(im),
		DisableRevisionCounter: r.Spec.RevisionCounterDisabled,
		// Limits hold for what the replica process does itself: an engine
		// reading its files directly would escape them.
		DisableDirectRead: !l.IsZero(),
	})
	spec.Limits = types.ReplicaLimits(l, dir)
	return spec, nil
}

// reconcileDelete, once the process is stopped, removes the data directory
// (on this node only; a down node's data is left behind; never that of an
// inactive replica or of a directory another replica uses) and then the
// finalizer.
func (c *ReplicaController) reconcileDelete(ctx context.Context, r *longhorn.Replica) (Result, error) {
	if !slices.Contains(r.Finalizers, FinalizerName) {
		return Done, nil
	}
	nodeDown := r.Spec.NodeID == "" || c.isNodeDown(ctx, r.Spec.NodeID)
	if r.Status.CurrentState != longhorn.InstanceStateStopped && !nodeDown {
		return WaitShort, nil
	}
	if r.Spec.NodeID == c.opts.NodeName && r.Spec.DiskPath != "" && r.Spec.DataDirectoryName != "" {
		shared, err := c.dataDirShared(ctx, r)
		if err != nil {
			return Done, err
		}
		dir := filepath.Join(r.Spec.DiskPath, monitor.ReplicaDirectory, r.Spec.DataDirectoryName)
		if r.Spec.Active && !shared {
			if err := os.RemoveAll(dir); err != nil {
				return Done, fmt.Errorf("remove replica data %s: %w", dir, err)
			}
		}
	} else if r.Spec.NodeID != "" && !nodeDown {
		return Done, nil // the node's own manager removes the data
	}
	latest, err := c.ds.GetReplica(ctx, r.Name)
	if err != nil {
		return Done, ignoreNotFound(err)
	}
	latest.Finalizers = slices.DeleteFunc(latest.Finalizers, func(f string) bool { return f == FinalizerName })
	_, err = c.ds.UpdateReplica(ctx, latest)
	return Done, ignoreNotFound(err)
}

// dataDirShared reports whether another Replica object of the volume, not
// being deleted itself, uses
// r's data directory: during a live engine upgrade the old replica and its
// twin of the new image (spec.active false) serve the same directory, and
// whichever goes keeps it. As in Longhorn, an inactive replica never
// removes its data either (reconcileDelete).
func (c *ReplicaController) dataDirShared(ctx context.Context, r *longhorn.Replica) (bool, error) {
	rs, err := c.ds.ListReplicasByVolumeRO(ctx, r.Spec.VolumeName)
	if err != nil {
		return false, err
	}
	for _, o := range rs {
		if o.Name != r.Name && o.DeletionTimestamp == nil && o.Spec.NodeID == r.Spec.NodeID && o.Spec.DiskPath == r.Spec.DiskPath &&
			o.Spec.DataDirectoryName == r.Spec.DataDirectoryName {
			return true, nil
		}
	}
	return false, nil
}

// ignoreNotFound drops NotFound (the object is gone: nothing left to do).
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

package controller

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// reconcileDelete tears a volume down in order, waiting by requeueing:
//
//  1. state deleting; engine and replicas asked to stop;
//  2. once the engine is stopped (or its node is down), delete the engine;
//  3. delete the replicas (their controller stops the process and removes
//     the data directory before dropping its finalizer);
//  4. drop the clone ticket on the source volume, if any, and delete the
//     VolumeAttachment;
//  5. when no engine or replica object is left, remove the finalizer.
func (c *VolumeController) reconcileDelete(ctx context.Context, s *volumeSnapshot) (Result, error) {
	v := s.vol
	// Step 1.
	v.Status.State = longhorn.VolumeStateDeleting
	v.Status.CurrentNodeID = ""
	if !reflect.DeepEqual(s.volRO.Status, v.Status) {
		if _, err := c.ds.UpdateVolumeStatus(ctx, v); err != nil {
			return Done, fmt.Errorf("update volume status: %w", err)
		}
	}
	// Step 2.
	if s.engRO != nil {
		if err := c.deleteEngine(ctx, s); err != nil {
			return Done, err
		}
		if s.engRO.Status.CurrentState != longhorn.InstanceStateStopped && !c.isNodeDown(ctx, s.engRO.Spec.NodeID) {
			return WaitShort, nil
		}
	}
	// Step 3.
	for _, r := range s.repRO {
		if r.DeletionTimestamp == nil {
			if err := c.ds.DeleteReplica(ctx, r.Name); err != nil && !apierrors.IsNotFound(err) {
				return Done, fmt.Errorf("delete replica %s: %w", r.Name, err)
			}
		}
	}
	// Step 4.
	if src := v.Status.CloneStatus.SourceVolume; src != "" {
		if err := c.syncSourceTicket(ctx, src, v.Name, "", false); err != nil {
			return Done, err
		}
	}
	if err := c.ds.DeleteVolumeAttachment(ctx, v.Name); err != nil && !apierrors.IsNotFound(err) {
		return Done, fmt.Errorf("delete volume attachment: %w", err)
	}
	// Step 5.
	if s.engRO != nil || len(s.repRO) > 0 {
		return WaitShort, nil
	}
	latest, err := c.ds.GetVolume(ctx, v.Name)
	if err != nil {
		return Done, ignoreNotFound(err)
	}
	latest.Finalizers = slices.DeleteFunc(latest.Finalizers, func(f string) bool { return f == FinalizerName })
	_, err = c.ds.UpdateVolume(ctx, latest)
	return Done, ignoreNotFound(err)
}

// deleteEngine stops the engine, then deletes its object.
func (c *VolumeController) deleteEngine(ctx context.Context, s *volumeSnapshot) error {
	e := s.engRO
	if e.Spec.DesireState != longhorn.InstanceStateStopped {
		next := e.DeepCopy()
		next.Spec.DesireState = longhorn.InstanceStateStopped
		if _, err := c.ds.UpdateEngine(ctx, next); err != nil {
			return fmt.Errorf("stop engine %s: %w", e.Name, err)
		}
		return nil
	}
	for _, r := range s.repRO {
		if r.Spec.DesireState != longhorn.InstanceStateStopped {
			next := r.DeepCopy()
			next.Spec.DesireState = longhorn.InstanceStateStopped
			if _, err := c.ds.UpdateReplica(ctx, next); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("stop replica %s: %w", r.Name, err)
			}
		}
	}
	if e.DeletionTimestamp == nil && (e.Status.CurrentState == longhorn.InstanceStateStopped || c.isNodeDown(ctx, e.Spec.NodeID)) {
		if err := c.ds.DeleteEngine(ctx, e.Name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete engine %s: %w", e.Name, err)
		}
	}
	return nil
}

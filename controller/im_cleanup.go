package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// redundantInstanceManager reports whether im, an instance manager on the
// manager's own node, is one Longhorn removes (the node controller's clean-up
// of instance managers that are not the default): its image is not the
// manager's own instance-manager image (it was left by an upgrade), it is not
// being deleted already, no volume, engine or replica of this node asks for
// its image (inUse: they would start in it again, e.g. a volume restarting
// on the old image after a failed live upgrade; this product's engine
// binary is the instance manager's, as Longhorn keeps an engine image while
// its refCount is not 0), and nothing runs in it. Nothing runs in it when its
// pod is gone or failed (state stopped or error), or when it runs and lists
// no instance that is running or starting. An instance manager in any other
// state (starting: the pod or its gRPC server is not up yet; unknown: the
// node is down) keeps what it may still run and stays.
func redundantInstanceManager(im *longhorn.InstanceManager, currentImage string, inUse bool) bool {
	if im.Spec.Image == currentImage || im.DeletionTimestamp != nil || inUse {
		return false
	}
	switch im.Status.CurrentState {
	case longhorn.InstanceManagerStateStopped, longhorn.InstanceManagerStateError:
		return true
	case longhorn.InstanceManagerStateRunning:
		for _, procs := range []map[string]longhorn.InstanceProcess{im.Status.InstanceEngines, im.Status.InstanceReplicas} {
			for _, p := range procs {
				if p.Status.State == longhorn.InstanceStateRunning || p.Status.State == longhorn.InstanceStateStarting {
					return false
				}
			}
		}
		return true
	}
	return false
}

// cleanupInstanceManagers deletes this node's redundant instance managers
// (redundantInstanceManager); the pod goes with its owner.
func (c *NodeController) cleanupInstanceManagers(ctx context.Context) error {
	ims, err := c.ds.ListInstanceManagersByNodeRO(ctx, c.opts.NodeName)
	if err != nil {
		return err
	}
	var used map[string]bool
	for _, im := range ims {
		if im.Spec.Image == c.opts.InstanceManagerImage {
			continue
		}
		if used == nil {
			if used, err = c.imagesWantedHere(ctx); err != nil {
				return err
			}
		}
		if !redundantInstanceManager(im, c.opts.InstanceManagerImage, used[im.Spec.Image]) {
			continue
		}
		if err := c.ds.DeleteInstanceManager(ctx, im.Name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("clean up instance manager %s of image %s: %w", im.Name, im.Spec.Image, err)
		}
		LoggerFrom(ctx).Infof("Cleaned up instance manager %s of image %s (state %s, no running or starting instance)",
			im.Name, im.Spec.Image, im.Status.CurrentState)
		c.recorder.Eventf(im, corev1.EventTypeNormal, "Delete", "Deleting instance manager %s of image %s: not the default image and no instance runs in it",
			im.Name, im.Spec.Image)
	}
	return nil
}

// imagesWantedHere returns the spec.image of every engine and replica on
// this node and of every volume attached or attaching here (spec.nodeID or
// status.currentNodeID): the images their instances start in.
func (c *NodeController) imagesWantedHere(ctx context.Context) (map[string]bool, error) {
	node := c.opts.NodeName
	out := map[string]bool{}
	engines, err := c.ds.ListEnginesByNodeRO(ctx, node)
	if err != nil {
		return nil, err
	}
	for _, e := range engines {
		out[e.Spec.Image] = true
	}
	replicas, err := c.ds.ListReplicasByNodeRO(ctx, node)
	if err != nil {
		return nil, err
	}
	for _, r := range replicas {
		out[r.Spec.Image] = true
	}
	vols, err := c.ds.ListVolumesRO(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, v := range vols {
		if v.Spec.NodeID == node || v.Status.CurrentNodeID == node {
			out[v.Spec.Image] = true
		}
	}
	return out, nil
}

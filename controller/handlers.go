package controller

import (
	"context"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// onChange returns event handlers that call fn with the object on add,
// on update (skipping updates that keep the ResourceVersion, i.e. resyncs)
// and on delete (unwrapping tombstones). Handlers never branch on the event
// kind beyond that (one root kind per controller, docs/style.md).
func onChange(fn func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: fn,
		UpdateFunc: func(oldObj, newObj any) {
			o, err1 := meta.Accessor(oldObj)
			n, err2 := meta.Accessor(newObj)
			if err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			fn(newObj)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			fn(obj)
		},
	}
}

// onCordon calls fn with a Kubernetes node that is added, deleted, or
// cordoned or uncordoned (spec.unschedulable changes); other node updates
// (heartbeats) are ignored.
func onCordon(fn func(obj any)) cache.ResourceEventHandlerFuncs {
	h := onChange(fn)
	h.UpdateFunc = func(oldObj, newObj any) {
		o, ok1 := oldObj.(*corev1.Node)
		n, ok2 := newObj.(*corev1.Node)
		if ok1 && ok2 && o.Spec.Unschedulable != n.Spec.Unschedulable {
			fn(newObj)
		}
	}
	return h
}

// onReplicaPDBChange calls fn with a replica that is added or deleted, or
// whose node, failure, health, running state, eviction request or deletion
// changes: what the instance-manager PodDisruptionBudgets depend on
// (imNeedsPDB). Other updates are ignored, so that every other replica
// write does not make every instance manager reconcile (and list its
// instances over gRPC).
func onReplicaPDBChange(fn func(obj any)) cache.ResourceEventHandlerFuncs {
	h := onChange(fn)
	h.UpdateFunc = func(oldObj, newObj any) {
		o, ok1 := oldObj.(*longhorn.Replica)
		n, ok2 := newObj.(*longhorn.Replica)
		if !ok1 || !ok2 || o.Spec.NodeID != n.Spec.NodeID || o.Spec.FailedAt != n.Spec.FailedAt ||
			o.Spec.HealthyAt != n.Spec.HealthyAt || o.Spec.EvictionRequested != n.Spec.EvictionRequested ||
			o.Status.CurrentState != n.Status.CurrentState ||
			(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
			fn(newObj)
		}
	}
	return h
}

// addHandler registers handlers on an informer; the error only happens once
// the informer has stopped, which is a wiring bug.
func addHandler(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	_, err := inf.AddEventHandler(h)
	return err
}

// nameOf returns an object's name ("" for something that is not an object).
func nameOf(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

// key is the workqueue key "namespace/name" of a Longhorn object.
func (e *env) key(name string) string { return e.opts.Namespace + "/" + name }

// splitKey returns the name in a "namespace/name" key.
func splitKey(key string) string {
	_, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return key
	}
	return name
}

// isNodeDown reports whether a node's objects belong to other managers: its
// Longhorn Node is missing or Ready=False with a down reason.
func (e *env) isNodeDown(ctx context.Context, name string) bool {
	n, err := e.ds.GetNodeRO(ctx, name)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	c := longhorn.GetCondition(n.Status.Conditions, longhorn.NodeConditionTypeReady)
	return c.Status == longhorn.ConditionStatusFalse && isNodeDownReason(c.Reason)
}

// isNodeDownOrDeleted reports whether the Longhorn node is missing, or not
// Ready because its Kubernetes node is gone or not ready (Longhorn's
// IsNodeDownOrDeleted): its instances are unknown. Unlike isNodeDown, a
// node that only misses its manager is not down here.
func (e *env) isNodeDownOrDeleted(ctx context.Context, name string) bool {
	n, err := e.ds.GetNodeRO(ctx, name)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	c := longhorn.GetCondition(n.Status.Conditions, longhorn.NodeConditionTypeReady)
	return c.Status == longhorn.ConditionStatusFalse && isInstanceDownReason(c.Reason)
}

// responsible applies the ownership rule for this manager.
func (e *env) responsible(ctx context.Context, preferred, current string) bool {
	return isResponsibleFor(e.opts.NodeName, preferred, current, func(n string) bool { return e.isNodeDown(ctx, n) })
}

// joinHostPort renders "host:port".
func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

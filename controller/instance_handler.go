package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// instanceTarget is one engine or replica as the shared instance handler
// sees it. Status is the caller's copy and is changed in place.
type instanceTarget struct {
	Object runtime.Object // for events
	Name   string
	Type   engineapi.InstanceType
	Spec   *longhorn.InstanceSpec
	Status *longhorn.InstanceStatus
	// ProcessSpec renders the process to start; it is called only when a
	// start is needed and may fail with errNotReady (e.g. a replica without
	// a disk, an engine without running replicas).
	ProcessSpec func(im *longhorn.InstanceManager) (engineapi.InstanceSpec, error)
}

// errNotReady means a process cannot be started yet; the caller waits.
var errNotReady = errors.New("not ready to start")

// instanceManagerFor returns the v1 instance manager on node, preferring
// the one named in status (it runs the process), then one of the object's
// engine image (image; in this product the engine binary ships in the
// instance-manager image, so an engine image runs in the instance managers
// of that image), then one of the manager's own image. nil when the node
// has none.
func (e *env) instanceManagerFor(ctx context.Context, node, current, image string) (*longhorn.InstanceManager, error) {
	ims, err := e.ds.ListInstanceManagersByNodeRO(ctx, node)
	if err != nil {
		return nil, err
	}
	rank := func(im *longhorn.InstanceManager) int {
		switch {
		case im.Name == current:
			return 3
		case image != "" && im.Spec.Image == image && im.DeletionTimestamp == nil:
			return 2
		case im.Spec.Image == e.opts.InstanceManagerImage:
			return 1
		}
		return 0
	}
	var best *longhorn.InstanceManager
	for _, im := range ims {
		if im.Spec.DataEngine != "" && im.Spec.DataEngine != longhorn.DataEngineTypeV1 {
			continue
		}
		if best == nil || rank(im) > rank(best) || (rank(im) == rank(best) && im.Name < best.Name) {
			best = im
		}
	}
	return best, nil
}

// processOf finds the instance in the instance manager's status.
func processOf(im *longhorn.InstanceManager, name string, typ engineapi.InstanceType) (longhorn.InstanceProcess, bool) {
	if im == nil {
		return longhorn.InstanceProcess{}, false
	}
	m := im.Status.InstanceReplicas
	if typ == engineapi.InstanceTypeEngine {
		m = im.Status.InstanceEngines
	}
	p, ok := m[name]
	return p, ok
}

// reconcileInstance drives one engine or replica process toward
// spec.desireState with lifecycle.NextInstance and carries out the step's
// actions against the instance manager (Longhorn's
// InstanceHandler.ReconcileInstanceState).
func (e *env) reconcileInstance(ctx context.Context, t instanceTarget) error {
	im, err := e.instanceManagerFor(ctx, t.Spec.NodeID, t.Status.InstanceManagerName, t.Spec.Image)
	if err != nil {
		return err
	}
	obs := lifecycle.InstanceObserved{Desired: lifecycle.InstanceState(t.Spec.DesireState), Started: t.Status.Started}
	var proc longhorn.InstanceProcess
	if im != nil {
		obs.IM, obs.IMDeleting = lifecycle.IMState(im.Status.CurrentState), im.DeletionTimestamp != nil
		if p, ok := processOf(im, t.Name, t.Type); ok {
			proc, obs.Process = p, lifecycle.InstanceState(p.Status.State)
		}
	}
	step := lifecycle.NextInstance(lifecycle.InstanceState(t.Status.CurrentState), obs)
	t.Status.CurrentState, t.Status.Started = longhorn.InstanceState(step.State), step.Started
	for _, a := range step.Actions {
		if err := e.instanceAction(ctx, t, a, im, proc); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) instanceAction(ctx context.Context, t instanceTarget, a lifecycle.InstanceAction,
	im *longhorn.InstanceManager, proc longhorn.InstanceProcess) error {
	s := t.Status
	switch a {
	case lifecycle.ActionCopyAddress:
		s.InstanceManagerName, s.IP, s.Port = im.Name, im.Status.IP, int(proc.Status.PortStart)
		s.StorageIP = e.storageIP(im)
		s.UUID = proc.Status.UUID
		if s.CurrentImage == "" {
			s.CurrentImage = t.Spec.Image
		}
	case lifecycle.ActionClearAddress:
		s.IP, s.StorageIP, s.Port, s.CurrentImage = "", "", 0, ""
		if t.Spec.DesireState == longhorn.InstanceStateStopped && s.CurrentState == longhorn.InstanceStateStopped {
			s.InstanceManagerName = ""
		}
	case lifecycle.ActionCreateInstance:
		return e.createInstance(ctx, t, im)
	case lifecycle.ActionDeleteInstance:
		client, err := e.api.InstanceManager(ctx, imAddress(im.Status.IP))
		if err != nil {
			return err
		}
		if _, err := client.InstanceDelete(ctx, t.Name, t.Type, ""); err != nil && !engineapi.IsNotFound(err) {
			e.recorder.Eventf(t.Object, corev1.EventTypeWarning, "FailedStopping", "Error stopping %s: %v", t.Name, err)
			return err
		}
		e.recorder.Eventf(t.Object, corev1.EventTypeNormal, "Stop", "Stopping %s", t.Name)
	}
	return nil
}

func (e *env) createInstance(ctx context.Context, t instanceTarget, im *longhorn.InstanceManager) error {
	spec, err := t.ProcessSpec(im)
	if errors.Is(err, errNotReady) {
		return nil
	}
	if err != nil {
		return err
	}
	client, err := e.api.InstanceManager(ctx, imAddress(im.Status.IP))
	if err != nil {
		return err
	}
	// The instance manager answers a repeated create of a live instance with
	// that instance and replaces a record whose process exited; AlreadyExists
	// means another live process (or one being deleted) holds the name, so
	// nothing started: an error, retried with backoff, never a success.
	if _, err := client.InstanceCreate(ctx, spec); err != nil {
		e.recorder.Eventf(t.Object, corev1.EventTypeWarning, "FailedStarting", "Error starting %s: %v", t.Name, err)
		return fmt.Errorf("start %s %s: %w", t.Type, t.Name, err)
	}
	t.Status.InstanceManagerName = im.Name
	e.recorder.Eventf(t.Object, corev1.EventTypeNormal, "Start", "Starting %s on %s", t.Name, im.Spec.NodeID)
	return nil
}

// storageIP is the storage-network IP of the instance manager's pod, or its
// pod IP without a storage network.
func (e *env) storageIP(im *longhorn.InstanceManager) string {
	pod, err := e.pods.Pods(e.opts.Namespace).Get(im.Name)
	if err != nil {
		return im.Status.IP
	}
	if ip := storageIPOf(pod); ip != "" {
		return ip
	}
	return im.Status.IP
}

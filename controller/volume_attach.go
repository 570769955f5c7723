package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// startable reports whether a replica may run: placed, not failed, not
// being deleted.
func (s *volumeSnapshot) startable(r *longhorn.Replica) bool {
	return scheduled(r) && !failed(r) && !deleting(r) && !s.gone[r.Name] && !s.fresh[r.Name]
}

// observeAttach builds the state machine's view. An engine whose replicas
// have all failed counts as errored, so an attached faulted volume detaches
// (and auto-salvage can bring it back).
func (s *volumeSnapshot) observeAttach() lifecycle.VolumeObserved {
	o := lifecycle.VolumeObserved{EngineExists: s.eng != nil, DesiredNode: s.vol.Spec.NodeID,
		CurrentNode: s.vol.Status.CurrentNodeID, ReplicasStopped: true}
	o.ReplicasCreated = len(s.fresh) == 0 && len(s.reps) > 0
	if s.engRO.Spec.NodeID == s.vol.Status.CurrentNodeID || s.engRO.Status.CurrentState == longhorn.InstanceStateStopped {
		o.Engine = lifecycle.InstanceState(s.engRO.Status.CurrentState)
	}
	strict := s.strictLocal()
	for _, r := range s.sortedReplicas() {
		if s.startable(r) && (!strict || r.Spec.NodeID == o.DesiredNode || o.DesiredNode == "") {
			o.Startable++
			if running(r) {
				o.StartableRunning++
			}
		}
		if st := r.Status.CurrentState; st != "" && st != longhorn.InstanceStateStopped && st != longhorn.InstanceStateError {
			o.ReplicasStopped = false
		}
	}
	if o.Engine == lifecycle.InstanceRunning && o.Startable == 0 {
		o.Engine = lifecycle.InstanceError
	}
	o.FrontendPending = engineFrontend(s.engRO) != "" && s.engRO.Status.Endpoint == ""
	return o
}

// reconcileState advances the attach lifecycle with lifecycle.NextVolume and
// carries out its actions on the engine and replica copies.
func (c *VolumeController) reconcileState(_ context.Context, s *volumeSnapshot) error {
	o := s.observeAttach()
	prev := lifecycle.VolumeState(s.vol.Status.State)
	next, acts := lifecycle.NextVolume(prev, o)
	s.vol.Status.State = longhorn.VolumeState(next)
	for _, a := range acts {
		switch a {
		case lifecycle.ActionSetCurrentNode:
			s.vol.Status.CurrentNodeID = s.vol.Spec.NodeID
		case lifecycle.ActionClearCurrentNode:
			s.vol.Status.CurrentNodeID = ""
			s.eng.Spec.NodeID = ""
			s.eng.Spec.ReplicaAddressMap = nil
		case lifecycle.ActionStartReplicas:
			for _, r := range s.sortedReplicas() {
				if s.startable(r) {
					r.Spec.DesireState = longhorn.InstanceStateRunning
				}
			}
			if next == lifecycle.VolumeAttached {
				s.eng.Spec.ReplicaAddressMap = s.engineReplicas(false)
			}
		case lifecycle.ActionStartEngine:
			s.eng.Spec.NodeID = s.vol.Status.CurrentNodeID
			s.eng.Spec.DesireState = longhorn.InstanceStateRunning
			s.eng.Spec.Frontend, s.eng.Spec.DisableFrontend = s.vol.Spec.Frontend, s.vol.Spec.DisableFrontend
			s.eng.Spec.ReplicaAddressMap = s.engineReplicas(true)
		case lifecycle.ActionStopEngine:
			s.eng.Spec.DesireState = longhorn.InstanceStateStopped
		case lifecycle.ActionStopReplicas:
			for _, r := range s.sortedReplicas() {
				r.Spec.DesireState = longhorn.InstanceStateStopped
			}
		case lifecycle.ActionDetachedUnexpect:
			c.recorder.Eventf(s.vol, corev1.EventTypeWarning, "DetachedUnexpectedly",
				"Engine of volume %s stopped unexpectedly on node %s", s.vol.Name, s.vol.Status.CurrentNodeID)
		}
	}
	s.vol.Status.FrontendDisabled = s.vol.Spec.DisableFrontend
	c.recordAttachEvent(s, prev, next)
	return nil
}

// recordAttachEvent emits Longhorn's Attached and Detached events on the
// transitions into those states, so `kubectl describe lhv` follows attach
// and detach.
func (c *VolumeController) recordAttachEvent(s *volumeSnapshot, prev, next lifecycle.VolumeState) {
	switch {
	case prev == next:
	case next == lifecycle.VolumeAttached:
		c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "Attached", "Volume %s has been attached to %s", s.vol.Name, s.vol.Status.CurrentNodeID)
	case next == lifecycle.VolumeDetached && prev != lifecycle.VolumeCreating && prev != "":
		c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "Detached", "Volume %s has been detached", s.vol.Name)
	}
}

// engineReplicas is the engine's replica address map: running, startable
// replicas at their storage address. When the engine is about to start and
// some replica has been healthy, only healthy ones are used (new ones join
// later by rebuild).
func (s *volumeSnapshot) engineReplicas(starting bool) map[string]string {
	anyHealthy := false
	for _, r := range s.sortedReplicas() {
		if s.startable(r) && running(r) && r.Spec.HealthyAt != "" {
			anyHealthy = true
		}
	}
	out := map[string]string{}
	for _, r := range s.sortedReplicas() {
		addr := replicaAddress(r)
		if !s.startable(r) || !running(r) || addr == "" {
			continue
		}
		if starting && anyHealthy && r.Spec.HealthyAt == "" {
			continue
		}
		out[r.Name] = addr
	}
	return out
}

package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/scheduler"
)

// localityNode is the node whose replica data locality best-effort wants:
// the node the volume is attached to while spec.dataLocality is
// best-effort and the engine runs there; "" otherwise.
func (s *volumeSnapshot) localityNode() string {
	if s.vol.Spec.DataLocality != longhorn.DataLocalityBestEffort || s.vol.Status.State != longhorn.VolumeStateAttached ||
		s.engRO.Status.CurrentState != longhorn.InstanceStateRunning {
		return ""
	}
	return s.vol.Status.CurrentNodeID
}

// hasReplicaOn reports whether a usable (not failed, not deleting) replica
// of the volume is placed on node.
func (s *volumeSnapshot) hasReplicaOn(node string) bool {
	for _, r := range s.reps {
		if r.Spec.NodeID == node && r.Spec.Active && !failed(r) && !deleting(r) && !s.gone[r.Name] {
			return true
		}
	}
	return false
}

// reconcileLocality is Longhorn's data locality best-effort: a volume
// attached and healthy on a node without one of its replicas gets one more
// replica there (hard node affinity to that node), created only when the
// scheduler finds a disk for it on that node, so an unplaceable local
// replica is not created and deleted over and over. Once the local replica
// is RW, removeExtraReplicas deletes a remote one (the local replica is kept
// last). Nothing happens while a replica rebuilds or the volume already has
// more replicas than spec.numberOfReplicas.
func (c *VolumeController) reconcileLocality(_ context.Context, s *volumeSnapshot) error {
	node := s.localityNode()
	if node == "" || adopting(s.vol) || s.hasReplicaOn(node) {
		return nil
	}
	if !s.settledForExtra() {
		return nil
	}
	probe := scheduler.Replica{Name: s.vol.Name + "-locality-probe", VolumeSize: s.vol.Spec.Size, Active: true, HardNodeAffinity: node}
	in := scheduler.Input{Volume: s.schedVolume(), Replica: probe, Replicas: s.schedReplicas(),
		Nodes: s.schedNodes(), Settings: s.settings.sched, Now: s.now}
	if _, ok, _ := scheduler.Schedule(in); !ok {
		return nil
	}
	r := s.newReplica(c.opts.Namespace, node)
	c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "DataLocality",
		"Creating replica %s on node %s for data locality best-effort", r.Name, node)
	return nil
}

// settledForExtra reports whether the volume may get one replica beyond
// spec.numberOfReplicas for locality or balance: healthy, every wanted
// replica RW, none rebuilding and no extra one already.
func (s *volumeSnapshot) settledForExtra() bool {
	n := s.counts()
	want := s.vol.Spec.NumberOfReplicas
	return s.vol.Status.Robustness == longhorn.VolumeRobustnessHealthy && n.healthyRW >= want && n.rebuilding == 0 && n.usable <= want
}

// strictLocal reports whether the volume's single replica must sit on the
// engine's node (spec.dataLocality strict-local).
func (s *volumeSnapshot) strictLocal() bool {
	return s.vol.Spec.DataLocality == longhorn.DataLocalityStrictLocal
}

// strictLocalAffinity prepares an unplaced replica of a strict-local volume
// for the scheduler: it gets hard node affinity to the node the volume is
// asked to attach to (spec.nodeID). It returns false, leaving the replica
// unplaced, while no node is asked for: Longhorn places a local volume's
// replica where its engine runs. Other volumes' replicas return true.
func (s *volumeSnapshot) strictLocalAffinity(r *longhorn.Replica) bool {
	if !s.strictLocal() {
		return true
	}
	if s.vol.Spec.NodeID == "" {
		return false
	}
	r.Spec.HardNodeAffinity = s.vol.Spec.NodeID
	return true
}

// strictLocalMismatch is, for a strict-local volume asked to attach to a
// node its placed replica is not on, why it cannot attach there ("" when it
// can): the engine and the replica of a local volume share a node.
func (s *volumeSnapshot) strictLocalMismatch() string {
	want := s.vol.Spec.NodeID
	if !s.strictLocal() || want == "" {
		return ""
	}
	for _, r := range s.sortedReplicas() {
		if scheduled(r) && !failed(r) && !deleting(r) && !s.gone[r.Name] && r.Spec.NodeID != want {
			return fmt.Sprintf("strict-local volume %s cannot attach to node %s: its replica %s is on node %s",
				s.vol.Name, want, r.Name, r.Spec.NodeID)
		}
	}
	return ""
}

package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/scheduler"
)

// balancing reports whether replica auto-balance (least-effort or
// best-effort, the volume's spec.replicaAutoBalance or else the global
// replica-auto-balance setting) applies to the volume now: attached, engine
// running, not strict-local.
func (s *volumeSnapshot) balancing() bool {
	mode := s.settings.sched.ReplicaAutoBalance
	if mode != string(longhorn.ReplicaAutoBalanceLeastEffort) && mode != string(longhorn.ReplicaAutoBalanceBestEffort) {
		return false
	}
	return !s.strictLocal() && s.vol.Status.State == longhorn.VolumeStateAttached &&
		s.engRO.Status.CurrentState == longhorn.InstanceStateRunning
}

// replicaNodeCounts is how many usable replicas of the volume each node
// holds.
func (s *volumeSnapshot) replicaNodeCounts() map[string]int {
	out := map[string]int{}
	for _, r := range s.reps {
		if r.Spec.Active && scheduled(r) && !failed(r) && !deleting(r) && !s.gone[r.Name] {
			out[r.Spec.NodeID]++
		}
	}
	return out
}

// reconcileAutoBalance is Longhorn's replica auto-balance at node level:
// when a node holds more than one replica of a settled volume (a node
// joined, or soft anti-affinity once doubled up), one more replica is
// created, but only when the scheduler would put it on a node that holds
// none (so balance never breaks node soft anti-affinity, Longhorn bug
// #11189); once it is RW, removeExtraReplicas deletes one from the node that
// holds more than one. Under best-effort the same happens when the replicas
// span fewer zones than they could (min(spec.numberOfReplicas, zones with a
// node open to scheduling)) and the probe lands in a zone holding none; the
// replica then removed is one in the zone holding the most. Disk-level
// balance is not done yet.
func (c *VolumeController) reconcileAutoBalance(_ context.Context, s *volumeSnapshot) error {
	if !s.balancing() || adopting(s.vol) || !s.settledForExtra() {
		return nil
	}
	nodes := s.replicaNodeCounts()
	doubled := false
	for _, k := range nodes {
		doubled = doubled || k > 1
	}
	zones := s.replicaZoneCounts()
	zoneShort := s.settings.sched.ReplicaAutoBalance == string(longhorn.ReplicaAutoBalanceBestEffort) &&
		len(zones) < min(s.vol.Spec.NumberOfReplicas, s.openZones())
	if !doubled && !zoneShort {
		return nil
	}
	probe := scheduler.Replica{Name: s.vol.Name + "-balance-probe", VolumeSize: s.vol.Spec.Size, Active: true}
	in := scheduler.Input{Volume: s.schedVolume(), Replica: probe, Replicas: s.schedReplicas(),
		Nodes: s.schedNodes(), Settings: s.settings.sched, Now: s.now}
	d, ok, _ := scheduler.Schedule(in)
	if !ok || nodes[d.NodeID] > 0 || (!doubled && zones[s.zoneOf(d.NodeID)] > 0) {
		return nil
	}
	r := s.newReplica(c.opts.Namespace, "")
	c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "ReplicaAutoBalance",
		"Creating replica %s to balance the volume's replicas over the nodes (%s)", r.Name, s.settings.sched.ReplicaAutoBalance)
	return nil
}

// zoneOf is the zone of a Longhorn node ("" when unknown).
func (s *volumeSnapshot) zoneOf(node string) string {
	if n := s.nodes[node]; n != nil {
		return n.Status.Zone
	}
	return ""
}

// replicaZoneCounts is how many usable replicas of the volume each zone
// holds.
func (s *volumeSnapshot) replicaZoneCounts() map[string]int {
	out := map[string]int{}
	for node, k := range s.replicaNodeCounts() {
		out[s.zoneOf(node)] += k
	}
	return out
}

// openZones counts the zones with a ready node open to scheduling (allowed,
// Schedulable, not evicting, not being deleted).
func (s *volumeSnapshot) openZones() int {
	zones := map[string]bool{}
	for _, n := range s.schedNodes() {
		if n.Ready && n.Schedulable && n.AllowScheduling && !n.EvictionRequested && !n.Deleting {
			zones[n.Zone] = true
		}
	}
	return len(zones)
}

package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// evictionRequestedFor reports whether replica r sits on a node, or a disk
// (matched by its UUID, the replica's diskID), whose spec.evictionRequested
// is set (pure).
func evictionRequestedFor(r *longhorn.Replica, nodes map[string]*longhorn.Node) bool {
	n := nodes[r.Spec.NodeID]
	if n == nil || r.Spec.NodeID == "" {
		return false
	}
	if n.Spec.EvictionRequested {
		return true
	}
	for name, st := range n.Status.DiskStatus {
		if st != nil && r.Spec.DiskID != "" && st.DiskUUID == r.Spec.DiskID {
			return n.Spec.Disks[name].EvictionRequested
		}
	}
	return false
}

// reconcileEviction sets each replica's spec.evictionRequested from its node
// and disk (as Longhorn's node controller does). The evicting replicas then
// count as surplus: replenish adds a replica elsewhere (the scheduler avoids
// evicting nodes and disks) and cleanup removes an evicting replica once
// spec.numberOfReplicas healthy replicas live elsewhere, so the volume never
// drops below its count, and the last healthy replica waits. Eviction runs
// while the volume is attached (a detached volume waits for its next attach).
func (c *VolumeController) reconcileEviction(_ context.Context, s *volumeSnapshot) error {
	for _, r := range s.sortedReplicas() {
		if deleting(r) || s.fresh[r.Name] {
			continue
		}
		want := evictionRequestedFor(r, s.nodes)
		if r.Spec.EvictionRequested == want {
			continue
		}
		r.Spec.EvictionRequested = want
		if want {
			c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "EvictionRequested",
				"Replica %s on node %s is to be evicted (evictionRequested on its node or disk)", r.Name, r.Spec.NodeID)
		}
	}
	return nil
}

// evictReplicas deletes the evicting replicas once spec.numberOfReplicas
// healthy replicas that are not evicting serve the volume; it reports
// whether an evicting replica remains (then no other replica is removed as
// surplus).
func (c *VolumeController) evictReplicas(s *volumeSnapshot) bool {
	n := s.counts()
	remaining := false
	for _, r := range s.sortedReplicas() {
		if deleting(r) || s.gone[r.Name] || failed(r) || !r.Spec.EvictionRequested {
			continue
		}
		if n.healthyRW-n.evictingRW < s.vol.Spec.NumberOfReplicas {
			remaining = true
			continue
		}
		s.deleteReplica(r)
		c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "EvictedReplica",
			"Removed replica %s from node %s: %d healthy replicas run elsewhere", r.Name, r.Spec.NodeID, n.healthyRW-n.evictingRW)
	}
	return remaining
}

package controller

import (
	"context"
	"fmt"

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

// Why a replica is evicted (evictionReason).
const (
	evictUser  = "user"  // spec.evictionRequested on its node or disk
	evictDrain = "drain" // node-drain-policy on a cordoned node
)

// evictionReason says whether replica r is to be evicted and why: its node
// or disk asks for it (evictUser), or its Kubernetes node is cordoned and
// node-drain-policy evicts it (evictDrain, drainEvicts); "" when not.
func (s *volumeSnapshot) evictionReason(r *longhorn.Replica) string {
	if evictionRequestedFor(r, s.nodes) {
		return evictUser
	}
	if drainEvicts(s.settings.drainPolicy, s.cordoned[r.Spec.NodeID], r, s.sortedReplicas()) {
		return evictDrain
	}
	return ""
}

// reconcileEviction sets each replica's spec.evictionRequested from its node
// and disk, and from node-drain-policy while its Kubernetes node is cordoned
// (as Longhorn's node controller does). The evicting replicas then count as
// surplus: replenish adds a replica elsewhere (the scheduler avoids evicting
// and cordoned nodes and disks) and cleanup removes an evicting replica
// once spec.numberOfReplicas healthy replicas live elsewhere, so the volume
// never drops below its count, and the last healthy replica waits. A
// detached volume is attached for it, frontend disabled, by a
// volume-eviction-controller attachment ticket, removed once no replica is
// evicting. Events: EvictionRequested, EvictionAutomatic (drain policy),
// EvictionCanceled.
func (c *VolumeController) reconcileEviction(ctx context.Context, s *volumeSnapshot) error {
	evicting := false
	defer func() {
		if err := c.syncEvictionTicket(ctx, s, evicting && s.vol.DeletionTimestamp == nil); err != nil {
			LoggerFrom(ctx).WithError(err).Warn("Eviction attachment ticket")
		}
	}()
	for _, r := range s.sortedReplicas() {
		if deleting(r) || s.fresh[r.Name] {
			continue
		}
		why := s.evictionReason(r)
		evicting = evicting || why != ""
		if r.Spec.EvictionRequested == (why != "") {
			continue
		}
		r.Spec.EvictionRequested = why != ""
		switch why {
		case evictUser:
			c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "EvictionRequested",
				"Replica %s on node %s is to be evicted (evictionRequested on its node or disk)", r.Name, r.Spec.NodeID)
		case evictDrain:
			c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "EvictionAutomatic",
				"Replica %s on cordoned node %s is to be evicted (node-drain-policy %s)", r.Name, r.Spec.NodeID, s.settings.drainPolicy)
		default:
			c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "EvictionCanceled",
				"Eviction of replica %s on node %s is canceled", r.Name, r.Spec.NodeID)
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

// syncEvictionTicket adds (want) or removes the volume's
// volume-eviction-controller attachment ticket, as Longhorn's volume
// eviction controller does.
func (c *VolumeController) syncEvictionTicket(ctx context.Context, s *volumeSnapshot, want bool) error {
	return c.syncControllerTicket(ctx, s, longhorn.AttacherTypeVolumeEvictionController, want)
}

// syncControllerTicket adds (want) or removes the volume's attachment
// ticket of a controller (attacher type typ): on the owner's node with the
// frontend disabled; an existing one stays where it is, and none is added
// while the volume has no owner.
func (c *VolumeController) syncControllerTicket(ctx context.Context, s *volumeSnapshot, typ longhorn.AttacherType, want bool) error {
	id := longhorn.GetAttachmentTicketID(typ, s.vol.Name)
	var mk func() *longhorn.AttachmentTicket
	if want {
		if s.vol.Status.OwnerID == "" {
			return nil
		}
		mk = func() *longhorn.AttachmentTicket {
			return &longhorn.AttachmentTicket{ID: id, Type: typ, NodeID: s.vol.Status.OwnerID,
				Parameters: map[string]string{longhorn.AttachmentParameterDisableFrontend: longhorn.TrueValue}}
		}
	}
	if _, err := c.setTicket(ctx, s.vol.Name, id, mk); err != nil {
		return fmt.Errorf("%s attachment ticket: %w", typ, err)
	}
	return nil
}

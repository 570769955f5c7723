package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
// drops below its count, and the last healthy replica waits. A detached
// volume is attached for it, frontend disabled, by a volume-eviction-
// controller attachment ticket, removed once no replica is evicting.
func (c *VolumeController) reconcileEviction(ctx context.Context, s *volumeSnapshot) error {
	evicting := false
	defer func() {
		if err := c.syncEvictionTicket(ctx, s, evicting && s.vol.DeletionTimestamp == nil); err != nil {
			LoggerFrom(ctx).WithError(err).Warn("Eviction attachment ticket")
		}
	}()
	for _, r := range s.sortedReplicas() {
		if !deleting(r) && !s.gone[r.Name] && evictionRequestedFor(r, s.nodes) {
			evicting = true
		}
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
	vaRO, err := c.ds.GetVolumeAttachmentRO(ctx, s.vol.Name)
	if apierrors.IsNotFound(err) {
		return nil // made by ensureVolumeAttachment; the next sync adds the ticket
	}
	if err != nil {
		return err
	}
	id := longhorn.GetAttachmentTicketID(typ, s.vol.Name)
	if _, has := vaRO.Spec.AttachmentTickets[id]; want == has || (want && s.vol.Status.OwnerID == "") {
		return nil
	}
	va := vaRO.DeepCopy()
	if !want {
		delete(va.Spec.AttachmentTickets, id)
	} else {
		if va.Spec.AttachmentTickets == nil {
			va.Spec.AttachmentTickets = map[string]*longhorn.AttachmentTicket{}
		}
		va.Spec.AttachmentTickets[id] = &longhorn.AttachmentTicket{ID: id, Type: typ,
			NodeID: s.vol.Status.OwnerID, Parameters: map[string]string{longhorn.AttachmentParameterDisableFrontend: longhorn.TrueValue}}
	}
	if _, err := c.ds.UpdateVolumeAttachment(ctx, va); err != nil {
		return fmt.Errorf("%s attachment ticket: %w", typ, err)
	}
	return nil
}

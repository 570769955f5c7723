package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Snapshots of a detached volume (Longhorn's snapshot controller): while a
// Snapshot object waits to be taken (spec.createSnapshot, not taken yet) or
// removed, and the volume's engine does not run, the controller of the
// volume's owner node puts a ticket of type snapshot-controller in the
// volume's VolumeAttachment, so the volume attaches on that node; the ticket
// goes once the snapshot is taken or removed.

// snapshotTicketID is the ticket of snapshot name (snapshot-controller-<name>).
func snapshotTicketID(name string) string {
	return longhorn.GetAttachmentTicketID(longhorn.AttacherTypeSnapshotController, name)
}

// snapshotNeedsEngine reports whether the Snapshot object waits for work
// only a running engine can do: being taken, or being removed while the
// volume has an engine (and so replica data). Pure.
func snapshotNeedsEngine(s *longhorn.Snapshot, hasEngine bool) bool {
	if s.DeletionTimestamp != nil {
		return hasEngine
	}
	return s.Spec.CreateSnapshot && s.Status.CreationTime == ""
}

// snapshotTicket returns the ticket that attaches the volume on node for
// snapshot name, frontend either way. Pure.
func snapshotTicket(name, node string) *longhorn.AttachmentTicket {
	return &longhorn.AttachmentTicket{ID: snapshotTicketID(name), Type: longhorn.AttacherTypeSnapshotController, NodeID: node,
		Parameters: map[string]string{longhorn.AttachmentParameterDisableFrontend: longhorn.AnyValue}}
}

// ensureSnapshotTicket adds the snapshot's ticket to the volume's
// VolumeAttachment when the volume's owner is this node; it reports
// whether the ticket is there.
func (c *SnapshotController) ensureSnapshotTicket(ctx context.Context, s *longhorn.Snapshot) (bool, error) {
	v, err := c.ds.GetVolumeRO(ctx, s.Spec.Volume)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil || v.Status.OwnerID != c.opts.NodeName || v.DeletionTimestamp != nil {
		return false, err
	}
	vaRO, err := c.ds.GetVolumeAttachmentRO(ctx, v.Name)
	if err != nil {
		return false, ignoreNotFound(err) // the volume controller creates it
	}
	id := snapshotTicketID(s.Name)
	if vaRO.Spec.AttachmentTickets[id] != nil {
		return true, nil
	}
	if _, err := c.setTicket(ctx, v.Name, id, func() *longhorn.AttachmentTicket { return snapshotTicket(s.Name, c.opts.NodeName) }); err != nil {
		return false, err
	}
	c.recorder.Eventf(s, "Normal", "Attaching", "Attaching volume %s on %s to take or remove snapshot %s", v.Name, c.opts.NodeName, s.Name)
	return true, nil
}

// dropSnapshotTicket removes the snapshot's ticket, if any.
func (c *SnapshotController) dropSnapshotTicket(ctx context.Context, s *longhorn.Snapshot) error {
	_, err := c.setTicket(ctx, s.Spec.Volume, snapshotTicketID(s.Name), nil)
	return ignoreNotFound(err)
}

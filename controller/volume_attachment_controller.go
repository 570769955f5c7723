package controller

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// VolumeAttachmentController turns attachment tickets into the volume's
// spec.nodeID and reports which tickets are satisfied.
type VolumeAttachmentController struct {
	*env
	w *Worker
}

func newVolumeAttachmentController(e *env) (runner, error) {
	c := &VolumeAttachmentController{env: e}
	c.w = NewWorker("longhorn-volume-attachment", c.syncVolumeAttachment)
	if err := addHandler(e.ds.VolumeAttachmentInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	// The volume attachment has the volume's name.
	if err := addHandler(e.ds.VolumeInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *VolumeAttachmentController) run(ctx context.Context, workers int) error {
	return c.w.Run(ctx, workers)
}

// selectTicket picks the ticket to attach for (Longhorn's
// selectAttachmentTicketToAttach): the highest attacher priority, then the
// lexicographically smallest ID. nil when there is no ticket.
func selectTicket(tickets map[string]*longhorn.AttachmentTicket) *longhorn.AttachmentTicket {
	var best *longhorn.AttachmentTicket
	ids := make([]string, 0, len(tickets))
	for id := range tickets {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t := tickets[id]
		if t == nil || t.NodeID == "" {
			continue
		}
		if best == nil || longhorn.GetAttacherPriorityLevel(t.Type) > longhorn.GetAttacherPriorityLevel(best.Type) {
			best = t
		}
	}
	return best
}

// decideAttachNode returns the node the volume should be attached to: it
// stays where it is while some ticket for that node accepts its frontend
// setting (so a ticket that comes in never interrupts the one the volume
// serves); a volume with no such ticket (none for its node, or only ones
// that want the other frontend setting: a clone finished in maintenance
// mode while a CSI ticket for the same node came in) detaches first; a
// detached volume goes to the selected ticket's node.
func decideAttachNode(v *longhorn.Volume, tickets map[string]*longhorn.AttachmentTicket) (node string, by *longhorn.AttachmentTicket) {
	if v.Spec.NodeID != "" {
		for _, t := range tickets {
			if t != nil && t.NodeID == v.Spec.NodeID && frontendAccepted(t, v.Spec.DisableFrontend) {
				return v.Spec.NodeID, nil
			}
		}
		return "", nil
	}
	if v.Status.State != longhorn.VolumeStateDetached {
		return "", nil
	}
	if t := selectTicket(tickets); t != nil {
		return t.NodeID, t
	}
	return "", nil
}

// frontendAccepted reports whether ticket t accepts a volume attached with
// the frontend disabled (disabled) or up: parameter disableFrontend "true"
// wants it disabled, "any" takes either, anything else wants it up.
func frontendAccepted(t *longhorn.AttachmentTicket, disabled bool) bool {
	switch t.Parameters[longhorn.AttachmentParameterDisableFrontend] {
	case longhorn.AnyValue:
		return true
	case longhorn.TrueValue:
		return disabled
	}
	return !disabled
}

// syncVolumeAttachment reconciles one volume's attachment.
func (c *VolumeAttachmentController) syncVolumeAttachment(ctx context.Context, key string) (Result, error) {
	name := splitKey(key)
	vaRO, err := c.ds.GetVolumeAttachmentRO(ctx, name)
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	volRO, err := c.ds.GetVolumeRO(ctx, vaRO.Spec.Volume)
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if volRO.Status.OwnerID != c.opts.NodeName || volRO.DeletionTimestamp != nil {
		return Done, nil
	}
	// A volume left alone is not attached or detached for its tickets either.
	if c.skipReconcile(vaRO, "VolumeAttachment") || skipReconcileRequested(volRO) {
		return Done, nil
	}
	node, by := decideAttachNode(volRO, vaRO.Spec.AttachmentTickets)
	if node != volRO.Spec.NodeID {
		v := volRO.DeepCopy()
		v.Spec.NodeID = node
		if by != nil {
			v.Spec.DisableFrontend = by.Parameters[longhorn.AttachmentParameterDisableFrontend] == longhorn.TrueValue
			v.Spec.LastAttachedBy = by.Parameters[longhorn.AttachmentParameterLastAttachedBy]
		}
		if _, err := c.ds.UpdateVolume(ctx, v); err != nil {
			return Done, fmt.Errorf("set volume %s spec.nodeID=%q: %w", v.Name, node, err)
		}
	}
	va := vaRO.DeepCopy()
	va.Status.AttachmentTicketStatuses = ticketStatuses(volRO, va.Spec.AttachmentTickets, va.Status.AttachmentTicketStatuses, c.now().UTC().Format("2006-01-02T15:04:05Z07:00"))
	if !reflect.DeepEqual(vaRO.Status, va.Status) {
		if _, err := c.ds.UpdateVolumeAttachmentStatus(ctx, va); err != nil {
			return Done, fmt.Errorf("update volume attachment status: %w", err)
		}
	}
	return Done, nil
}

// ticketStatuses marks each ticket satisfied when the volume is attached on
// its node with the frontend it asked for.
func ticketStatuses(v *longhorn.Volume, tickets map[string]*longhorn.AttachmentTicket,
	prev map[string]*longhorn.AttachmentTicketStatus, now string) map[string]*longhorn.AttachmentTicketStatus {
	out := map[string]*longhorn.AttachmentTicketStatus{}
	for id, t := range tickets {
		if t == nil {
			continue
		}
		st := &longhorn.AttachmentTicketStatus{ID: id, Generation: t.Generation}
		if p := prev[id]; p != nil {
			st.Conditions = append([]longhorn.Condition(nil), p.Conditions...)
		}
		attached := v.Status.State == longhorn.VolumeStateAttached && v.Status.CurrentNodeID == t.NodeID
		frontendOK := true
		switch t.Parameters[longhorn.AttachmentParameterDisableFrontend] {
		case longhorn.TrueValue:
			frontendOK = v.Status.FrontendDisabled
		case longhorn.FalseValue, "":
			frontendOK = !v.Status.FrontendDisabled
		}
		st.Satisfied = attached && frontendOK
		switch {
		case st.Satisfied:
			st.Conditions = setCond(st.Conditions, longhorn.AttachmentStatusConditionTypeSatisfied, true, "", "", now)
		case attached:
			st.Conditions = setCond(st.Conditions, longhorn.AttachmentStatusConditionTypeSatisfied, false,
				longhorn.AttachmentStatusConditionReasonAttachedWithIncompatibleParameters, "volume is attached with another frontend setting", now)
		default:
			st.Conditions = setCond(st.Conditions, longhorn.AttachmentStatusConditionTypeSatisfied, false, "",
				fmt.Sprintf("waiting for volume to attach to node %s", t.NodeID), now)
		}
		out[id] = st
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// setTicket makes ticket id present in volume's VolumeAttachment (mk
// non-nil: the ticket mk returns, called only when it is added) or absent
// (mk nil), and writes the VolumeAttachment only when that changes an
// existing ticket's presence; an existing ticket stays as it is. changed
// reports a write. A volume without a VolumeAttachment yet (the volume
// controller makes it) changes nothing. Errors: the cache's or the update's.
func (e *env) setTicket(ctx context.Context, volume, id string, mk func() *longhorn.AttachmentTicket) (changed bool, err error) {
	vaRO, err := e.ds.GetVolumeAttachmentRO(ctx, volume)
	if err != nil {
		return false, ignoreNotFound(err)
	}
	if _, has := vaRO.Spec.AttachmentTickets[id]; has == (mk != nil) {
		return false, nil
	}
	va := vaRO.DeepCopy()
	if mk == nil {
		delete(va.Spec.AttachmentTickets, id)
	} else {
		if va.Spec.AttachmentTickets == nil {
			va.Spec.AttachmentTickets = map[string]*longhorn.AttachmentTicket{}
		}
		va.Spec.AttachmentTickets[id] = mk()
	}
	if _, err := e.ds.UpdateVolumeAttachment(ctx, va); err != nil {
		return false, err
	}
	return true, nil
}

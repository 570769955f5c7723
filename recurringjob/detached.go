package recurringjob

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Detached volumes (setting allow-recurring-job-while-volume-detached, as
// Longhorn): when false, a job skips the volumes that are not attached;
// when true, a detached volume is attached for the job (without a
// frontend, on the node of the manager owning it) by a ticket of type
// recurring-job-app in its VolumeAttachment, and detached again by
// removing the ticket when the job is done with it.

// allowDetached reads setting allow-recurring-job-while-volume-detached
// (false when it is missing).
func (r *Runner) allowDetached(ctx context.Context) (bool, error) {
	s, err := r.LH.LonghornV1beta2().Settings(r.Namespace).Get(ctx, string(types.SettingNameAllowRecurringJobWhileVolumeDetached), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("setting %s: %w", types.SettingNameAllowRecurringJobWhileVolumeDetached, err)
	}
	return strings.EqualFold(strings.TrimSpace(s.Value), "true"), nil
}

// jobTicketID is the job's ticket in a volume's VolumeAttachment
// (recurring-job-app-<job>).
func jobTicketID(job string) string {
	return longhorn.GetAttachmentTicketID(longhorn.AttacherTypeRecurringJobApp, job)
}

// attachForJob puts the job's ticket in the detached volume's
// VolumeAttachment and waits until the volume is attached; the returned
// func removes the ticket (call it also when attachForJob fails).
func (r *Runner) attachForJob(ctx context.Context, job *longhorn.RecurringJob, v *longhorn.Volume, log logrus.FieldLogger) (func(), error) {
	node := v.Status.OwnerID
	id := jobTicketID(job.Name)
	detach := func() {
		// the job's context may be over: the ticket must still go
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.editTicket(dctx, v.Name, id, nil); err != nil {
			log.WithError(err).Warn("Cannot remove the recurring job's attachment ticket")
			return
		}
		log.Info("Detaching the volume attached for the recurring job")
	}
	if node == "" {
		return func() {}, fmt.Errorf("detached volume %s has no owner node to attach on", v.Name)
	}
	t := &longhorn.AttachmentTicket{ID: id, Type: longhorn.AttacherTypeRecurringJobApp, NodeID: node,
		Parameters: map[string]string{longhorn.AttachmentParameterDisableFrontend: longhorn.AnyValue}}
	if err := r.editTicket(ctx, v.Name, id, t); err != nil {
		return detach, fmt.Errorf("attach for the job: %w", err)
	}
	log.WithField("node", node).Info("Attaching the detached volume for the recurring job")
	err := r.wait(ctx, "volume "+v.Name+" attached for the job", func() (bool, error) {
		cur, err := r.LH.LonghornV1beta2().Volumes(r.Namespace).Get(ctx, v.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cur.Status.State == longhorn.VolumeStateAttached && cur.Status.CurrentNodeID == node, nil
	})
	return detach, err
}

// editTicket sets (t non-nil) or removes ticket id in the volume's
// VolumeAttachment, retrying on conflicts.
func (r *Runner) editTicket(ctx context.Context, volume, id string, t *longhorn.AttachmentTicket) error {
	vas := r.LH.LonghornV1beta2().VolumeAttachments(r.Namespace)
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		va, err := vas.Get(ctx, volume, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && t == nil {
				return nil
			}
			return err
		}
		if t == nil {
			if va.Spec.AttachmentTickets[id] == nil {
				return nil
			}
			delete(va.Spec.AttachmentTickets, id)
		} else {
			if va.Spec.AttachmentTickets == nil {
				va.Spec.AttachmentTickets = map[string]*longhorn.AttachmentTicket{}
			}
			va.Spec.AttachmentTickets[id] = t
		}
		_, err = vas.Update(ctx, va, metav1.UpdateOptions{})
		return err
	})
}

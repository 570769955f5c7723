package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Cloning a volume (spec.dataSource vol://<source> or
// snap://<source>/<snapshot>, Longhorn's volume clone, full copy):
//
//   - the first sync records status.cloneStatus {sourceVolume, snapshot,
//     state initiated}; for vol:// it first asks for a new snapshot of the
//     source (a Snapshot object named after the new volume's UID, which the
//     snapshot controller takes, attaching the source if need be);
//   - while initiated, the new volume holds an attachment ticket of type
//     volume-clone-controller on its owner's node with the frontend
//     disabled, and the source one (id volume-clone-controller-<new volume>)
//     wherever the source is attached, else on the same node, frontend
//     either way, as Longhorn's volume clone controller does;
//   - once both engines run and the source's lists the snapshot, the new
//     volume's engine gets spec.requestedDataSource snap://<source>/<snap>
//     and the engine controller clones the snapshot into every RW replica
//     (engine_clone.go);
//   - every replica holding the snapshot: state completed, the request and
//     both tickets go; a replica added later rebuilds from the others;
//   - a replica failing: state failed, attemptCount+1, and a new attempt at
//     nextAllowedAttemptAt (cloneBackoff).

// Clone retry backoff: cloneBackoffBase doubled per failed attempt, at most
// cloneBackoffMax.
const (
	cloneBackoffBase = 10 * time.Second
	cloneBackoffMax  = 5 * time.Minute
)

// cloneBackoff is the wait after the attempt-th failed attempt (1-based).
func cloneBackoff(attempt int) time.Duration {
	d := cloneBackoffBase
	for i := 1; i < attempt && d < cloneBackoffMax; i++ {
		d *= 2
	}
	return min(d, cloneBackoffMax)
}

// reconcileClone is the volume step of a clone (see above).
func (c *VolumeController) reconcileClone(ctx context.Context, s *volumeSnapshot) error {
	v := s.vol
	if v.Spec.DataSource == "" || s.eng == nil {
		return nil
	}
	cs := &v.Status.CloneStatus
	src, snap, ok := v.Spec.DataSource.Parse()
	if !ok {
		return nil // admission refuses other forms
	}
	switch cs.State {
	case longhorn.VolumeCloneStateCompleted:
		s.eng.Spec.RequestedDataSource = ""
		return c.syncCloneTickets(ctx, s, false)
	case longhorn.VolumeCloneStateEmpty:
		if snap == "" {
			snap = string(v.UID)
			if err := c.ensureCloneSnapshot(ctx, src, snap, v.Name); err != nil {
				return err
			}
		}
		*cs = longhorn.VolumeCloneStatus{SourceVolume: src, Snapshot: snap, State: longhorn.VolumeCloneStateInitiated}
		c.recorder.Eventf(v, corev1.EventTypeNormal, "VolumeCloneInitiated", "Cloning snapshot %s of volume %s into volume %s", snap, src, v.Name)
	case longhorn.VolumeCloneStateFailed:
		next, _ := time.Parse(time.RFC3339, cs.NextAllowedAttemptAt)
		if wait := next.Sub(s.now); wait > 0 {
			s.waitAtMost(wait)
			return c.syncCloneTickets(ctx, s, true)
		}
		cs.State = longhorn.VolumeCloneStateInitiated
	}
	if err := c.syncCloneTickets(ctx, s, true); err != nil {
		return err
	}
	c.followClone(ctx, s)
	return nil
}

// followClone asks the engine for the clone once both ends are ready and
// reads the outcome from the engine's status.
func (c *VolumeController) followClone(ctx context.Context, s *volumeSnapshot) {
	v, cs := s.vol, &s.vol.Status.CloneStatus
	want := longhorn.VolumeDataSource(longhorn.VolumeDataSourceSnapshotPrefix + cs.SourceVolume + "/" + cs.Snapshot)
	s.waitAtMost(WaitShort.RequeueAfter)
	if s.eng.Spec.RequestedDataSource != want {
		if why := c.cloneNotReady(ctx, s); why != "" {
			LoggerFrom(ctx).WithField("dataSource", v.Spec.DataSource).Debug("Clone waits: " + why)
			return
		}
		s.eng.Spec.RequestedDataSource = want
		return
	}
	if s.engRO.Spec.RequestedDataSource != want {
		return // the engine has not been asked yet
	}
	_, done, failure := cloneProgress(cs.Snapshot, cloneEntriesOf(s.engRO.Status.CloneStatus))
	switch {
	case done:
		cs.State = longhorn.VolumeCloneStateCompleted
		s.eng.Spec.RequestedDataSource = ""
		c.recorder.Eventf(v, corev1.EventTypeNormal, "VolumeCloneCompleted", "Volume %s holds snapshot %s of volume %s", v.Name, cs.Snapshot, cs.SourceVolume)
	case failure != "":
		cs.State = longhorn.VolumeCloneStateFailed
		cs.AttemptCount++
		wait := cloneBackoff(cs.AttemptCount)
		cs.NextAllowedAttemptAt = s.now.Add(wait).UTC().Format(time.RFC3339)
		s.eng.Spec.RequestedDataSource = ""
		s.waitAtMost(wait)
		c.recorder.Eventf(v, corev1.EventTypeWarning, "VolumeCloneFailed", "Cloning snapshot %s of volume %s failed (attempt %d, next in %s): %s",
			cs.Snapshot, cs.SourceVolume, cs.AttemptCount, wait, failure)
	}
}

// cloneNotReady says what the clone still waits for ("" = nothing): the
// new volume attached in maintenance mode, the source engine running with
// the snapshot.
func (c *VolumeController) cloneNotReady(ctx context.Context, s *volumeSnapshot) string {
	cs := s.vol.Status.CloneStatus
	switch {
	case s.vol.Status.State != longhorn.VolumeStateAttached || s.engRO.Status.CurrentState != longhorn.InstanceStateRunning:
		return "the volume is not attached yet"
	case engineFrontend(s.engRO) != "":
		return "the volume is attached with its frontend up"
	}
	// The source may be attached elsewhere for another ticket (a snapshot
	// being taken): clone once it is attached for this one.
	va, err := c.ds.GetVolumeAttachmentRO(ctx, cs.SourceVolume)
	if err == nil && !longhorn.IsAttachmentTicketSatisfied(longhorn.GetAttachmentTicketID(longhorn.AttacherTypeVolumeCloneController, s.vol.Name), va) {
		return "source volume " + cs.SourceVolume + " is not attached for the clone yet"
	}
	se, err := c.engineOfVolume(ctx, cs.SourceVolume)
	switch {
	case err != nil:
		return err.Error()
	case se == nil || se.Status.CurrentState != longhorn.InstanceStateRunning:
		return "source volume " + cs.SourceVolume + " is not attached yet"
	case se.Status.Snapshots[cs.Snapshot] == nil:
		return fmt.Sprintf("source volume %s has no snapshot %s yet", cs.SourceVolume, cs.Snapshot)
	}
	return ""
}

// ensureCloneSnapshot asks for snapshot name of volume src (a Snapshot
// object the snapshot controller takes).
func (c *VolumeController) ensureCloneSnapshot(ctx context.Context, src, name, target string) error {
	_, err := c.ds.CreateSnapshot(ctx, &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: longhorn.SnapshotSpec{Volume: src, CreateSnapshot: true}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("snapshot %s of source volume %s for clone %s: %w", name, src, target, err)
	}
	return nil
}

// syncCloneTickets adds (want) or removes the volume-clone-controller
// tickets of the new volume and of its source.
func (c *VolumeController) syncCloneTickets(ctx context.Context, s *volumeSnapshot, want bool) error {
	if err := c.syncControllerTicket(ctx, s, longhorn.AttacherTypeVolumeCloneController, want); err != nil {
		return err
	}
	src := s.vol.Status.CloneStatus.SourceVolume
	if src == "" {
		return nil
	}
	return c.syncSourceTicket(ctx, src, s.vol.Name, s.vol.Status.OwnerID, want && s.vol.Status.OwnerID != "")
}

// syncSourceTicket adds (want) or removes the ticket that keeps source
// volume src attached for the clone into target: on the node the source is
// attached to, else on node.
func (c *VolumeController) syncSourceTicket(ctx context.Context, src, target, node string, want bool) error {
	id := longhorn.GetAttachmentTicketID(longhorn.AttacherTypeVolumeCloneController, target)
	var mk func() *longhorn.AttachmentTicket
	if want {
		mk = func() *longhorn.AttachmentTicket {
			if sv, err := c.ds.GetVolumeRO(ctx, src); err == nil && sv.Status.CurrentNodeID != "" {
				node = sv.Status.CurrentNodeID
			}
			return &longhorn.AttachmentTicket{ID: id, Type: longhorn.AttacherTypeVolumeCloneController,
				NodeID: node, Parameters: map[string]string{longhorn.AttachmentParameterDisableFrontend: longhorn.AnyValue}}
		}
	}
	if _, err := c.setTicket(ctx, src, id, mk); err != nil {
		return fmt.Errorf("clone ticket on source volume %s: %w", src, err)
	}
	return nil
}

package controller

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Restoring a volume from a backup (spec.fromBackup, Longhorn's backup URL
// "<target>?backup=<name>&volume=<volume>"):
//
//   - the first sync sets status.restoreRequired and restoreInitiated (and
//     isStandby from spec.standby) and asks the engine for the backup
//     (spec.backupVolume, spec.requestedBackupRestore);
//   - while restoreRequired, the volume holds an attachment ticket of type
//     volume-restore-controller on its owner's node with the frontend
//     disabled, so the engine runs in maintenance mode and the engine
//     controller restores the backup into every replica;
//   - once the engine's status.lastRestoredBackup is the backup, a normal
//     volume clears restoreRequired, drops the ticket and detaches, ready for
//     use; a standby (DR) volume keeps following its backup volume's last
//     backup until spec.standby is cleared (activate), then finishes the
//     same way once the last backup is restored.
//
// The Restore condition is True (RestoreInProgress) while restoring, False
// with reason RestoreFailure and the replicas' errors when a restore
// failed, False with no reason when done.

// restoreView is what decideVolumeRestore looks at.
type restoreView struct {
	Standby      bool   // spec.standby
	Requested    string // the engine's spec.requestedBackupRestore
	LastBackup   string // the backup volume's last backup ("" = unknown)
	LastRestored string // the engine's status.lastRestoredBackup
	Failure      string // a replica's error restoring Requested ("" = none)
}

// restoreDecision is decideVolumeRestore's answer.
type restoreDecision struct {
	Request  string // a newer backup to ask the engine for ("" = keep)
	Complete bool   // the restore is over: the volume becomes a normal one
	Reason   string // the Restore condition's reason
	Message  string
}

// decideVolumeRestore decides one step of a restoring volume. Pure.
func decideVolumeRestore(v restoreView) restoreDecision {
	restored := v.Requested != "" && v.LastRestored == v.Requested
	if restored && v.LastBackup != "" && v.LastBackup != v.Requested {
		// a standby volume (or one activated meanwhile) follows the newest backup
		return restoreDecision{Request: v.LastBackup, Reason: longhorn.VolumeConditionReasonRestoreInProgress,
			Message: fmt.Sprintf("restoring backup %s incrementally", v.LastBackup)}
	}
	if restored && !v.Standby {
		return restoreDecision{Complete: true}
	}
	if v.Failure != "" {
		return restoreDecision{Reason: longhorn.VolumeConditionReasonRestoreFailure,
			Message: fmt.Sprintf("restoring backup %s failed: %s", v.Requested, v.Failure)}
	}
	if restored {
		return restoreDecision{Reason: longhorn.VolumeConditionReasonRestoreInProgress,
			Message: fmt.Sprintf("standby volume holds backup %s, waiting for newer backups", v.Requested)}
	}
	return restoreDecision{Reason: longhorn.VolumeConditionReasonRestoreInProgress, Message: fmt.Sprintf("restoring backup %s", v.Requested)}
}

// restoreFailure returns the replicas' errors restoring backup, sorted by
// replica address ("" when none failed).
func restoreFailure(e *longhorn.Engine, backup string) string {
	var addrs []string
	for a, st := range e.Status.RestoreStatus {
		if st != nil && st.Error != "" && !st.IsRestoring && st.CurrentRestoringBackup == backup {
			addrs = append(addrs, a)
		}
	}
	sort.Strings(addrs)
	msg := ""
	for i, a := range addrs {
		if i > 0 {
			msg += "; "
		}
		msg += fmt.Sprintf("replica %s: %s", a, e.Status.RestoreStatus[a].Error)
	}
	return msg
}

// reconcileRestore is the volume step of a restore (see above).
func (c *VolumeController) reconcileRestore(ctx context.Context, s *volumeSnapshot) error {
	v := s.vol
	if v.Spec.FromBackup == "" || s.eng == nil {
		return c.syncRestoreTicket(ctx, s, false)
	}
	ts := s.nowString()
	backup, bvName, targetURL, err := backupstore.DecodeBackupURL(v.Spec.FromBackup)
	if err == nil && backup == "" {
		err = fmt.Errorf("backup URL %q names no backup (want <target>?backup=<name>&volume=<volume>)", v.Spec.FromBackup)
	}
	if err != nil {
		if v.Status.RestoreRequired || !v.Status.RestoreInitiated {
			v.Status.Conditions = setCond(v.Status.Conditions, longhorn.VolumeConditionTypeRestore, false,
				longhorn.VolumeConditionReasonRestoreFailure, "spec.fromBackup: "+err.Error(), ts)
		}
		return c.syncRestoreTicket(ctx, s, false)
	}
	if !v.Status.RestoreInitiated {
		v.Status.RestoreRequired, v.Status.RestoreInitiated, v.Status.IsStandby = true, true, v.Spec.Standby
		s.eng.Spec.BackupVolume, s.eng.Spec.RequestedBackupRestore = bvName, backup
		c.recorder.Eventf(v, corev1.EventTypeNormal, "RestoreStarted", "Restoring volume %s from backup %s of backup volume %s", v.Name, backup, bvName)
	}
	if v.Status.RestoreRequired {
		if s.eng.Spec.RequestedBackupRestore == "" {
			// A completion whose volume status write failed cleared the
			// engine's request: ask again for what the engine holds.
			s.eng.Spec.BackupVolume, s.eng.Spec.RequestedBackupRestore = bvName, backup
			if last := s.engRO.Status.LastRestoredBackup; last != "" {
				s.eng.Spec.RequestedBackupRestore = last
			}
		}
		c.followRestore(ctx, s, bvName, targetURL, ts)
	}
	return c.syncRestoreTicket(ctx, s, v.Status.RestoreRequired)
}

// followRestore applies decideVolumeRestore to the working copies.
func (c *VolumeController) followRestore(ctx context.Context, s *volumeSnapshot, bvName, targetURL, ts string) {
	v := s.vol
	view := restoreView{Standby: v.Spec.Standby, Requested: s.eng.Spec.RequestedBackupRestore,
		LastRestored: s.engRO.Status.LastRestoredBackup, Failure: restoreFailure(s.engRO, s.eng.Spec.RequestedBackupRestore)}
	if v.Status.IsStandby {
		if bv := c.backupVolumeOf(ctx, targetURL, bvName, v.Spec.BackupTargetName); bv != nil && bv.Status.LastBackupName != "" {
			view.LastBackup = bv.Status.LastBackupName
			v.Status.LastBackup, v.Status.LastBackupAt = bv.Status.LastBackupName, bv.Status.LastBackupAt
		}
		s.waitAtMost(standbyPoll)
	}
	d := decideVolumeRestore(view)
	if d.Request != "" {
		s.eng.Spec.RequestedBackupRestore = d.Request
	}
	if !d.Complete {
		v.Status.Conditions = setCond(v.Status.Conditions, longhorn.VolumeConditionTypeRestore,
			d.Reason == longhorn.VolumeConditionReasonRestoreInProgress, d.Reason, d.Message, ts)
		return
	}
	v.Status.RestoreRequired, v.Status.IsStandby = false, false
	s.eng.Spec.RequestedBackupRestore, s.eng.Spec.BackupVolume = "", ""
	v.Status.Conditions = setCond(v.Status.Conditions, longhorn.VolumeConditionTypeRestore, false, "", "", ts)
	c.recorder.Eventf(v, corev1.EventTypeNormal, "RestoreCompleted", "Volume %s holds backup %s", v.Name, view.Requested)
}

// standbyPoll is how often a standby volume looks at its backup volume's
// last backup besides the BackupVolume's own changes.
const standbyPoll = 30 * time.Second

// backupVolumeOf returns the BackupVolume object of backup volume bvName in
// the target with targetURL (nil when there is none yet).
func (c *VolumeController) backupVolumeOf(ctx context.Context, targetURL, bvName, preferred string) *longhorn.BackupVolume {
	target := longhorn.BackupTargetDefault
	if bt := c.backupTargetByURL(ctx, targetURL, preferred); bt != nil {
		target = bt.Name
	}
	bv, err := c.ds.GetBackupVolumeRO(ctx, BackupVolumeName(target, bvName))
	if err != nil {
		return nil
	}
	return bv
}

// syncRestoreTicket adds (want) or removes the volume's
// volume-restore-controller attachment ticket (syncControllerTicket).
func (c *VolumeController) syncRestoreTicket(ctx context.Context, s *volumeSnapshot, want bool) error {
	return c.syncControllerTicket(ctx, s, longhorn.AttacherTypeVolumeRestoreController, want)
}

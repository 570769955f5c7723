package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// annotationBackupTargetURL is the target URL a Backup's backup was started with.
const annotationBackupTargetURL = types.AnnotationBackupTargetURL

// cancelPoll is how soon a canceled backup's end is looked at again.
const cancelPoll = 500 * time.Millisecond

// Replica backup states (Longhorn's types.ProcessState*).
const (
	replicaBackupInProgress = "in_progress"
	replicaBackupComplete   = "complete"
	replicaBackupError      = "error"
)

// backupStep is what the Backup controller does next with a started backup.
type backupStep int

const (
	stepPoll         backupStep = iota // running: record the progress, poll again
	stepCancel                         // running, and its target changed: cancel it
	stepFail                           // ended in an error
	stepFailCanceled                   // ended in an error after its target changed (canceled)
	stepComplete                       // ended complete (complete() checks the store)
)

// nextBackupStep decides from the URL the backup was started with (""
// for a backup started before the annotation existed: never canceled),
// the BackupTarget's URL now and the replica's state.
//
//	state        target unchanged  target changed
//	in_progress  stepPoll          stepCancel
//	error        stepFail          stepFailCanceled
//	complete     stepComplete      stepComplete
func nextBackupStep(startURL, targetURL, state string) backupStep {
	changed := startURL != "" && startURL != targetURL
	switch state {
	case replicaBackupError:
		if changed {
			return stepFailCanceled
		}
		return stepFail
	case replicaBackupComplete:
		return stepComplete
	}
	if changed {
		return stepCancel
	}
	return stepPoll
}

// adoptRunningBackup reports whether a backup the replicas already know
// under the Backup's name is this Backup's: started by an earlier sync whose
// status update was lost (a conflict), so it must be followed, not started
// a second time.
func adoptRunningBackup(st *engineapi.BackupStatus, snapshot string) bool {
	switch st.State {
	case replicaBackupInProgress:
		return true
	case replicaBackupComplete:
		return st.SnapshotName == snapshot
	}
	return false
}

// targetChangedMessage is the Backup's error when its target changed while
// the backup ran.
func targetChangedMessage(target, from, to, outcome string) string {
	return fmt.Sprintf("backup target %s changed from %s to %s while the backup ran; %s", target, from, to, outcome)
}

// cancelForTargetChange cancels a running backup whose target changed. A
// replica that cannot cancel (Longhorn's) keeps the backup running to its
// end, which complete() then reports as written to the old target.
func (c *BackupController) cancelForTargetChange(ctx context.Context, bRO *longhorn.Backup, eng engineapi.BackupClient,
	st *engineapi.BackupStatus, targetURL string) (Result, error) {
	err := eng.SnapshotBackupCancel(ctx, bRO.Name, st.ReplicaAddress)
	switch {
	case err == nil:
		c.recorder.Eventf(bRO, "Normal", "BackupCanceled", "Backup %s canceled: its backup target changed from %s to %s",
			bRO.Name, bRO.Annotations[annotationBackupTargetURL], targetURL)
		return Result{RequeueAfter: cancelPoll}, nil
	case engineapi.IsUnimplemented(err):
		return Result{RequeueAfter: backupPoll}, c.setStatus(ctx, bRO, func(s *longhorn.BackupStatus) { s.Progress = st.Progress })
	case engineapi.IsNotFound(err):
		return c.fail(ctx, bRO, "the replica taking the backup is gone: "+err.Error())
	}
	return Done, err
}

// stopBeforeDelete cancels a deleted Backup's backup that still runs and
// waits (non-Done Result) until it ended, so the store deletion does not
// wait behind its lock and no backup is left running for a gone object.
// A replica that cannot cancel is waited for.
func (c *BackupController) stopBeforeDelete(ctx context.Context, bRO *longhorn.Backup, volume string) (Result, error) {
	switch bRO.Status.State {
	case longhorn.BackupStateCompleted, longhorn.BackupStateError:
		return Done, nil
	}
	eng, _, err := c.backupEngine(ctx, volume)
	if err != nil || eng == nil {
		return Done, err
	}
	st, err := eng.SnapshotBackupStatus(ctx, bRO.Name, bRO.Status.ReplicaAddress)
	if engineapi.IsNotFound(err) || engineapi.IsUnavailable(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if st.State != replicaBackupInProgress {
		return Done, nil
	}
	err = eng.SnapshotBackupCancel(ctx, bRO.Name, st.ReplicaAddress)
	if err != nil && !engineapi.IsUnimplemented(err) && !engineapi.IsNotFound(err) {
		return Done, err
	}
	if err == nil {
		c.recorder.Eventf(bRO, "Normal", "BackupCanceled", "Backup %s canceled: the Backup is being deleted", bRO.Name)
	}
	return Result{RequeueAfter: cancelPoll}, nil
}

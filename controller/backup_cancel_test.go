package controller

import (
	"testing"

	"github.com/longhorn-go/longhorn/engineapi"
)

func TestNextBackupStep(t *testing.T) {
	const a, b = "s3://bucket@us-east-1/a", "nfs://server:/b"
	for _, tc := range []struct {
		start, now, state string
		want              backupStep
	}{
		{a, a, replicaBackupInProgress, stepPoll},
		{a, b, replicaBackupInProgress, stepCancel},
		{"", b, replicaBackupInProgress, stepPoll}, // started before the annotation: never canceled
		{a, a, replicaBackupError, stepFail},
		{a, b, replicaBackupError, stepFailCanceled},
		{a, a, replicaBackupComplete, stepComplete},
		{a, b, replicaBackupComplete, stepComplete}, // complete() says where it was written
		{a, a, "", stepPoll},
	} {
		if got := nextBackupStep(tc.start, tc.now, tc.state); got != tc.want {
			t.Errorf("nextBackupStep(%q, %q, %q) = %d, want %d", tc.start, tc.now, tc.state, got, tc.want)
		}
	}
}

// A retried start after a lost InProgress update follows the backup the
// replica runs (or completed from the same snapshot) instead of starting it
// again; a failed one, or one of another snapshot, is started anew.
func TestAdoptRunningBackup(t *testing.T) {
	for _, tc := range []struct {
		st   engineapi.BackupStatus
		want bool
	}{
		{engineapi.BackupStatus{State: replicaBackupInProgress}, true},
		{engineapi.BackupStatus{State: replicaBackupComplete, SnapshotName: "snap"}, true},
		{engineapi.BackupStatus{State: replicaBackupComplete, SnapshotName: "other"}, false},
		{engineapi.BackupStatus{State: replicaBackupError, SnapshotName: "snap"}, false},
	} {
		if got := adoptRunningBackup(&tc.st, "snap"); got != tc.want {
			t.Errorf("adoptRunningBackup(%+v) = %v, want %v", tc.st, got, tc.want)
		}
	}
}

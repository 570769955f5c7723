package metrics

import (
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func testBackup(name, owner, volume string, st longhorn.BackupState, size string) *longhorn.Backup {
	b := &longhorn.Backup{}
	b.Name, b.Labels = name, map[string]string{labelBackupVolume: volume}
	b.Status.OwnerID, b.Status.State, b.Status.Size = owner, st, size
	return b
}

func testSnapshot(name, volume string, size int64, user bool) *longhorn.Snapshot {
	s := &longhorn.Snapshot{}
	s.Name, s.Spec.Volume = name, volume
	s.Status.Size, s.Status.UserCreated = size, user
	return s
}

// TestBackupAndSnapshotMetrics: Longhorn's names, labels and state numbers
// for backups (owned by this node) and snapshots (of volumes it owns, the
// volume head left out), parsed with Prometheus' text parser.
func TestBackupAndSnapshotMetrics(t *testing.T) {
	job := testBackup("backup-b", "n1", "v1", longhorn.BackupStateInProgress, "")
	job.Spec.Labels = map[string]string{labelRecurringJob: "nightly"}
	src := fakeSource{vols: []*longhorn.Volume{testVolume("v1", "n1"), testVolume("v2", "n2")},
		backups: []*longhorn.Backup{
			testBackup("backup-a", "n1", "v1", longhorn.BackupStateCompleted, "4194304"),
			job,
			testBackup("backup-c", "n1", "v1", longhorn.BackupStateError, ""),
			testBackup("backup-other", "n2", "v2", longhorn.BackupStateCompleted, "1"),
		},
		snaps: map[string][]*longhorn.Snapshot{
			"v1": {testSnapshot("s1", "v1", 2<<20, true), testSnapshot("s2", "v1", 0, false), testSnapshot("volume-head", "v1", 9, false)},
			"v2": {testSnapshot("s9", "v2", 1, true)},
		}}
	fams := scrape(t, Handler(Options{Source: src, NodeName: "n1"}))
	want := []struct {
		name   string
		labels map[string]string
		v      float64
	}{
		{"longhorn_backup_actual_size_bytes", map[string]string{"volume": "v1", "backup": "backup-a", "recurring_job": ""}, 4 << 20},
		{"longhorn_backup_state", map[string]string{"volume": "v1", "backup": "backup-a", "recurring_job": ""}, 3},
		{"longhorn_backup_actual_size_bytes", map[string]string{"backup": "backup-b", "recurring_job": "nightly"}, 0},
		{"longhorn_backup_state", map[string]string{"backup": "backup-b", "recurring_job": "nightly"}, 2},
		{"longhorn_backup_state", map[string]string{"backup": "backup-c"}, 4},
		{"longhorn_snapshot_actual_size_bytes", map[string]string{"snapshot": "s1", "volume": "v1", "user_created": "true"}, 2 << 20},
		{"longhorn_snapshot_actual_size_bytes", map[string]string{"snapshot": "s2", "volume": "v1", "user_created": "false"}, 0},
	}
	for _, w := range want {
		if got, ok := value(fams, w.name, w.labels); !ok || got != w.v {
			t.Errorf("%s%v = %v (found %v), want %v", w.name, w.labels, got, ok, w.v)
		}
	}
	for name, l := range map[string]map[string]string{
		"longhorn_backup_state":               {"backup": "backup-other"},
		"longhorn_snapshot_actual_size_bytes": {"snapshot": "volume-head"},
	} {
		if _, ok := value(fams, name, l); ok {
			t.Errorf("%s%v reported", name, l)
		}
	}
	if _, ok := value(fams, "longhorn_snapshot_actual_size_bytes", map[string]string{"volume": "v2"}); ok {
		t.Error("a snapshot of a volume another node owns is reported")
	}
	if got := backupStateValue(longhorn.BackupStateDeleting); got != 5 {
		t.Errorf("Deleting = %v, want 5 (Unknown)", got)
	}
}

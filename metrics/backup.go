package metrics

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// The backup and snapshot metrics (Longhorn's metrics_collector
// backup_collector.go and snapshot_collector.go; names, labels and the
// state numbering are Longhorn's): each manager reports the backups whose
// status.ownerID is its node and the snapshots of the volumes it owns.
var (
	backupLabels = []string{"volume", "backup", "recurring_job"}

	descBackupSize   = desc("backup_actual_size_bytes", "Actual size of this backup", backupLabels...)
	descBackupState  = desc("backup_state", "State of this backup: 0=New, 1=Pending, 2=InProgress, 3=Completed, 4=Error, 5=Unknown", backupLabels...)
	descSnapshotSize = desc("snapshot_actual_size_bytes", "Actual size of this snapshot", "snapshot", "volume", "user_created")

	backupDescs = []*prometheus.Desc{descBackupSize, descBackupState, descSnapshotSize}
)

// labelBackupVolume is the label naming a Backup's backup volume
// (types.LonghornLabelKeyPrefix + "/" + types.LonghornLabelBackupVolume).
const labelBackupVolume = "longhorn.io/backup-volume"

// labelRecurringJob is the spec/status label naming the recurring job that
// made a backup or snapshot (recurringjob.LabelRecurringJob).
const labelRecurringJob = "RecurringJob"

// backupStateValue is Longhorn's number for state s (getBackupStateValue);
// Deleting, which Longhorn does not number, reads as Unknown.
func backupStateValue(s longhorn.BackupState) float64 {
	switch s {
	case longhorn.BackupStateNew:
		return 0
	case longhorn.BackupStatePending:
		return 1
	case longhorn.BackupStateInProgress:
		return 2
	case longhorn.BackupStateCompleted:
		return 3
	case longhorn.BackupStateError:
		return 4
	}
	return 5
}

// backupRow is the labels and values of one backup's metrics. Pure.
func backupRow(b *longhorn.Backup) (labels []string, size, state float64) {
	vol := b.Labels[labelBackupVolume]
	if vol == "" {
		vol = b.Status.VolumeName
	}
	job := b.Spec.Labels[labelRecurringJob]
	if job == "" {
		job = b.Status.Labels[labelRecurringJob]
	}
	size, _ = strconv.ParseFloat(b.Status.Size, 64) // "" before it completes: 0
	return []string{vol, b.Name, job}, size, backupStateValue(b.Status.State)
}

// collectBackups reports the backups this node owns.
func (c *collector) collectBackups(ctx context.Context, ch chan<- prometheus.Metric) {
	bs, err := c.o.Source.ListBackups(ctx)
	if err != nil {
		c.o.Log.WithError(err).Warn("metrics: list backups")
		return
	}
	for _, b := range bs {
		if b.Status.OwnerID != c.o.NodeName {
			continue
		}
		l, size, state := backupRow(b)
		gauge(ch, descBackupSize, size, l...)
		gauge(ch, descBackupState, state, l...)
	}
}

// collectSnapshots reports the snapshots of volume v (one this node owns),
// the volume head left out as Longhorn does.
func (c *collector) collectSnapshots(ctx context.Context, ch chan<- prometheus.Metric, v *longhorn.Volume) {
	ss, err := c.o.Source.ListSnapshots(ctx, v.Name)
	if err != nil {
		c.o.Log.WithError(err).WithField("volume", v.Name).Warn("metrics: list snapshots")
		return
	}
	for _, s := range ss {
		if s.Name == "volume-head" {
			continue
		}
		gauge(ch, descSnapshotSize, float64(s.Status.Size), s.Name, v.Name, strconv.FormatBool(s.Status.UserCreated))
	}
}

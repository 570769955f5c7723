package recurringjob

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// backup takes a snapshot, backs it up (a Backup object labeled with the
// volume, its spec.labels the job's), waits until it completes, then
// deletes the job's backups and snapshots beyond its retention. A backup
// that fails or does not end is an error naming it.
func (r *Runner) backup(ctx context.Context, job *longhorn.RecurringJob, volume string, log logrus.FieldLogger) error {
	snap, err := r.snapshot(ctx, job, volume)
	if err != nil {
		return err
	}
	name := "backup-" + newName(job.Name)
	_, err = r.LH.LonghornV1beta2().Backups(r.Namespace).Create(ctx, &longhorn.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace, Labels: map[string]string{labelBackupVolume: volume}},
		Spec:       longhorn.BackupSpec{SnapshotName: snap, Labels: jobLabels(job), BackupMode: backupMode(job)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create backup %s: %w", name, err)
	}
	err = r.wait(ctx, "backup "+name, func() (bool, error) {
		b, err := r.LH.LonghornV1beta2().Backups(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if b.Status.State == longhorn.BackupStateError {
			return false, errors.New(b.Status.Error)
		}
		return b.Status.State == longhorn.BackupStateCompleted, nil
	})
	if err != nil {
		return err
	}
	log.WithFields(logrus.Fields{"backup": name, "snapshot": snap}).Info("Backup completed")
	return errors.Join(r.deleteJobBackups(ctx, job, volume), r.cleanupJobSnapshots(ctx, job, volume, 0))
}

// backupMode is full when the job's full-backup-interval N is set and this
// is a run whose executionCount (before it) is a multiple of N, as
// Longhorn: with N = 5, runs 0, 5, 10, ... take full backups, the others
// incremental ones. "" (the backup controller's default, incremental)
// otherwise.
func backupMode(job *longhorn.RecurringJob) longhorn.BackupMode {
	n, err := strconv.Atoi(job.Spec.Parameters[longhorn.RecurringJobParameterFullBackupInterval])
	if err != nil || n <= 0 {
		return ""
	}
	if job.Status.ExecutionCount%n == 0 {
		return longhorn.BackupModeFull
	}
	return longhorn.BackupModeIncremental
}

func backupCreated(b *longhorn.Backup) time.Time {
	if t, err := time.Parse(time.RFC3339, b.Status.BackupCreatedAt); err == nil {
		return t
	}
	return b.CreationTimestamp.Time
}

// deleteJobBackups deletes the volume's completed backups of the job beyond
// its retention (the Backup controller removes them and their unused
// blocks from the backup target).
func (r *Runner) deleteJobBackups(ctx context.Context, job *longhorn.RecurringJob, volume string) error {
	list, err := r.LH.LonghornV1beta2().Backups(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelBackupVolume + "=" + volume})
	if err != nil {
		return fmt.Errorf("list backups: %w", err)
	}
	var items []Item
	for i := range list.Items {
		b := &list.Items[i]
		if b.DeletionTimestamp != nil || b.Status.State != longhorn.BackupStateCompleted {
			continue
		}
		if b.Spec.Labels[LabelRecurringJob] == job.Name || b.Status.Labels[LabelRecurringJob] == job.Name {
			items = append(items, Item{Name: b.Name, Created: backupCreated(b)})
		}
	}
	return r.deleteAll(ctx, "backup", Expired(items, job.Spec.RetentionPolicy, job.Spec.Retain, job.Spec.RetainAge.Duration, r.now()),
		func(n string) error {
			return r.LH.LonghornV1beta2().Backups(r.Namespace).Delete(ctx, n, metav1.DeleteOptions{})
		})
}

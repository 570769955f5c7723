package recurringjob

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/types"
)

// labelBackupVolume is the Backup object label naming its volume.
const labelBackupVolume = "longhorn.io/backup-volume"

// Runner runs one recurring job once against the Longhorn objects in
// Namespace. Poll is how often a snapshot or backup is looked at while
// waiting for it (0 = 1 s). ManagerURL is the manager's REST API
// (filesystem-trim calls the volume's trimFilesystem action there; "" =
// DefaultManagerURL).
type Runner struct {
	LH         versioned.Interface
	Namespace  string
	Log        logrus.FieldLogger
	Poll       time.Duration
	ManagerURL string
	now        func() time.Time
}

// ErrNotSupported is returned for a task this product cannot run yet.
var ErrNotSupported = errors.New("not supported yet")

// Run runs job name on each of its volumes, spec.concurrency at a time
// (at least 1). A volume that fails does not stop the others; the errors
// come back joined, each naming its volume. A volume that is not attached
// is skipped, or, when it is detached and setting
// allow-recurring-job-while-volume-detached is true, attached for the job
// and detached after it.
func (r *Runner) Run(ctx context.Context, name string) error {
	if r.now == nil {
		r.now = time.Now
	}
	job, err := r.LH.LonghornV1beta2().RecurringJobs(r.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("recurring job %s: %w", name, err)
	}
	if job.Spec.Task == longhorn.RecurringJobTypeSystemBackup {
		return fmt.Errorf("recurring job %s: task %s is %w", name, job.Spec.Task, ErrNotSupported)
	}
	if job, err = r.countExecution(ctx, job); err != nil {
		return fmt.Errorf("recurring job %s: count the execution: %w", name, err)
	}
	allowDetached, err := r.allowDetached(ctx)
	if err != nil {
		return err
	}
	list, err := r.LH.LonghornV1beta2().Volumes(r.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list volumes: %w", err)
	}
	vols := map[string]*longhorn.Volume{}
	var ptrs []*longhorn.Volume
	for i := range list.Items {
		vols[list.Items[i].Name] = &list.Items[i]
		ptrs = append(ptrs, &list.Items[i])
	}
	names := SelectVolumes(job, ptrs)
	r.Log.WithFields(logrus.Fields{"job": name, "task": job.Spec.Task, "volumes": names}).Info("Running recurring job")
	limit := max(job.Spec.Concurrency, 1)
	sem := make(chan struct{}, limit)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, vn := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := r.runVolume(ctx, job, vols[vn], allowDetached); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("volume %s: %w", vn, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// countExecution adds this run to the job's status.executionCount
// (Longhorn's count of triggered runs, which full-backup-interval reads)
// and returns the job as it was before, retrying on a conflicting update.
func (r *Runner) countExecution(ctx context.Context, job *longhorn.RecurringJob) (*longhorn.RecurringJob, error) {
	jobs := r.LH.LonghornV1beta2().RecurringJobs(r.Namespace)
	for attempt := 0; ; attempt++ {
		j := job.DeepCopy()
		j.Status.ExecutionCount++
		_, err := jobs.UpdateStatus(ctx, j, metav1.UpdateOptions{})
		if err == nil || !apierrors.IsConflict(err) || attempt == 4 {
			return job, err
		}
		if job, err = jobs.Get(ctx, job.Name, metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
}

func (r *Runner) runVolume(ctx context.Context, job *longhorn.RecurringJob, v *longhorn.Volume, allowDetached bool) error {
	log := r.Log.WithFields(logrus.Fields{"job": job.Name, "volume": v.Name})
	if job.Spec.Task == longhorn.RecurringJobTypeFilesystemTrim && v.Status.State != longhorn.VolumeStateAttached {
		// only an attached volume's filesystem can be mounted: attaching
		// one for the job would give nothing to trim
		log.WithField("state", v.Status.State).Info("Skipping a volume that is not attached: no mounted filesystem to trim")
		return nil
	}
	if v.Status.State != longhorn.VolumeStateAttached {
		if !allowDetached || v.Status.State != longhorn.VolumeStateDetached {
			log.WithField("state", v.Status.State).Info("Skipping a volume that is not attached")
			return nil
		}
		detach, err := r.attachForJob(ctx, job, v, log)
		defer detach()
		if err != nil {
			return err
		}
	}
	switch job.Spec.Task {
	case longhorn.RecurringJobTypeSnapshot, longhorn.RecurringJobTypeSnapshotForceCreate:
		if err := r.cleanupJobSnapshots(ctx, job, v.Name, 1); err != nil && job.Spec.Task == longhorn.RecurringJobTypeSnapshot {
			return fmt.Errorf("cleaning up before the snapshot (snapshot-force-create takes it anyway): %w", err)
		}
		if _, err := r.snapshot(ctx, job, v.Name); err != nil {
			return err
		}
		return r.cleanupJobSnapshots(ctx, job, v.Name, 0)
	case longhorn.RecurringJobTypeSnapshotDelete:
		return r.deleteSnapshots(ctx, job, v.Name, func(*longhorn.Snapshot) bool { return true })
	case longhorn.RecurringJobTypeSnapshotCleanup:
		return r.purgeSystemSnapshots(ctx, v.Name)
	case longhorn.RecurringJobTypeBackup, longhorn.RecurringJobTypeBackupForceCreate:
		return r.backup(ctx, job, v.Name, log)
	case longhorn.RecurringJobTypeFilesystemTrim:
		return r.trimFilesystem(ctx, v.Name)
	}
	return fmt.Errorf("task %q is %w", job.Spec.Task, ErrNotSupported)
}

// jobLabels are the labels of what the job makes: spec.labels and
// RecurringJob=<job>.
func jobLabels(job *longhorn.RecurringJob) map[string]string {
	out := map[string]string{}
	for k, v := range job.Spec.Labels {
		out[k] = v
	}
	out[LabelRecurringJob] = job.Name
	return out
}

// newName is <job name, up to 32 characters>-<8 random hex>.
func newName(job string) string {
	if len(job) > 32 {
		job = strings.TrimRight(job[:32], "-.")
	}
	return job + "-" + types.RandomID()
}

// snapshot takes a snapshot (a Snapshot object with createSnapshot) and
// waits until it is ready.
func (r *Runner) snapshot(ctx context.Context, job *longhorn.RecurringJob, volume string) (string, error) {
	name := newName(job.Name)
	_, err := r.LH.LonghornV1beta2().Snapshots(r.Namespace).Create(ctx, &longhorn.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace, Labels: map[string]string{"longhornvolume": volume}},
		Spec:       longhorn.SnapshotSpec{Volume: volume, CreateSnapshot: true, Labels: jobLabels(job)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create snapshot %s: %w", name, err)
	}
	err = r.wait(ctx, "snapshot "+name, func() (bool, error) {
		s, err := r.LH.LonghornV1beta2().Snapshots(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if s.Status.Error != "" {
			return false, errors.New(s.Status.Error)
		}
		return s.Status.ReadyToUse, nil
	})
	return name, err
}

// wait polls done until it is true, fails, or ctx ends.
func (r *Runner) wait(ctx context.Context, what string, done func() (bool, error)) error {
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	for {
		ok, err := done()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func snapshotCreated(s *longhorn.Snapshot) time.Time {
	if t, err := time.Parse(time.RFC3339, s.Status.CreationTime); err == nil {
		return t
	}
	return s.CreationTimestamp.Time
}

func (r *Runner) volumeSnapshots(ctx context.Context, volume string) ([]longhorn.Snapshot, error) {
	list, err := r.LH.LonghornV1beta2().Snapshots(r.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var out []longhorn.Snapshot
	for _, s := range list.Items {
		if s.Spec.Volume == volume && s.DeletionTimestamp == nil && s.Name != "volume-head" {
			out = append(out, s)
		}
	}
	return out, nil
}

func isJobSnapshot(job string) func(*longhorn.Snapshot) bool {
	return func(s *longhorn.Snapshot) bool {
		return s.Spec.Labels[LabelRecurringJob] == job || s.Status.Labels[LabelRecurringJob] == job
	}
}

// cleanupJobSnapshots deletes the job's snapshots beyond its retention,
// leaving room for `room` more.
func (r *Runner) cleanupJobSnapshots(ctx context.Context, job *longhorn.RecurringJob, volume string, room int) error {
	j := job.DeepCopy()
	j.Spec.Retain = max(j.Spec.Retain-room, 0)
	return r.deleteSnapshots(ctx, j, volume, isJobSnapshot(job.Name))
}

// deleteSnapshots deletes the volume's user snapshots that match and that
// the job's retention expires (a deleted Snapshot object is removed from
// the volume and purged by the snapshot controller).
func (r *Runner) deleteSnapshots(ctx context.Context, job *longhorn.RecurringJob, volume string, match func(*longhorn.Snapshot) bool) error {
	snaps, err := r.volumeSnapshots(ctx, volume)
	if err != nil {
		return err
	}
	var items []Item
	for i := range snaps {
		if s := &snaps[i]; s.Status.UserCreated && match(s) {
			items = append(items, Item{Name: s.Name, Created: snapshotCreated(s)})
		}
	}
	return r.deleteAll(ctx, "snapshot", Expired(items, job.Spec.RetentionPolicy, job.Spec.Retain, job.Spec.RetainAge.Duration, r.now()),
		func(n string) error {
			return r.LH.LonghornV1beta2().Snapshots(r.Namespace).Delete(ctx, n, metav1.DeleteOptions{})
		})
}

// purgeSystemSnapshots deletes the volume's system snapshots (not user
// created, e.g. left by rebuilds), as snapshot-cleanup does.
func (r *Runner) purgeSystemSnapshots(ctx context.Context, volume string) error {
	snaps, err := r.volumeSnapshots(ctx, volume)
	if err != nil {
		return err
	}
	var names []string
	for _, s := range snaps {
		if !s.Status.UserCreated && s.Status.CreationTime != "" {
			names = append(names, s.Name)
		}
	}
	return r.deleteAll(ctx, "snapshot", names,
		func(n string) error {
			return r.LH.LonghornV1beta2().Snapshots(r.Namespace).Delete(ctx, n, metav1.DeleteOptions{})
		})
}

func (r *Runner) deleteAll(ctx context.Context, kind string, names []string, del func(string) error) error {
	var errs []error
	for _, n := range names {
		if err := del(n); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s: %w", kind, n, err))
			continue
		}
		r.Log.WithField(kind, n).Info("Deleted by retention")
	}
	return errors.Join(errs...)
}

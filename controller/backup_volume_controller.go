package controller

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// backupFinalizer keeps BackupVolume and Backup objects until their data in
// the backupstore is removed (Longhorn's "longhorn.io" finalizer).
const backupFinalizer = "longhorn.io"

// BackupVolumeController keeps a BackupVolume's status and its Backup
// objects in step with the backupstore: every completed backup in the store
// has a Backup object (Completed), and a Completed object whose backup is
// gone from the store is dropped. Deleting a BackupVolume removes the backup
// volume from the store.
type BackupVolumeController struct {
	*env
	w *Worker
}

func newBackupVolumeController(e *env) (runner, error) {
	c := &BackupVolumeController{env: e}
	c.w = NewWorker("longhorn-backup-volume", c.syncBackupVolume)
	if err := addHandler(e.ds.BackupVolumeInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	// A target's sync (new lastSyncedAt) re-reads its backup volumes.
	if err := addHandler(e.ds.BackupTargetInformer(), onChange(func(obj any) {
		bt, ok := obj.(*longhorn.BackupTarget)
		if !ok {
			return
		}
		bvs, _ := e.ds.ListBackupVolumesRO(context.Background(), labels.SelectorFromSet(labels.Set{labelBackupTarget: bt.Name}))
		for _, bv := range bvs {
			c.w.EnqueueObject(bv)
		}
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *BackupVolumeController) run(ctx context.Context, workers int) error {
	return c.w.Run(ctx, workers)
}

func (c *BackupVolumeController) syncBackupVolume(ctx context.Context, key string) (Result, error) {
	bvRO, err := c.ds.GetBackupVolumeRO(ctx, splitKey(key))
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, "", bvRO.Status.OwnerID) {
		return Done, nil
	}
	if c.skipReconcile(bvRO, "BackupVolume") {
		return Done, nil
	}
	if bvRO.DeletionTimestamp != nil {
		return c.deleteBackupVolume(ctx, bvRO)
	}
	if !slices.Contains(bvRO.Finalizers, backupFinalizer) {
		bv := bvRO.DeepCopy()
		bv.Finalizers = append(bv.Finalizers, backupFinalizer)
		_, err := c.ds.UpdateBackupVolume(ctx, bv)
		return Done, err
	}
	btRO, err := c.ds.GetBackupTargetRO(ctx, bvRO.Spec.BackupTargetName)
	if err != nil || !btRO.Status.Available {
		return WaitShort, ignoreNotFound(err)
	}
	st, err := c.openTarget(ctx, btRO)
	if err != nil {
		return Done, err
	}
	defer st.Close()
	bv := bvRO.DeepCopy()
	bv.Status.OwnerID = c.opts.NodeName
	info, err := st.InspectVolume(ctx, bv.Spec.VolumeName)
	if err != nil {
		return Done, err
	}
	applyBackupVolumeInfo(&bv.Status, info)
	bv.Status.LastSyncedAt = metav1.NewTime(c.now())
	if err := c.syncBackups(ctx, st, bv); err != nil {
		return Done, err
	}
	if err := c.updateVolumeLastBackup(ctx, bv); err != nil {
		return Done, err
	}
	if !reflect.DeepEqual(bv.Status, bvRO.Status) {
		if _, err := c.ds.UpdateBackupVolumeStatus(ctx, bv); err != nil {
			return Done, err
		}
	}
	return Result{RequeueAfter: pollInterval(btRO)}, nil
}

func (e *env) openTarget(ctx context.Context, bt *longhorn.BackupTarget) (engineapi.BackupStore, error) {
	t, err := e.backupTargetOf(ctx, bt)
	if err != nil {
		return nil, err
	}
	return engineapi.OpenBackupStore(ctx, t)
}

func applyBackupVolumeInfo(st *longhorn.BackupVolumeStatus, v *engineapi.BackupVolumeInfo) {
	st.Size = strconv.FormatInt(v.Size, 10)
	st.Labels = v.Labels
	st.CreatedAt = v.Created
	st.LastBackupName = v.LastBackupName
	st.LastBackupAt = v.LastBackupAt
	st.DataStored = strconv.FormatInt(v.DataStored, 10)
	st.Messages = v.Messages
	st.BackingImageName = v.BackingImageName
	st.BackingImageChecksum = v.BackingImageChecksum
	st.StorageClassName = v.StorageClassName
}

// syncBackups creates a Completed Backup object for every completed backup
// in the store that has none, and drops Completed objects whose backup left
// the store (another cluster deleted it).
func (c *BackupVolumeController) syncBackups(ctx context.Context, st engineapi.BackupStore, bv *longhorn.BackupVolume) error {
	remote, err := st.ListBackupNames(ctx, bv.Spec.VolumeName)
	if err != nil {
		return err
	}
	sel := labels.SelectorFromSet(labels.Set{labelBackupVolume: bv.Spec.VolumeName, labelBackupTarget: bv.Spec.BackupTargetName})
	objs, err := c.ds.ListBackupsRO(ctx, sel)
	if err != nil {
		return err
	}
	have := map[string]*longhorn.Backup{}
	for _, b := range objs {
		have[b.Name] = b
	}
	for _, name := range remote {
		if have[name] != nil {
			continue
		}
		info, err := st.InspectBackup(ctx, bv.Spec.VolumeName, name)
		if errors.Is(err, engineapi.ErrBackupNotFound) {
			continue // in progress
		}
		if err != nil {
			return err
		}
		if err := c.createCompletedBackup(ctx, bv, info); err != nil {
			return err
		}
	}
	for name, b := range have {
		if b.Status.State == longhorn.BackupStateCompleted && !slices.Contains(remote, name) && b.DeletionTimestamp == nil {
			if err := c.forgetBackup(ctx, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *BackupVolumeController) createCompletedBackup(ctx context.Context, bv *longhorn.BackupVolume, info *engineapi.BackupInfo) error {
	b := &longhorn.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: info.Name, Finalizers: []string{backupFinalizer},
			Labels: map[string]string{labelBackupVolume: bv.Spec.VolumeName, labelBackupTarget: bv.Spec.BackupTargetName}},
		Spec: longhorn.BackupSpec{SnapshotName: info.SnapshotName, Labels: info.Labels},
	}
	created, err := c.ds.CreateBackup(ctx, b)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	created.Status = completedBackupStatus(info, bv.Spec.BackupTargetName, c.opts.NodeName, c.now())
	_, err = c.ds.UpdateBackupStatus(ctx, created)
	return err
}

// forgetBackup deletes a Backup object without touching the store.
func (e *env) forgetBackup(ctx context.Context, name string) error {
	b, err := e.ds.GetBackup(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[annotationForget] = "true"
	if _, err := e.ds.UpdateBackup(ctx, b); err != nil {
		return err
	}
	return ignoreNotFound(e.ds.DeleteBackup(ctx, name))
}

// deleteBackupVolume removes the backup volume from the store (unless it is
// gone there already), then the finalizer.
func (c *BackupVolumeController) deleteBackupVolume(ctx context.Context, bvRO *longhorn.BackupVolume) (Result, error) {
	if !slices.Contains(bvRO.Finalizers, backupFinalizer) {
		return Done, nil
	}
	if bvRO.Annotations[annotationForget] != "true" {
		btRO, err := c.ds.GetBackupTargetRO(ctx, bvRO.Spec.BackupTargetName)
		if err == nil && btRO.Status.Available {
			st, err := c.openTarget(ctx, btRO)
			if err != nil {
				return Done, err
			}
			err = st.DeleteVolume(ctx, bvRO.Spec.VolumeName)
			st.Close()
			if err != nil {
				return Done, err
			}
		}
	}
	sel := labels.SelectorFromSet(labels.Set{labelBackupVolume: bvRO.Spec.VolumeName, labelBackupTarget: bvRO.Spec.BackupTargetName})
	objs, err := c.ds.ListBackupsRO(ctx, sel)
	if err != nil {
		return Done, err
	}
	for _, b := range objs {
		if err := c.forgetBackup(ctx, b.Name); err != nil {
			return Done, err
		}
	}
	bv := bvRO.DeepCopy()
	bv.Finalizers = slices.DeleteFunc(bv.Finalizers, func(f string) bool { return f == backupFinalizer })
	_, err = c.ds.UpdateBackupVolume(ctx, bv)
	return Done, ignoreNotFound(err)
}

// updateVolumeLastBackup copies the backup volume's last backup into the
// Volume of the same name (status.lastBackup, lastBackupAt) when the volume
// uses this backup target, as Longhorn's backup volume controller does.
func (c *BackupVolumeController) updateVolumeLastBackup(ctx context.Context, bv *longhorn.BackupVolume) error {
	vRO, err := c.ds.GetVolumeRO(ctx, bv.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	target := vRO.Spec.BackupTargetName
	if target == "" {
		target = longhorn.BackupTargetDefault
	}
	if target != bv.Spec.BackupTargetName ||
		(vRO.Status.LastBackup == bv.Status.LastBackupName && vRO.Status.LastBackupAt == bv.Status.LastBackupAt) {
		return nil
	}
	v := vRO.DeepCopy()
	v.Status.LastBackup, v.Status.LastBackupAt = bv.Status.LastBackupName, bv.Status.LastBackupAt
	_, err = c.ds.UpdateVolumeStatus(ctx, v) // a conflict retries with backoff
	return err
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// BackupController takes the backup a new Backup object asks for (label
// longhorn.io/backup-volume names the volume, spec.snapshotName the
// snapshot) through the volume's engine, follows its progress into the
// status, and on deletion removes the backup from the store (its blocks
// that no other backup uses go with it).
type BackupController struct {
	*env
	w *Worker
}

func newBackupController(e *env) (runner, error) {
	c := &BackupController{env: e}
	c.w = NewWorker("longhorn-backup", c.syncBackup)
	if err := addHandler(e.ds.BackupInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *BackupController) run(ctx context.Context, workers int) error { return c.w.Run(ctx, workers) }

// backupPoll is how often a running backup's progress is read.
const backupPoll = 2 * time.Second

// completedBackupStatus is the status of a backup as the store shows it.
func completedBackupStatus(info *engineapi.BackupInfo, target, owner string, now time.Time) longhorn.BackupStatus {
	return longhorn.BackupStatus{
		OwnerID: owner, State: longhorn.BackupStateCompleted, Progress: 100, URL: info.URL,
		SnapshotName: info.SnapshotName, SnapshotCreatedAt: info.SnapshotCreated, BackupCreatedAt: info.Created,
		Size: strconv.FormatInt(info.Size, 10), Labels: info.Labels, Messages: info.Messages, VolumeName: info.VolumeName,
		VolumeSize: strconv.FormatInt(info.VolumeSize, 10), VolumeCreated: info.VolumeCreated,
		VolumeBackingImageName: info.VolumeBackingImage, LastSyncedAt: metav1.NewTime(now),
		CompressionMethod:     longhorn.BackupCompressionMethod(info.CompressionMethod),
		NewlyUploadedDataSize: strconv.FormatInt(info.NewlyUploadedDataSize, 10),
		ReUploadedDataSize:    strconv.FormatInt(info.ReUploadedDataSize, 10), BackupTargetName: target,
	}
}

func (c *BackupController) syncBackup(ctx context.Context, key string) (Result, error) {
	bRO, err := c.ds.GetBackupRO(ctx, splitKey(key))
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, "", bRO.Status.OwnerID) {
		return Done, nil
	}
	if c.skipReconcile(bRO, "Backup") {
		return Done, nil
	}
	if bRO, err = c.claim(ctx, bRO); err != nil || bRO == nil {
		return Done, err
	}
	if bRO.DeletionTimestamp != nil {
		return c.deleteBackup(ctx, bRO)
	}
	if !slices.Contains(bRO.Finalizers, backupFinalizer) {
		b := bRO.DeepCopy()
		b.Finalizers = append(b.Finalizers, backupFinalizer)
		_, err := c.ds.UpdateBackup(ctx, b)
		return Done, err
	}
	switch bRO.Status.State {
	case longhorn.BackupStateNew, longhorn.BackupStatePending:
		return c.startBackup(ctx, bRO)
	case longhorn.BackupStateInProgress:
		return c.followBackup(ctx, bRO)
	}
	return Done, nil
}

// claim makes this manager the Backup's owner before it acts, as Longhorn's
// backup controller does: while a new Backup has no owner every manager is
// responsible for it, and the status update's resourceVersion lets only one
// of them win (the others get a conflict and leave it, nil). Without it each
// manager started the same backup: three lock files, serialized in 10 s
// steps, and the backup ran up to three times.
func (c *BackupController) claim(ctx context.Context, bRO *longhorn.Backup) (*longhorn.Backup, error) {
	if bRO.Status.OwnerID == c.opts.NodeName {
		return bRO, nil
	}
	b := bRO.DeepCopy()
	b.Status.OwnerID = c.opts.NodeName
	b, err := c.ds.UpdateBackupStatus(ctx, b)
	if apierrors.IsConflict(err) {
		return nil, nil
	}
	return b, err
}

// targetName is the Backup's backup target (label, then the default).
func targetName(b *longhorn.Backup) string {
	if t := b.Labels[labelBackupTarget]; t != "" {
		return t
	}
	return longhorn.BackupTargetDefault
}

// backupEngine returns the engine client of the backup's volume, or a
// message saying why there is none yet.
func (c *BackupController) backupEngine(ctx context.Context, volume string) (engineapi.BackupClient, string, error) {
	engines, err := c.ds.ListEnginesByVolumeRO(ctx, volume)
	if err != nil {
		return nil, "", err
	}
	for _, e := range engines {
		if e.Status.CurrentState != longhorn.InstanceStateRunning || e.Status.IP == "" {
			continue
		}
		cl, err := c.api.Engine(ctx, imAddressOfEngine(e), engineRef(e))
		if err != nil {
			return nil, "", err
		}
		bc, ok := cl.(engineapi.BackupClient)
		if !ok {
			return nil, "", fmt.Errorf("engine %s cannot take backups", e.Name)
		}
		return bc, "", nil
	}
	return nil, fmt.Sprintf("volume %s has no running engine: attach it to back it up", volume), nil
}

func (c *BackupController) setStatus(ctx context.Context, bRO *longhorn.Backup, fn func(*longhorn.BackupStatus)) error {
	b := bRO.DeepCopy()
	b.Status.OwnerID = c.opts.NodeName
	fn(&b.Status)
	if reflect.DeepEqual(b.Status, bRO.Status) {
		return nil
	}
	_, err := c.ds.UpdateBackupStatus(ctx, b)
	return err
}

func (c *BackupController) fail(ctx context.Context, bRO *longhorn.Backup, msg string) (Result, error) {
	c.recorder.Eventf(bRO, "Warning", "BackupFailed", "Backup %s failed: %s", bRO.Name, msg)
	return Done, c.setStatus(ctx, bRO, func(s *longhorn.BackupStatus) { s.State, s.Error = longhorn.BackupStateError, msg })
}

func (c *BackupController) startBackup(ctx context.Context, bRO *longhorn.Backup) (Result, error) {
	volume := bRO.Labels[labelBackupVolume]
	if volume == "" || bRO.Spec.SnapshotName == "" {
		return c.fail(ctx, bRO, "label longhorn.io/backup-volume and spec.snapshotName are required to take a backup")
	}
	btRO, err := c.ds.GetBackupTargetRO(ctx, targetName(bRO))
	if err != nil {
		return c.fail(ctx, bRO, fmt.Sprintf("backup target %s: %v", targetName(bRO), err))
	}
	if !btRO.Status.Available {
		cond := longhorn.GetCondition(btRO.Status.Conditions, longhorn.BackupTargetConditionTypeUnavailable)
		return c.fail(ctx, bRO, fmt.Sprintf("backup target %s is unavailable: %s", btRO.Name, cond.Message))
	}
	eng, why, err := c.backupEngine(ctx, volume)
	if err != nil {
		return Done, err
	}
	if eng == nil {
		return WaitShort, c.setStatus(ctx, bRO, func(s *longhorn.BackupStatus) { s.State, s.Error = longhorn.BackupStatePending, why })
	}
	t, err := c.backupTargetOf(ctx, btRO)
	if err != nil {
		return c.fail(ctx, bRO, err.Error())
	}
	if bRO.Annotations[annotationBackupTargetURL] != btRO.Spec.BackupTargetURL {
		// recorded first, so a target change while the backup runs is seen
		return Done, c.recordTargetURL(ctx, bRO, btRO.Spec.BackupTargetURL)
	}
	if res, adopted, err := c.adoptStarted(ctx, bRO, eng, volume, btRO.Name); adopted || err != nil {
		return res, err
	}
	vRO, _ := c.ds.GetVolumeRO(ctx, volume) // nil: the settings decide
	params, compression := backupOptions(bRO, vRO, c.settingString(ctx, types.SettingNameBackupCompressionMethod))
	started, err := eng.SnapshotBackup(ctx, engineapi.SnapshotBackupRequest{Target: t, SnapshotName: bRO.Spec.SnapshotName,
		BackupName: bRO.Name, Labels: bRO.Spec.Labels, Parameters: params,
		CompressionMethod: compression,
		ConcurrentLimit:   int(c.settingInt(ctx, types.SettingNameBackupConcurrentLimit))})
	if err != nil {
		return c.fail(ctx, bRO, err.Error())
	}
	return Result{RequeueAfter: backupPoll}, c.setStatus(ctx, bRO, func(s *longhorn.BackupStatus) {
		s.State, s.Error, s.ReplicaAddress = longhorn.BackupStateInProgress, "", started.ReplicaAddress
		s.SnapshotName, s.VolumeName, s.BackupTargetName = bRO.Spec.SnapshotName, volume, btRO.Name
	})
}

func (c *BackupController) recordTargetURL(ctx context.Context, bRO *longhorn.Backup, url string) error {
	b := bRO.DeepCopy()
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[annotationBackupTargetURL] = url
	_, err := c.ds.UpdateBackup(ctx, b)
	return err
}

// adoptStarted follows a backup the replicas already run (or ran) under
// this Backup's name instead of starting it again: an earlier sync started
// it and its InProgress status update was lost. Without this the retry
// started the backup a second time (refused as busy, failing the Backup,
// or run again after it completed).
func (c *BackupController) adoptStarted(ctx context.Context, bRO *longhorn.Backup, eng engineapi.BackupClient,
	volume, target string) (Result, bool, error) {
	st, err := eng.SnapshotBackupStatus(ctx, bRO.Name, "")
	if engineapi.IsNotFound(err) || engineapi.IsUnavailable(err) {
		// no replica knows it (an unreachable one would be taking no backup either)
		return Done, false, nil
	}
	if err != nil {
		return Done, false, err
	}
	if !adoptRunningBackup(st, bRO.Spec.SnapshotName) {
		return Done, false, nil
	}
	return Result{RequeueAfter: cancelPoll}, true, c.setStatus(ctx, bRO, func(s *longhorn.BackupStatus) {
		s.State, s.Error, s.ReplicaAddress = longhorn.BackupStateInProgress, "", st.ReplicaAddress
		s.SnapshotName, s.VolumeName, s.BackupTargetName = bRO.Spec.SnapshotName, volume, target
	})
}

// backupOptions decides a backup's engine parameters and compression, as
// Longhorn does: the block size (bytes) of the Backup, else of the volume
// (spec.backupBlockSize, set at creation from default-backup-block-size),
// else the engine's default; the compression of the volume
// (spec.backupCompressionMethod, fixed at creation), else the
// backup-compression-method setting. v may be nil.
func backupOptions(b *longhorn.Backup, v *longhorn.Volume, settingCompression string) (map[string]string, string) {
	params := map[string]string{}
	if b.Spec.BackupMode != "" {
		params["backup-mode"] = string(b.Spec.BackupMode)
	}
	block, compression := int64(0), settingCompression
	if v != nil && v.Spec.BackupBlockSize > 0 {
		block = v.Spec.BackupBlockSize
	}
	if b.Spec.BackupBlockSize > 0 {
		block = b.Spec.BackupBlockSize
	}
	if block > 0 {
		params["backup-block-size"] = strconv.FormatInt(block, 10)
	}
	if v != nil && v.Spec.BackupCompressionMethod != "" {
		compression = string(v.Spec.BackupCompressionMethod)
	}
	return params, compression
}

func (c *BackupController) followBackup(ctx context.Context, bRO *longhorn.Backup) (Result, error) {
	eng, why, err := c.backupEngine(ctx, bRO.Labels[labelBackupVolume])
	if err != nil {
		return Done, err
	}
	if eng == nil {
		return c.fail(ctx, bRO, "the engine went away during the backup: "+why)
	}
	st, err := eng.SnapshotBackupStatus(ctx, bRO.Name, bRO.Status.ReplicaAddress)
	if err != nil {
		if engineapi.IsNotFound(err) || engineapi.IsUnavailable(err) {
			return c.fail(ctx, bRO, "the replica taking the backup is gone: "+err.Error())
		}
		return Done, err
	}
	startURL, targetURL := bRO.Annotations[annotationBackupTargetURL], startURLOf(bRO)
	if btRO, err := c.ds.GetBackupTargetRO(ctx, targetName(bRO)); err == nil {
		targetURL = btRO.Spec.BackupTargetURL
	}
	switch nextBackupStep(startURL, targetURL, st.State) {
	case stepCancel:
		return c.cancelForTargetChange(ctx, bRO, eng, st, targetURL)
	case stepFailCanceled:
		return c.fail(ctx, bRO, targetChangedMessage(targetName(bRO), startURL, targetURL, "the backup was canceled"))
	case stepFail:
		return c.fail(ctx, bRO, st.Error)
	case stepComplete:
		return Done, c.complete(ctx, bRO, st.BackupURL)
	}
	return Result{RequeueAfter: backupPoll}, c.setStatus(ctx, bRO, func(s *longhorn.BackupStatus) { s.Progress = st.Progress })
}

// startURLOf is the target URL the backup started with ("" when unknown).
func startURLOf(b *longhorn.Backup) string { return b.Annotations[annotationBackupTargetURL] }

func (c *BackupController) complete(ctx context.Context, bRO *longhorn.Backup, url string) error {
	btRO, err := c.ds.GetBackupTargetRO(ctx, targetName(bRO))
	if err != nil {
		return err
	}
	store, err := c.openTarget(ctx, btRO)
	if err != nil {
		return err
	}
	defer store.Close()
	info, err := store.InspectBackup(ctx, bRO.Labels[labelBackupVolume], bRO.Name)
	if errors.Is(err, engineapi.ErrBackupNotFound) {
		if _, _, written, derr := engineapi.DecodeBackupURL(url); derr == nil && written != btRO.Spec.BackupTargetURL {
			// the target changed while the backup ran: it went to the old
			// target, which the manager no longer follows
			_, ferr := c.fail(ctx, bRO, targetChangedMessage(btRO.Name, written, btRO.Spec.BackupTargetURL,
				"the backup was written to "+written))
			return ferr
		}
		// a backup the replica reports complete that the store lacks (an
		// earlier Backup of the same name, deleted): retrying cannot help
		_, ferr := c.fail(ctx, bRO, fmt.Sprintf("backup %s is not in backup target %s (%s)", bRO.Name, btRO.Name, btRO.Spec.BackupTargetURL))
		return ferr
	}
	if err != nil {
		return err
	}
	if url != "" {
		info.URL = url
	}
	if err := c.syncBackupVolumeOf(ctx, btRO.Name, bRO.Labels[labelBackupVolume]); err != nil {
		return err
	}
	c.recorder.Eventf(bRO, "Normal", "BackupCompleted", "Backup %s of snapshot %s completed", bRO.Name, info.SnapshotName)
	return c.setStatus(ctx, bRO, func(s *longhorn.BackupStatus) {
		replica := s.ReplicaAddress
		*s = completedBackupStatus(info, btRO.Name, c.opts.NodeName, c.now())
		s.ReplicaAddress = replica
	})
}

// syncBackupVolumeOf asks the volume's BackupVolume in target to re-read the
// store now (spec.syncRequestedAt), creating it for a volume's first backup,
// as Longhorn's backup controller does when a backup completes: its size and
// last backup show at once instead of after the next poll.
func (c *BackupController) syncBackupVolumeOf(ctx context.Context, target, volume string) error {
	name := BackupVolumeName(target, volume)
	bv, err := c.ds.GetBackupVolume(ctx, name)
	if apierrors.IsNotFound(err) {
		create, _ := planBackupVolumes(target, []string{volume}, nil)
		_, err = c.ds.CreateBackupVolume(ctx, create[0])
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	bv.Spec.SyncRequestedAt = metav1.NewTime(c.now())
	_, err = c.ds.UpdateBackupVolume(ctx, bv)
	return err
}

// deleteBackup removes the backup from the store unless it never got there
// or is gone already, then the finalizer. An unavailable target keeps the
// object (Deleting) until it can be removed.
func (c *BackupController) deleteBackup(ctx context.Context, bRO *longhorn.Backup) (Result, error) {
	if !slices.Contains(bRO.Finalizers, backupFinalizer) {
		return Done, nil
	}
	volume := bRO.Labels[labelBackupVolume]
	if volume != "" {
		if res, err := c.stopBeforeDelete(ctx, bRO, volume); err != nil || res != Done {
			return res, err
		}
	}
	if bRO.Annotations[annotationForget] != "true" && volume != "" && bRO.Status.State != longhorn.BackupStateNew {
		if res, err := c.deleteFromStore(ctx, bRO, volume); err != nil || res != Done {
			return res, err
		}
	}
	b := bRO.DeepCopy()
	b.Finalizers = slices.DeleteFunc(b.Finalizers, func(f string) bool { return f == backupFinalizer })
	_, err := c.ds.UpdateBackup(ctx, b)
	return Done, ignoreNotFound(err)
}

// deleteFromStore removes the backup from its target's store; an
// unavailable target marks it Deleting and waits; a missing target leaves
// nothing to remove.
func (c *BackupController) deleteFromStore(ctx context.Context, bRO *longhorn.Backup, volume string) (Result, error) {
	btRO, err := c.ds.GetBackupTargetRO(ctx, targetName(bRO))
	if err != nil {
		return Done, nil
	}
	if !btRO.Status.Available {
		return WaitShort, c.setStatus(ctx, bRO, func(s *longhorn.BackupStatus) { s.State = longhorn.BackupStateDeleting })
	}
	store, err := c.openTarget(ctx, btRO)
	if err != nil {
		return Done, err
	}
	err = store.DeleteBackup(ctx, volume, bRO.Name)
	store.Close()
	return Done, err
}

// settingString returns a setting's value ("" when unreadable: the engine
// then uses its own default).
func (e *env) settingString(ctx context.Context, name types.SettingName) string {
	v, _ := e.ds.GetSettingValue(ctx, name)
	return v
}

// settingInt returns an integer setting (0 when unreadable).
func (e *env) settingInt(ctx context.Context, name types.SettingName) int64 {
	v, _ := e.ds.GetSettingAsInt(ctx, name)
	return v
}

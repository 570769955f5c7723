package api_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/datastore"
	lh "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	lhclient "github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/typed/longhorn/v1beta2"
)

type dsRef = *datastore.DataStore

// moreKinds continues TestEveryKind with the remaining kinds.
func moreKinds(t *testing.T, ds dsRef, c lhclient.LonghornV1beta2Interface) {
	t.Run("EngineImage", func(t *testing.T) {
		exerciseKind(t, ds, c.EngineImages(ns), kindCase[*lh.EngineImage]{
			obj:     &lh.EngineImage{ObjectMeta: om("ei-0123abcd"), Spec: lh.EngineImageSpec{Image: "longhorn-go/longhorn:dev"}},
			setSpec: func(o *lh.EngineImage) { o.Labels = map[string]string{"touched": "yes"} },
			specSet: func(o *lh.EngineImage) bool { return o.Labels["touched"] == "yes" },
			setStatus: func(o *lh.EngineImage) {
				o.Status.State, o.Status.RefCount, o.Status.CLIAPIVersion = lh.EngineImageStateDeployed, 2, 9
			},
			statusSet: func(o *lh.EngineImage) bool {
				return o.Status.State == lh.EngineImageStateDeployed && o.Status.CLIAPIVersion == 9
			},
			cached: func(ctx context.Context, ds dsRef, n string) (*lh.EngineImage, error) {
				return ds.GetEngineImageRO(ctx, n)
			},
		})
	})
	t.Run("Snapshot", func(t *testing.T) {
		exerciseKind(t, ds, c.Snapshots(ns), kindCase[*lh.Snapshot]{
			obj:       &lh.Snapshot{ObjectMeta: om("crud-snap"), Spec: lh.SnapshotSpec{Volume: "crud-vol", CreateSnapshot: true}},
			setSpec:   func(o *lh.Snapshot) { o.Spec.Labels = map[string]string{"k": "v"} },
			specSet:   func(o *lh.Snapshot) bool { return o.Spec.Labels["k"] == "v" },
			setStatus: func(o *lh.Snapshot) { o.Status.ReadyToUse, o.Status.Size = true, 4096 },
			statusSet: func(o *lh.Snapshot) bool { return o.Status.ReadyToUse && o.Status.Size == 4096 },
		})
	})
	t.Run("Backup", func(t *testing.T) {
		exerciseKind(t, ds, c.Backups(ns), kindCase[*lh.Backup]{
			obj:       &lh.Backup{ObjectMeta: om("backup-0123abcd"), Spec: lh.BackupSpec{SnapshotName: "crud-snap", BackupMode: lh.BackupModeIncremental}},
			setSpec:   func(o *lh.Backup) { o.Spec.BackupBlockSize = lh.BackupBlockSize16Mi },
			specSet:   func(o *lh.Backup) bool { return o.Spec.BackupBlockSize == lh.BackupBlockSize16Mi },
			setStatus: func(o *lh.Backup) { o.Status.State, o.Status.Progress = lh.BackupStateInProgress, 40 },
			statusSet: func(o *lh.Backup) bool { return o.Status.State == lh.BackupStateInProgress && o.Status.Progress == 40 },
		})
	})
	t.Run("BackupTarget", func(t *testing.T) {
		exerciseKind(t, ds, c.BackupTargets(ns), kindCase[*lh.BackupTarget]{
			obj:       &lh.BackupTarget{ObjectMeta: om(lh.BackupTargetDefault), Spec: lh.BackupTargetSpec{BackupTargetURL: "nfs://10.0.0.9:/exports", PollInterval: metav1.Duration{Duration: 5 * time.Minute}}},
			setSpec:   func(o *lh.BackupTarget) { o.Spec.CredentialSecret = "s3-secret" },
			specSet:   func(o *lh.BackupTarget) bool { return o.Spec.CredentialSecret == "s3-secret" },
			setStatus: func(o *lh.BackupTarget) { o.Status.Available, o.Status.OwnerID = true, owner },
			statusSet: func(o *lh.BackupTarget) bool { return o.Status.Available },
			cached: func(ctx context.Context, ds dsRef, n string) (*lh.BackupTarget, error) {
				return ds.GetBackupTargetRO(ctx, n)
			},
		})
	})
	t.Run("BackupVolume", func(t *testing.T) {
		exerciseKind(t, ds, c.BackupVolumes(ns), kindCase[*lh.BackupVolume]{
			obj:       &lh.BackupVolume{ObjectMeta: om("crud-vol-0123abcd"), Spec: lh.BackupVolumeSpec{VolumeName: "crud-vol", BackupTargetName: lh.BackupTargetDefault}},
			setSpec:   func(o *lh.BackupVolume) { o.Spec.SyncRequestedAt = metav1.NewTime(time.Unix(1700000000, 0)) },
			specSet:   func(o *lh.BackupVolume) bool { return o.Spec.SyncRequestedAt.Unix() == 1700000000 },
			setStatus: func(o *lh.BackupVolume) { o.Status.LastBackupName = "backup-0123abcd" },
			statusSet: func(o *lh.BackupVolume) bool { return o.Status.LastBackupName == "backup-0123abcd" },
		})
	})
	t.Run("BackupBackingImage", func(t *testing.T) {
		exerciseKind(t, ds, c.BackupBackingImages(ns), kindCase[*lh.BackupBackingImage]{
			obj:       &lh.BackupBackingImage{ObjectMeta: om("bi-0123abcd"), Spec: lh.BackupBackingImageSpec{BackingImage: "bi", UserCreated: true}},
			setSpec:   func(o *lh.BackupBackingImage) { o.Spec.Labels = map[string]string{"k": "v"} },
			specSet:   func(o *lh.BackupBackingImage) bool { return o.Spec.Labels["k"] == "v" },
			setStatus: func(o *lh.BackupBackingImage) { o.Status.State = lh.BackupStateCompleted },
			statusSet: func(o *lh.BackupBackingImage) bool { return o.Status.State == lh.BackupStateCompleted },
		})
	})
	t.Run("RecurringJob", func(t *testing.T) {
		exerciseKind(t, ds, c.RecurringJobs(ns), kindCase[*lh.RecurringJob]{
			obj: &lh.RecurringJob{ObjectMeta: om("nightly"), Spec: lh.RecurringJobSpec{Name: "nightly", Task: lh.RecurringJobTypeSnapshot,
				Cron: "0 0 * * *", Retain: 5, Concurrency: 1, Groups: []string{lh.RecurringJobGroupDefault}}},
			setSpec: func(o *lh.RecurringJob) { o.Spec.Retain = 7 },
			specSet: func(o *lh.RecurringJob) bool {
				return o.Spec.Retain == 7 && o.Spec.RetentionPolicy == lh.RecurringJobRetentionPolicyCountBased
			},
			setStatus: func(o *lh.RecurringJob) { o.Status.ExecutionCount = 3 },
			statusSet: func(o *lh.RecurringJob) bool { return o.Status.ExecutionCount == 3 },
		})
	})
	t.Run("VolumeAttachment", func(t *testing.T) {
		id := lh.GetAttachmentTicketID(lh.AttacherTypeCSIAttacher, "pv-1")
		exerciseKind(t, ds, c.VolumeAttachments(ns), kindCase[*lh.VolumeAttachment]{
			obj: &lh.VolumeAttachment{ObjectMeta: om("crud-vol"), Spec: lh.VolumeAttachmentSpec{Volume: "crud-vol"}},
			setSpec: func(o *lh.VolumeAttachment) {
				o.Spec.AttachmentTickets = map[string]*lh.AttachmentTicket{id: {ID: id, Type: lh.AttacherTypeCSIAttacher, NodeID: owner, Generation: 1}}
			},
			specSet: func(o *lh.VolumeAttachment) bool { return o.Spec.AttachmentTickets[id] != nil },
			setStatus: func(o *lh.VolumeAttachment) {
				o.Status.AttachmentTicketStatuses = map[string]*lh.AttachmentTicketStatus{id: {ID: id, Satisfied: true, Generation: 1}}
			},
			statusSet: func(o *lh.VolumeAttachment) bool { return lh.IsAttachmentTicketSatisfied(id, o) },
			cached: func(ctx context.Context, ds dsRef, n string) (*lh.VolumeAttachment, error) {
				return ds.GetVolumeAttachmentRO(ctx, n)
			},
		})
	})
	evenMoreKinds(t, ds, c)
}

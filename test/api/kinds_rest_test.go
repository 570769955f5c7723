package api_test

import (
	"testing"

	lh "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	lhclient "github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/typed/longhorn/v1beta2"
)

// evenMoreKinds continues TestEveryKind with the last kinds.
func evenMoreKinds(t *testing.T, ds dsRef, c lhclient.LonghornV1beta2Interface) {
	t.Run("Orphan", func(t *testing.T) {
		exerciseKind(t, ds, c.Orphans(ns), kindCase[*lh.Orphan]{
			obj: &lh.Orphan{ObjectMeta: om("orphan-0123abcd"), Spec: lh.OrphanSpec{NodeID: owner, Type: lh.OrphanTypeReplicaData,
				Parameters: map[string]string{lh.OrphanDataName: "vol-0a0b0c0d", lh.OrphanDiskPath: "/var/lib/longhorn"}}},
			setSpec:   func(o *lh.Orphan) { o.Spec.Parameters[lh.OrphanDiskName] = "default-disk-1" },
			specSet:   func(o *lh.Orphan) bool { return o.Spec.Parameters[lh.OrphanDiskName] == "default-disk-1" },
			setStatus: func(o *lh.Orphan) { o.Status.OwnerID = owner },
			statusSet: func(o *lh.Orphan) bool { return o.Status.OwnerID == owner },
		})
	})
	t.Run("ShareManager", func(t *testing.T) {
		exerciseKind(t, ds, c.ShareManagers(ns), kindCase[*lh.ShareManager]{
			obj:     &lh.ShareManager{ObjectMeta: om("crud-vol"), Spec: lh.ShareManagerSpec{Image: "sm:1"}},
			setSpec: func(o *lh.ShareManager) { o.Spec.Image = "sm:2" },
			specSet: func(o *lh.ShareManager) bool { return o.Spec.Image == "sm:2" },
			setStatus: func(o *lh.ShareManager) {
				o.Status.State, o.Status.Endpoint = lh.ShareManagerStateRunning, "nfs://10.0.0.3/crud-vol"
			},
			statusSet: func(o *lh.ShareManager) bool { return o.Status.State == lh.ShareManagerStateRunning },
		})
	})
	t.Run("SystemBackup", func(t *testing.T) {
		exerciseKind(t, ds, c.SystemBackups(ns), kindCase[*lh.SystemBackup]{
			obj:     &lh.SystemBackup{ObjectMeta: om("sb-1"), Spec: lh.SystemBackupSpec{VolumeBackupPolicy: lh.SystemBackupCreateVolumeBackupPolicyIfNotPresent}},
			setSpec: func(o *lh.SystemBackup) { o.Spec.VolumeBackupPolicy = lh.SystemBackupCreateVolumeBackupPolicyAlways },
			specSet: func(o *lh.SystemBackup) bool {
				return o.Spec.VolumeBackupPolicy == lh.SystemBackupCreateVolumeBackupPolicyAlways
			},
			setStatus: func(o *lh.SystemBackup) { o.Status.State, o.Status.Version = lh.SystemBackupStateGenerating, "v1.12.0" },
			statusSet: func(o *lh.SystemBackup) bool { return o.Status.State == lh.SystemBackupStateGenerating },
		})
	})
	t.Run("SystemRestore", func(t *testing.T) {
		exerciseKind(t, ds, c.SystemRestores(ns), kindCase[*lh.SystemRestore]{
			obj:       &lh.SystemRestore{ObjectMeta: om("sr-1"), Spec: lh.SystemRestoreSpec{SystemBackup: "sb-1"}},
			setSpec:   func(o *lh.SystemRestore) { o.Labels = map[string]string{"touched": "yes"} },
			specSet:   func(o *lh.SystemRestore) bool { return o.Labels["touched"] == "yes" },
			setStatus: func(o *lh.SystemRestore) { o.Status.State = lh.SystemRestoreStateDownloading },
			statusSet: func(o *lh.SystemRestore) bool { return o.Status.State == lh.SystemRestoreStateDownloading },
		})
	})
	t.Run("BackingImage", func(t *testing.T) {
		exerciseKind(t, ds, c.BackingImages(ns), kindCase[*lh.BackingImage]{
			obj: &lh.BackingImage{ObjectMeta: om("bi"), Spec: lh.BackingImageSpec{SourceType: lh.BackingImageDataSourceTypeDownload,
				SourceParameters: map[string]string{lh.DataSourceTypeDownloadParameterURL: "http://10.0.0.9/img.qcow2"}}},
			setSpec: func(o *lh.BackingImage) { o.Spec.MinNumberOfCopies = 2 },
			specSet: func(o *lh.BackingImage) bool {
				return o.Spec.MinNumberOfCopies == 2 && o.Spec.DataEngine == lh.DataEngineTypeV1 // CRD default
			},
			setStatus: func(o *lh.BackingImage) { o.Status.UUID, o.Status.Size = "0123abcd", 1<<20 },
			statusSet: func(o *lh.BackingImage) bool { return o.Status.UUID == "0123abcd" },
		})
	})
	t.Run("BackingImageManager", func(t *testing.T) {
		exerciseKind(t, ds, c.BackingImageManagers(ns), kindCase[*lh.BackingImageManager]{
			obj:     &lh.BackingImageManager{ObjectMeta: om("backing-image-manager-0123-abcd"), Spec: lh.BackingImageManagerSpec{NodeID: owner, DiskUUID: "abcd"}},
			setSpec: func(o *lh.BackingImageManager) { o.Spec.BackingImages = map[string]string{"bi": "0123abcd"} },
			specSet: func(o *lh.BackingImageManager) bool { return o.Spec.BackingImages["bi"] == "0123abcd" },
			setStatus: func(o *lh.BackingImageManager) {
				o.Status.CurrentState = lh.BackingImageManagerStateRunning
				o.Status.BackingImageFileMap = map[string]lh.BackingImageFileInfo{"bi": {Name: "bi", State: lh.BackingImageStateReady}}
			},
			statusSet: func(o *lh.BackingImageManager) bool {
				return o.Status.BackingImageFileMap["bi"].State == lh.BackingImageStateReady
			},
		})
	})
	t.Run("BackingImageDataSource", func(t *testing.T) {
		exerciseKind(t, ds, c.BackingImageDataSources(ns), kindCase[*lh.BackingImageDataSource]{
			obj:     &lh.BackingImageDataSource{ObjectMeta: om("bi"), Spec: lh.BackingImageDataSourceSpec{SourceType: lh.BackingImageDataSourceTypeUpload, NodeID: owner}},
			setSpec: func(o *lh.BackingImageDataSource) { o.Spec.FileTransferred = true },
			specSet: func(o *lh.BackingImageDataSource) bool { return o.Spec.FileTransferred },
			setStatus: func(o *lh.BackingImageDataSource) {
				o.Status.CurrentState, o.Status.Progress = lh.BackingImageStateInProgress, 50
			},
			statusSet: func(o *lh.BackingImageDataSource) bool { return o.Status.Progress == 50 },
		})
	})
	t.Run("SupportBundle", func(t *testing.T) {
		exerciseKind(t, ds, c.SupportBundles(ns), kindCase[*lh.SupportBundle]{
			obj:       &lh.SupportBundle{ObjectMeta: om("bundle-1"), Spec: lh.SupportBundleSpec{Description: "volume stuck attaching"}},
			setSpec:   func(o *lh.SupportBundle) { o.Spec.IssueURL = "https://example.invalid/issues/1" },
			specSet:   func(o *lh.SupportBundle) bool { return o.Spec.IssueURL != "" },
			setStatus: func(o *lh.SupportBundle) { o.Status.State, o.Status.Progress = lh.SupportBundleStateGenerating, 10 },
			statusSet: func(o *lh.SupportBundle) bool { return o.Status.State == lh.SupportBundleStateGenerating },
		})
	})
}

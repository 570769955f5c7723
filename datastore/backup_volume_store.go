package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// BackupVolumeInformer returns the shared informer of BackupVolume objects, for event handlers.
func (ds *DataStore) BackupVolumeInformer() cache.SharedIndexInformer {
	return ds.backupVolumes.informer
}

// GetBackupVolume returns a deep copy of the cached BackupVolume name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetBackupVolume(_ context.Context, name string) (*longhorn.BackupVolume, error) {
	return ds.backupVolumes.get(name)
}

// GetBackupVolumeRO returns the cached BackupVolume name itself. It must not be modified.
func (ds *DataStore) GetBackupVolumeRO(_ context.Context, name string) (*longhorn.BackupVolume, error) {
	return ds.backupVolumes.getRO(name)
}

// ListBackupVolumes returns deep copies of the cached BackupVolumes matching selector (nil = all).
func (ds *DataStore) ListBackupVolumes(_ context.Context, selector labels.Selector) ([]*longhorn.BackupVolume, error) {
	return ds.backupVolumes.list(selector)
}

// ListBackupVolumesRO returns the cached BackupVolumes matching selector (nil = all); read-only.
func (ds *DataStore) ListBackupVolumesRO(_ context.Context, selector labels.Selector) ([]*longhorn.BackupVolume, error) {
	return ds.backupVolumes.listRO(selector)
}

// CreateBackupVolume creates a BackupVolume (in the store's namespace when obj has none).
func (ds *DataStore) CreateBackupVolume(ctx context.Context, obj *longhorn.BackupVolume) (*longhorn.BackupVolume, error) {
	return ds.backupVolumes.create(ctx, obj)
}

// UpdateBackupVolume writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateBackupVolume(ctx context.Context, obj *longhorn.BackupVolume) (*longhorn.BackupVolume, error) {
	return ds.backupVolumes.update(ctx, obj)
}

// UpdateBackupVolumeStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateBackupVolumeStatus(ctx context.Context, obj *longhorn.BackupVolume) (*longhorn.BackupVolume, error) {
	return ds.backupVolumes.updateStatus(ctx, obj)
}

// DeleteBackupVolume deletes the BackupVolume name.
func (ds *DataStore) DeleteBackupVolume(ctx context.Context, name string) error {
	return ds.backupVolumes.delete(ctx, name)
}

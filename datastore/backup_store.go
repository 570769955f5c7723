package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// BackupInformer returns the shared informer of Backup objects, for event handlers.
func (ds *DataStore) BackupInformer() cache.SharedIndexInformer { return ds.backups.informer }

// GetBackup returns a deep copy of the cached Backup name; the caller may change it.
func (ds *DataStore) GetBackup(_ context.Context, name string) (*longhorn.Backup, error) {
	return ds.backups.get(name)
}

// GetBackupRO returns the cached Backup name itself. It must not be modified.
func (ds *DataStore) GetBackupRO(_ context.Context, name string) (*longhorn.Backup, error) {
	return ds.backups.getRO(name)
}

// ListBackupsRO returns the cached Backups matching selector (nil = all); read-only.
func (ds *DataStore) ListBackupsRO(_ context.Context, selector labels.Selector) ([]*longhorn.Backup, error) {
	return ds.backups.listRO(selector)
}

// CreateBackup creates a Backup (in the store's namespace when obj has none).
func (ds *DataStore) CreateBackup(ctx context.Context, obj *longhorn.Backup) (*longhorn.Backup, error) {
	return ds.backups.create(ctx, obj)
}

// UpdateBackup writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateBackup(ctx context.Context, obj *longhorn.Backup) (*longhorn.Backup, error) {
	return ds.backups.update(ctx, obj)
}

// UpdateBackupStatus writes obj's status.
func (ds *DataStore) UpdateBackupStatus(ctx context.Context, obj *longhorn.Backup) (*longhorn.Backup, error) {
	return ds.backups.updateStatus(ctx, obj)
}

// DeleteBackup deletes the Backup name.
func (ds *DataStore) DeleteBackup(ctx context.Context, name string) error {
	return ds.backups.delete(ctx, name)
}

// BackupVolumeInformer returns the shared informer of BackupVolume objects, for event handlers.
func (ds *DataStore) BackupVolumeInformer() cache.SharedIndexInformer {
	return ds.backupVolumes.informer
}

// GetBackupVolume returns a deep copy of the cached BackupVolume name; the caller may change it.
func (ds *DataStore) GetBackupVolume(_ context.Context, name string) (*longhorn.BackupVolume, error) {
	return ds.backupVolumes.get(name)
}

// GetBackupVolumeRO returns the cached BackupVolume name itself. It must not be modified.
func (ds *DataStore) GetBackupVolumeRO(_ context.Context, name string) (*longhorn.BackupVolume, error) {
	return ds.backupVolumes.getRO(name)
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

// UpdateBackupVolumeStatus writes obj's status.
func (ds *DataStore) UpdateBackupVolumeStatus(ctx context.Context, obj *longhorn.BackupVolume) (*longhorn.BackupVolume, error) {
	return ds.backupVolumes.updateStatus(ctx, obj)
}

// DeleteBackupVolume deletes the BackupVolume name.
func (ds *DataStore) DeleteBackupVolume(ctx context.Context, name string) error {
	return ds.backupVolumes.delete(ctx, name)
}

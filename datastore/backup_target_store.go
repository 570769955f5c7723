package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// BackupTargetInformer returns the shared informer of BackupTarget objects, for event handlers.
func (ds *DataStore) BackupTargetInformer() cache.SharedIndexInformer {
	return ds.backupTargets.informer
}

// GetBackupTargetRO returns the cached BackupTarget name itself. It must not be modified.
func (ds *DataStore) GetBackupTargetRO(_ context.Context, name string) (*longhorn.BackupTarget, error) {
	return ds.backupTargets.getRO(name)
}

// CreateBackupTarget creates a BackupTarget (in the store's namespace when obj has none).
func (ds *DataStore) CreateBackupTarget(ctx context.Context, obj *longhorn.BackupTarget) (*longhorn.BackupTarget, error) {
	return ds.backupTargets.create(ctx, obj)
}

// UpdateBackupTarget writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateBackupTarget(ctx context.Context, obj *longhorn.BackupTarget) (*longhorn.BackupTarget, error) {
	return ds.backupTargets.update(ctx, obj)
}

// ListBackupTargetsRO returns the cached BackupTargets matching selector (nil = all); read-only.
func (ds *DataStore) ListBackupTargetsRO(_ context.Context, selector labels.Selector) ([]*longhorn.BackupTarget, error) {
	return ds.backupTargets.listRO(selector)
}

// GetBackupTarget returns a deep copy of the cached BackupTarget name; the caller may change it.
func (ds *DataStore) GetBackupTarget(_ context.Context, name string) (*longhorn.BackupTarget, error) {
	return ds.backupTargets.get(name)
}

// UpdateBackupTargetStatus writes obj's status.
func (ds *DataStore) UpdateBackupTargetStatus(ctx context.Context, obj *longhorn.BackupTarget) (*longhorn.BackupTarget, error) {
	return ds.backupTargets.updateStatus(ctx, obj)
}

// DeleteBackupTarget deletes the BackupTarget name.
func (ds *DataStore) DeleteBackupTarget(ctx context.Context, name string) error {
	return ds.backupTargets.delete(ctx, name)
}

package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// SystemBackupInformer returns the shared informer of SystemBackup objects, for event handlers.
func (ds *DataStore) SystemBackupInformer() cache.SharedIndexInformer {
	return ds.systemBackups.informer
}

// GetSystemBackup returns a deep copy of the cached SystemBackup name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetSystemBackup(_ context.Context, name string) (*longhorn.SystemBackup, error) {
	return ds.systemBackups.get(name)
}

// GetSystemBackupRO returns the cached SystemBackup name itself. It must not be modified.
func (ds *DataStore) GetSystemBackupRO(_ context.Context, name string) (*longhorn.SystemBackup, error) {
	return ds.systemBackups.getRO(name)
}

// ListSystemBackups returns deep copies of the cached SystemBackups matching selector (nil = all).
func (ds *DataStore) ListSystemBackups(_ context.Context, selector labels.Selector) ([]*longhorn.SystemBackup, error) {
	return ds.systemBackups.list(selector)
}

// ListSystemBackupsRO returns the cached SystemBackups matching selector (nil = all); read-only.
func (ds *DataStore) ListSystemBackupsRO(_ context.Context, selector labels.Selector) ([]*longhorn.SystemBackup, error) {
	return ds.systemBackups.listRO(selector)
}

// CreateSystemBackup creates a SystemBackup (in the store's namespace when obj has none).
func (ds *DataStore) CreateSystemBackup(ctx context.Context, obj *longhorn.SystemBackup) (*longhorn.SystemBackup, error) {
	return ds.systemBackups.create(ctx, obj)
}

// UpdateSystemBackup writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateSystemBackup(ctx context.Context, obj *longhorn.SystemBackup) (*longhorn.SystemBackup, error) {
	return ds.systemBackups.update(ctx, obj)
}

// UpdateSystemBackupStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateSystemBackupStatus(ctx context.Context, obj *longhorn.SystemBackup) (*longhorn.SystemBackup, error) {
	return ds.systemBackups.updateStatus(ctx, obj)
}

// DeleteSystemBackup deletes the SystemBackup name.
func (ds *DataStore) DeleteSystemBackup(ctx context.Context, name string) error {
	return ds.systemBackups.delete(ctx, name)
}

package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// SystemRestoreInformer returns the shared informer of SystemRestore objects, for event handlers.
func (ds *DataStore) SystemRestoreInformer() cache.SharedIndexInformer {
	return ds.systemRestores.informer
}

// GetSystemRestore returns a deep copy of the cached SystemRestore name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetSystemRestore(_ context.Context, name string) (*longhorn.SystemRestore, error) {
	return ds.systemRestores.get(name)
}

// GetSystemRestoreRO returns the cached SystemRestore name itself. It must not be modified.
func (ds *DataStore) GetSystemRestoreRO(_ context.Context, name string) (*longhorn.SystemRestore, error) {
	return ds.systemRestores.getRO(name)
}

// ListSystemRestores returns deep copies of the cached SystemRestores matching selector (nil = all).
func (ds *DataStore) ListSystemRestores(_ context.Context, selector labels.Selector) ([]*longhorn.SystemRestore, error) {
	return ds.systemRestores.list(selector)
}

// ListSystemRestoresRO returns the cached SystemRestores matching selector (nil = all); read-only.
func (ds *DataStore) ListSystemRestoresRO(_ context.Context, selector labels.Selector) ([]*longhorn.SystemRestore, error) {
	return ds.systemRestores.listRO(selector)
}

// CreateSystemRestore creates a SystemRestore (in the store's namespace when obj has none).
func (ds *DataStore) CreateSystemRestore(ctx context.Context, obj *longhorn.SystemRestore) (*longhorn.SystemRestore, error) {
	return ds.systemRestores.create(ctx, obj)
}

// UpdateSystemRestore writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateSystemRestore(ctx context.Context, obj *longhorn.SystemRestore) (*longhorn.SystemRestore, error) {
	return ds.systemRestores.update(ctx, obj)
}

// UpdateSystemRestoreStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateSystemRestoreStatus(ctx context.Context, obj *longhorn.SystemRestore) (*longhorn.SystemRestore, error) {
	return ds.systemRestores.updateStatus(ctx, obj)
}

// DeleteSystemRestore deletes the SystemRestore name.
func (ds *DataStore) DeleteSystemRestore(ctx context.Context, name string) error {
	return ds.systemRestores.delete(ctx, name)
}

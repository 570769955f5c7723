package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// BackingImageManagerInformer returns the shared informer of BackingImageManager objects, for event handlers.
func (ds *DataStore) BackingImageManagerInformer() cache.SharedIndexInformer {
	return ds.backingImageManagers.informer
}

// GetBackingImageManager returns a deep copy of the cached BackingImageManager name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetBackingImageManager(_ context.Context, name string) (*longhorn.BackingImageManager, error) {
	return ds.backingImageManagers.get(name)
}

// GetBackingImageManagerRO returns the cached BackingImageManager name itself. It must not be modified.
func (ds *DataStore) GetBackingImageManagerRO(_ context.Context, name string) (*longhorn.BackingImageManager, error) {
	return ds.backingImageManagers.getRO(name)
}

// ListBackingImageManagers returns deep copies of the cached BackingImageManagers matching selector (nil = all).
func (ds *DataStore) ListBackingImageManagers(_ context.Context, selector labels.Selector) ([]*longhorn.BackingImageManager, error) {
	return ds.backingImageManagers.list(selector)
}

// ListBackingImageManagersRO returns the cached BackingImageManagers matching selector (nil = all); read-only.
func (ds *DataStore) ListBackingImageManagersRO(_ context.Context, selector labels.Selector) ([]*longhorn.BackingImageManager, error) {
	return ds.backingImageManagers.listRO(selector)
}

// CreateBackingImageManager creates a BackingImageManager (in the store's namespace when obj has none).
func (ds *DataStore) CreateBackingImageManager(ctx context.Context, obj *longhorn.BackingImageManager) (*longhorn.BackingImageManager, error) {
	return ds.backingImageManagers.create(ctx, obj)
}

// UpdateBackingImageManager writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateBackingImageManager(ctx context.Context, obj *longhorn.BackingImageManager) (*longhorn.BackingImageManager, error) {
	return ds.backingImageManagers.update(ctx, obj)
}

// UpdateBackingImageManagerStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateBackingImageManagerStatus(ctx context.Context, obj *longhorn.BackingImageManager) (*longhorn.BackingImageManager, error) {
	return ds.backingImageManagers.updateStatus(ctx, obj)
}

// DeleteBackingImageManager deletes the BackingImageManager name.
func (ds *DataStore) DeleteBackingImageManager(ctx context.Context, name string) error {
	return ds.backingImageManagers.delete(ctx, name)
}

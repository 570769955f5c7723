package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// ShareManagerInformer returns the shared informer of ShareManager objects, for event handlers.
func (ds *DataStore) ShareManagerInformer() cache.SharedIndexInformer {
	return ds.shareManagers.informer
}

// GetShareManager returns a deep copy of the cached ShareManager name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetShareManager(_ context.Context, name string) (*longhorn.ShareManager, error) {
	return ds.shareManagers.get(name)
}

// GetShareManagerRO returns the cached ShareManager name itself. It must not be modified.
func (ds *DataStore) GetShareManagerRO(_ context.Context, name string) (*longhorn.ShareManager, error) {
	return ds.shareManagers.getRO(name)
}

// ListShareManagers returns deep copies of the cached ShareManagers matching selector (nil = all).
func (ds *DataStore) ListShareManagers(_ context.Context, selector labels.Selector) ([]*longhorn.ShareManager, error) {
	return ds.shareManagers.list(selector)
}

// ListShareManagersRO returns the cached ShareManagers matching selector (nil = all); read-only.
func (ds *DataStore) ListShareManagersRO(_ context.Context, selector labels.Selector) ([]*longhorn.ShareManager, error) {
	return ds.shareManagers.listRO(selector)
}

// CreateShareManager creates a ShareManager (in the store's namespace when obj has none).
func (ds *DataStore) CreateShareManager(ctx context.Context, obj *longhorn.ShareManager) (*longhorn.ShareManager, error) {
	return ds.shareManagers.create(ctx, obj)
}

// UpdateShareManager writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateShareManager(ctx context.Context, obj *longhorn.ShareManager) (*longhorn.ShareManager, error) {
	return ds.shareManagers.update(ctx, obj)
}

// UpdateShareManagerStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateShareManagerStatus(ctx context.Context, obj *longhorn.ShareManager) (*longhorn.ShareManager, error) {
	return ds.shareManagers.updateStatus(ctx, obj)
}

// DeleteShareManager deletes the ShareManager name.
func (ds *DataStore) DeleteShareManager(ctx context.Context, name string) error {
	return ds.shareManagers.delete(ctx, name)
}

package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// BackingImageDataSourceInformer returns the shared informer of BackingImageDataSource objects, for event handlers.
func (ds *DataStore) BackingImageDataSourceInformer() cache.SharedIndexInformer {
	return ds.backingImageDataSources.informer
}

// GetBackingImageDataSource returns a deep copy of the cached BackingImageDataSource name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetBackingImageDataSource(_ context.Context, name string) (*longhorn.BackingImageDataSource, error) {
	return ds.backingImageDataSources.get(name)
}

// GetBackingImageDataSourceRO returns the cached BackingImageDataSource name itself. It must not be modified.
func (ds *DataStore) GetBackingImageDataSourceRO(_ context.Context, name string) (*longhorn.BackingImageDataSource, error) {
	return ds.backingImageDataSources.getRO(name)
}

// ListBackingImageDataSources returns deep copies of the cached BackingImageDataSources matching selector (nil = all).
func (ds *DataStore) ListBackingImageDataSources(_ context.Context, selector labels.Selector) ([]*longhorn.BackingImageDataSource, error) {
	return ds.backingImageDataSources.list(selector)
}

// ListBackingImageDataSourcesRO returns the cached BackingImageDataSources matching selector (nil = all); read-only.
func (ds *DataStore) ListBackingImageDataSourcesRO(_ context.Context, selector labels.Selector) ([]*longhorn.BackingImageDataSource, error) {
	return ds.backingImageDataSources.listRO(selector)
}

// CreateBackingImageDataSource creates a BackingImageDataSource (in the store's namespace when obj has none).
func (ds *DataStore) CreateBackingImageDataSource(ctx context.Context, obj *longhorn.BackingImageDataSource) (*longhorn.BackingImageDataSource, error) {
	return ds.backingImageDataSources.create(ctx, obj)
}

// UpdateBackingImageDataSource writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateBackingImageDataSource(ctx context.Context, obj *longhorn.BackingImageDataSource) (*longhorn.BackingImageDataSource, error) {
	return ds.backingImageDataSources.update(ctx, obj)
}

// UpdateBackingImageDataSourceStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateBackingImageDataSourceStatus(ctx context.Context, obj *longhorn.BackingImageDataSource) (*longhorn.BackingImageDataSource, error) {
	return ds.backingImageDataSources.updateStatus(ctx, obj)
}

// DeleteBackingImageDataSource deletes the BackingImageDataSource name.
func (ds *DataStore) DeleteBackingImageDataSource(ctx context.Context, name string) error {
	return ds.backingImageDataSources.delete(ctx, name)
}

package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// BackingImageInformer returns the shared informer of BackingImage objects, for event handlers.
func (ds *DataStore) BackingImageInformer() cache.SharedIndexInformer {
	return ds.backingImages.informer
}

// GetBackingImage returns a deep copy of the cached BackingImage name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetBackingImage(_ context.Context, name string) (*longhorn.BackingImage, error) {
	return ds.backingImages.get(name)
}

// GetBackingImageRO returns the cached BackingImage name itself. It must not be modified.
func (ds *DataStore) GetBackingImageRO(_ context.Context, name string) (*longhorn.BackingImage, error) {
	return ds.backingImages.getRO(name)
}

// ListBackingImages returns deep copies of the cached BackingImages matching selector (nil = all).
func (ds *DataStore) ListBackingImages(_ context.Context, selector labels.Selector) ([]*longhorn.BackingImage, error) {
	return ds.backingImages.list(selector)
}

// ListBackingImagesRO returns the cached BackingImages matching selector (nil = all); read-only.
func (ds *DataStore) ListBackingImagesRO(_ context.Context, selector labels.Selector) ([]*longhorn.BackingImage, error) {
	return ds.backingImages.listRO(selector)
}

// CreateBackingImage creates a BackingImage (in the store's namespace when obj has none).
func (ds *DataStore) CreateBackingImage(ctx context.Context, obj *longhorn.BackingImage) (*longhorn.BackingImage, error) {
	return ds.backingImages.create(ctx, obj)
}

// UpdateBackingImage writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateBackingImage(ctx context.Context, obj *longhorn.BackingImage) (*longhorn.BackingImage, error) {
	return ds.backingImages.update(ctx, obj)
}

// UpdateBackingImageStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateBackingImageStatus(ctx context.Context, obj *longhorn.BackingImage) (*longhorn.BackingImage, error) {
	return ds.backingImages.updateStatus(ctx, obj)
}

// DeleteBackingImage deletes the BackingImage name.
func (ds *DataStore) DeleteBackingImage(ctx context.Context, name string) error {
	return ds.backingImages.delete(ctx, name)
}

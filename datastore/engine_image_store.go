package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// EngineImageInformer returns the shared informer of EngineImage objects, for event handlers.
func (ds *DataStore) EngineImageInformer() cache.SharedIndexInformer { return ds.engineImages.informer }

// GetEngineImage returns a deep copy of the cached EngineImage name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetEngineImage(_ context.Context, name string) (*longhorn.EngineImage, error) {
	return ds.engineImages.get(name)
}

// GetEngineImageRO returns the cached EngineImage name itself. It must not be modified.
func (ds *DataStore) GetEngineImageRO(_ context.Context, name string) (*longhorn.EngineImage, error) {
	return ds.engineImages.getRO(name)
}

// ListEngineImages returns deep copies of the cached EngineImages matching selector (nil = all).
func (ds *DataStore) ListEngineImages(_ context.Context, selector labels.Selector) ([]*longhorn.EngineImage, error) {
	return ds.engineImages.list(selector)
}

// ListEngineImagesRO returns the cached EngineImages matching selector (nil = all); read-only.
func (ds *DataStore) ListEngineImagesRO(_ context.Context, selector labels.Selector) ([]*longhorn.EngineImage, error) {
	return ds.engineImages.listRO(selector)
}

// CreateEngineImage creates an EngineImage (in the store's namespace when obj has none).
func (ds *DataStore) CreateEngineImage(ctx context.Context, obj *longhorn.EngineImage) (*longhorn.EngineImage, error) {
	return ds.engineImages.create(ctx, obj)
}

// UpdateEngineImage writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateEngineImage(ctx context.Context, obj *longhorn.EngineImage) (*longhorn.EngineImage, error) {
	return ds.engineImages.update(ctx, obj)
}

// UpdateEngineImageStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateEngineImageStatus(ctx context.Context, obj *longhorn.EngineImage) (*longhorn.EngineImage, error) {
	return ds.engineImages.updateStatus(ctx, obj)
}

// DeleteEngineImage deletes the EngineImage name.
func (ds *DataStore) DeleteEngineImage(ctx context.Context, name string) error {
	return ds.engineImages.delete(ctx, name)
}

package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// EngineImageInformer returns the shared informer of EngineImage objects, for event handlers.
func (ds *DataStore) EngineImageInformer() cache.SharedIndexInformer { return ds.engineImages.informer }

// GetEngineImageRO returns the cached EngineImage name itself. It must not be modified.
func (ds *DataStore) GetEngineImageRO(_ context.Context, name string) (*longhorn.EngineImage, error) {
	return ds.engineImages.getRO(name)
}

// ListEngineImagesRO returns the cached EngineImages matching selector (nil = all); read-only.
func (ds *DataStore) ListEngineImagesRO(_ context.Context, selector labels.Selector) ([]*longhorn.EngineImage, error) {
	return ds.engineImages.listRO(selector)
}

// DeleteEngineImage deletes the EngineImage name.
func (ds *DataStore) DeleteEngineImage(ctx context.Context, name string) error {
	return ds.engineImages.delete(ctx, name)
}

// CreateEngineImage creates an EngineImage (in the store's namespace when obj has none).
func (ds *DataStore) CreateEngineImage(ctx context.Context, obj *longhorn.EngineImage) (*longhorn.EngineImage, error) {
	return ds.engineImages.create(ctx, obj)
}

// UpdateEngineImageStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateEngineImageStatus(ctx context.Context, obj *longhorn.EngineImage) (*longhorn.EngineImage, error) {
	return ds.engineImages.updateStatus(ctx, obj)
}

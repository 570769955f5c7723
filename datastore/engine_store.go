package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// EngineInformer returns the shared informer of Engine objects, for event handlers.
func (ds *DataStore) EngineInformer() cache.SharedIndexInformer { return ds.engines.informer }

// GetEngine returns a deep copy of the cached Engine name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetEngine(_ context.Context, name string) (*longhorn.Engine, error) {
	return ds.engines.get(name)
}

// GetEngineRO returns the cached Engine name itself. It must not be modified.
func (ds *DataStore) GetEngineRO(_ context.Context, name string) (*longhorn.Engine, error) {
	return ds.engines.getRO(name)
}

// ListEnginesRO returns the cached Engines matching selector (nil = all); read-only.
func (ds *DataStore) ListEnginesRO(_ context.Context, selector labels.Selector) ([]*longhorn.Engine, error) {
	return ds.engines.listRO(selector)
}

// CreateEngine creates an Engine (in the store's namespace when obj has none).
func (ds *DataStore) CreateEngine(ctx context.Context, obj *longhorn.Engine) (*longhorn.Engine, error) {
	return ds.engines.create(ctx, obj)
}

// UpdateEngine writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateEngine(ctx context.Context, obj *longhorn.Engine) (*longhorn.Engine, error) {
	return ds.engines.update(ctx, obj)
}

// UpdateEngineStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateEngineStatus(ctx context.Context, obj *longhorn.Engine) (*longhorn.Engine, error) {
	return ds.engines.updateStatus(ctx, obj)
}

// DeleteEngine deletes the Engine name.
func (ds *DataStore) DeleteEngine(ctx context.Context, name string) error {
	return ds.engines.delete(ctx, name)
}

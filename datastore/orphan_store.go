package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// OrphanInformer returns the shared informer of Orphan objects, for event handlers.
func (ds *DataStore) OrphanInformer() cache.SharedIndexInformer {
	return ds.orphans.informer
}

// GetOrphan returns a deep copy of the cached Orphan name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetOrphan(_ context.Context, name string) (*longhorn.Orphan, error) {
	return ds.orphans.get(name)
}

// GetOrphanRO returns the cached Orphan name itself. It must not be modified.
func (ds *DataStore) GetOrphanRO(_ context.Context, name string) (*longhorn.Orphan, error) {
	return ds.orphans.getRO(name)
}

// ListOrphansRO returns the cached Orphans matching selector (nil = all); read-only.
func (ds *DataStore) ListOrphansRO(_ context.Context, selector labels.Selector) ([]*longhorn.Orphan, error) {
	return ds.orphans.listRO(selector)
}

// CreateOrphan creates a Orphan (in the store's namespace when obj has none).
func (ds *DataStore) CreateOrphan(ctx context.Context, obj *longhorn.Orphan) (*longhorn.Orphan, error) {
	return ds.orphans.create(ctx, obj)
}

// UpdateOrphan writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateOrphan(ctx context.Context, obj *longhorn.Orphan) (*longhorn.Orphan, error) {
	return ds.orphans.update(ctx, obj)
}

// UpdateOrphanStatus writes obj's status (the status subresource).
func (ds *DataStore) UpdateOrphanStatus(ctx context.Context, obj *longhorn.Orphan) (*longhorn.Orphan, error) {
	return ds.orphans.updateStatus(ctx, obj)
}

// DeleteOrphan deletes the Orphan name.
func (ds *DataStore) DeleteOrphan(ctx context.Context, name string) error {
	return ds.orphans.delete(ctx, name)
}

package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// SnapshotInformer returns the shared informer of Snapshot objects, for event handlers.
func (ds *DataStore) SnapshotInformer() cache.SharedIndexInformer { return ds.snapshots.informer }

// GetSnapshot returns a deep copy of the cached Snapshot name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetSnapshot(_ context.Context, name string) (*longhorn.Snapshot, error) {
	return ds.snapshots.get(name)
}

// GetSnapshotRO returns the cached Snapshot name itself. It must not be modified.
func (ds *DataStore) GetSnapshotRO(_ context.Context, name string) (*longhorn.Snapshot, error) {
	return ds.snapshots.getRO(name)
}

// ListSnapshots returns deep copies of the cached Snapshots matching selector (nil = all).
func (ds *DataStore) ListSnapshots(_ context.Context, selector labels.Selector) ([]*longhorn.Snapshot, error) {
	return ds.snapshots.list(selector)
}

// ListSnapshotsRO returns the cached Snapshots matching selector (nil = all); read-only.
func (ds *DataStore) ListSnapshotsRO(_ context.Context, selector labels.Selector) ([]*longhorn.Snapshot, error) {
	return ds.snapshots.listRO(selector)
}

// CreateSnapshot creates a Snapshot (in the store's namespace when obj has none).
func (ds *DataStore) CreateSnapshot(ctx context.Context, obj *longhorn.Snapshot) (*longhorn.Snapshot, error) {
	return ds.snapshots.create(ctx, obj)
}

// UpdateSnapshot writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateSnapshot(ctx context.Context, obj *longhorn.Snapshot) (*longhorn.Snapshot, error) {
	return ds.snapshots.update(ctx, obj)
}

// UpdateSnapshotStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateSnapshotStatus(ctx context.Context, obj *longhorn.Snapshot) (*longhorn.Snapshot, error) {
	return ds.snapshots.updateStatus(ctx, obj)
}

// DeleteSnapshot deletes the Snapshot name.
func (ds *DataStore) DeleteSnapshot(ctx context.Context, name string) error {
	return ds.snapshots.delete(ctx, name)
}

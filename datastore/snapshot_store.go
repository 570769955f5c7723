package datastore

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// SnapshotInformer returns the shared informer of Snapshot objects, for event handlers.
func (ds *DataStore) SnapshotInformer() cache.SharedIndexInformer { return ds.snapshots.informer }

// GetSnapshotRO returns the cached Snapshot name itself. It must not be modified.
func (ds *DataStore) GetSnapshotRO(_ context.Context, name string) (*longhorn.Snapshot, error) {
	return ds.snapshots.getRO(name)
}

// GetSnapshotLive reads the Snapshot name from the API server (read-your-writes
// after a create that the cache may not show yet); NotFound as apierrors.
func (ds *DataStore) GetSnapshotLive(ctx context.Context, name string) (*longhorn.Snapshot, error) {
	return ds.snapshots.getLive(ctx, name)
}

// CreateSnapshot creates a Snapshot object (in the store's namespace when
// obj has none). An object without owner references gets its volume
// (spec.volume, when the cache has it) as owner, as Longhorn's Snapshot
// CRs do, so the garbage collector removes the objects of a deleted volume
// (a clone's engine lists the snapshot it was cloned from under the same
// name: its object outlived the volume).
func (ds *DataStore) CreateSnapshot(ctx context.Context, obj *longhorn.Snapshot) (*longhorn.Snapshot, error) {
	if len(obj.OwnerReferences) == 0 && obj.Spec.Volume != "" {
		if v, err := ds.GetVolumeRO(ctx, obj.Spec.Volume); err == nil {
			isController := true
			obj = obj.DeepCopy()
			obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: longhorn.SchemeGroupVersion.String(), Kind: "Volume",
				Name: v.Name, UID: v.UID, Controller: &isController}}
		}
	}
	return ds.snapshots.create(ctx, obj)
}

// DeleteSnapshot deletes the Snapshot object name.
func (ds *DataStore) DeleteSnapshot(ctx context.Context, name string) error {
	return ds.snapshots.delete(ctx, name)
}

// UpdateSnapshot writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateSnapshot(ctx context.Context, obj *longhorn.Snapshot) (*longhorn.Snapshot, error) {
	return ds.snapshots.update(ctx, obj)
}

// UpdateSnapshotStatus writes obj's status.
func (ds *DataStore) UpdateSnapshotStatus(ctx context.Context, obj *longhorn.Snapshot) (*longhorn.Snapshot, error) {
	return ds.snapshots.updateStatus(ctx, obj)
}

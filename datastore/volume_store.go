package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// VolumeInformer returns the shared informer of Volume objects, for event handlers.
func (ds *DataStore) VolumeInformer() cache.SharedIndexInformer { return ds.volumes.informer }

// GetVolume returns a deep copy of the cached Volume name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetVolume(_ context.Context, name string) (*longhorn.Volume, error) {
	return ds.volumes.get(name)
}

// GetVolumeRO returns the cached Volume name itself. It must not be modified.
func (ds *DataStore) GetVolumeRO(_ context.Context, name string) (*longhorn.Volume, error) {
	return ds.volumes.getRO(name)
}

// ListVolumesRO returns the cached Volumes matching selector (nil = all); read-only.
func (ds *DataStore) ListVolumesRO(_ context.Context, selector labels.Selector) ([]*longhorn.Volume, error) {
	return ds.volumes.listRO(selector)
}

// CreateVolume creates a Volume (in the store's namespace when obj has none).
func (ds *DataStore) CreateVolume(ctx context.Context, obj *longhorn.Volume) (*longhorn.Volume, error) {
	return ds.volumes.create(ctx, obj)
}

// UpdateVolume writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateVolume(ctx context.Context, obj *longhorn.Volume) (*longhorn.Volume, error) {
	return ds.volumes.update(ctx, obj)
}

// UpdateVolumeStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateVolumeStatus(ctx context.Context, obj *longhorn.Volume) (*longhorn.Volume, error) {
	return ds.volumes.updateStatus(ctx, obj)
}

// DeleteVolume deletes the Volume name.
func (ds *DataStore) DeleteVolume(ctx context.Context, name string) error {
	return ds.volumes.delete(ctx, name)
}

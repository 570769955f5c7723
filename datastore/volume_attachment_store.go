package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// VolumeAttachmentInformer returns the shared informer of VolumeAttachment objects, for event handlers.
func (ds *DataStore) VolumeAttachmentInformer() cache.SharedIndexInformer {
	return ds.volumeAttachments.informer
}

// GetVolumeAttachment returns a deep copy of the cached VolumeAttachment name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetVolumeAttachment(_ context.Context, name string) (*longhorn.VolumeAttachment, error) {
	return ds.volumeAttachments.get(name)
}

// GetVolumeAttachmentRO returns the cached VolumeAttachment name itself. It must not be modified.
func (ds *DataStore) GetVolumeAttachmentRO(_ context.Context, name string) (*longhorn.VolumeAttachment, error) {
	return ds.volumeAttachments.getRO(name)
}

// ListVolumeAttachmentsRO returns the cached VolumeAttachments matching selector (nil = all); read-only.
func (ds *DataStore) ListVolumeAttachmentsRO(_ context.Context, selector labels.Selector) ([]*longhorn.VolumeAttachment, error) {
	return ds.volumeAttachments.listRO(selector)
}

// CreateVolumeAttachment creates a VolumeAttachment (in the store's namespace when obj has none).
func (ds *DataStore) CreateVolumeAttachment(ctx context.Context, obj *longhorn.VolumeAttachment) (*longhorn.VolumeAttachment, error) {
	return ds.volumeAttachments.create(ctx, obj)
}

// UpdateVolumeAttachment writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateVolumeAttachment(ctx context.Context, obj *longhorn.VolumeAttachment) (*longhorn.VolumeAttachment, error) {
	return ds.volumeAttachments.update(ctx, obj)
}

// UpdateVolumeAttachmentStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateVolumeAttachmentStatus(ctx context.Context, obj *longhorn.VolumeAttachment) (*longhorn.VolumeAttachment, error) {
	return ds.volumeAttachments.updateStatus(ctx, obj)
}

// DeleteVolumeAttachment deletes the VolumeAttachment name.
func (ds *DataStore) DeleteVolumeAttachment(ctx context.Context, name string) error {
	return ds.volumeAttachments.delete(ctx, name)
}

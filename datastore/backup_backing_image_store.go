package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// BackupBackingImageInformer returns the shared informer of BackupBackingImage objects, for event handlers.
func (ds *DataStore) BackupBackingImageInformer() cache.SharedIndexInformer {
	return ds.backupBackingImages.informer
}

// GetBackupBackingImage returns a deep copy of the cached BackupBackingImage name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetBackupBackingImage(_ context.Context, name string) (*longhorn.BackupBackingImage, error) {
	return ds.backupBackingImages.get(name)
}

// GetBackupBackingImageRO returns the cached BackupBackingImage name itself. It must not be modified.
func (ds *DataStore) GetBackupBackingImageRO(_ context.Context, name string) (*longhorn.BackupBackingImage, error) {
	return ds.backupBackingImages.getRO(name)
}

// ListBackupBackingImages returns deep copies of the cached BackupBackingImages matching selector (nil = all).
func (ds *DataStore) ListBackupBackingImages(_ context.Context, selector labels.Selector) ([]*longhorn.BackupBackingImage, error) {
	return ds.backupBackingImages.list(selector)
}

// ListBackupBackingImagesRO returns the cached BackupBackingImages matching selector (nil = all); read-only.
func (ds *DataStore) ListBackupBackingImagesRO(_ context.Context, selector labels.Selector) ([]*longhorn.BackupBackingImage, error) {
	return ds.backupBackingImages.listRO(selector)
}

// CreateBackupBackingImage creates a BackupBackingImage (in the store's namespace when obj has none).
func (ds *DataStore) CreateBackupBackingImage(ctx context.Context, obj *longhorn.BackupBackingImage) (*longhorn.BackupBackingImage, error) {
	return ds.backupBackingImages.create(ctx, obj)
}

// UpdateBackupBackingImage writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateBackupBackingImage(ctx context.Context, obj *longhorn.BackupBackingImage) (*longhorn.BackupBackingImage, error) {
	return ds.backupBackingImages.update(ctx, obj)
}

// UpdateBackupBackingImageStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateBackupBackingImageStatus(ctx context.Context, obj *longhorn.BackupBackingImage) (*longhorn.BackupBackingImage, error) {
	return ds.backupBackingImages.updateStatus(ctx, obj)
}

// DeleteBackupBackingImage deletes the BackupBackingImage name.
func (ds *DataStore) DeleteBackupBackingImage(ctx context.Context, name string) error {
	return ds.backupBackingImages.delete(ctx, name)
}

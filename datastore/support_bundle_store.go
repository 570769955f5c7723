package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// SupportBundleInformer returns the shared informer of SupportBundle objects, for event handlers.
func (ds *DataStore) SupportBundleInformer() cache.SharedIndexInformer {
	return ds.supportBundles.informer
}

// GetSupportBundle returns a deep copy of the cached SupportBundle name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetSupportBundle(_ context.Context, name string) (*longhorn.SupportBundle, error) {
	return ds.supportBundles.get(name)
}

// GetSupportBundleRO returns the cached SupportBundle name itself. It must not be modified.
func (ds *DataStore) GetSupportBundleRO(_ context.Context, name string) (*longhorn.SupportBundle, error) {
	return ds.supportBundles.getRO(name)
}

// ListSupportBundles returns deep copies of the cached SupportBundles matching selector (nil = all).
func (ds *DataStore) ListSupportBundles(_ context.Context, selector labels.Selector) ([]*longhorn.SupportBundle, error) {
	return ds.supportBundles.list(selector)
}

// ListSupportBundlesRO returns the cached SupportBundles matching selector (nil = all); read-only.
func (ds *DataStore) ListSupportBundlesRO(_ context.Context, selector labels.Selector) ([]*longhorn.SupportBundle, error) {
	return ds.supportBundles.listRO(selector)
}

// CreateSupportBundle creates a SupportBundle (in the store's namespace when obj has none).
func (ds *DataStore) CreateSupportBundle(ctx context.Context, obj *longhorn.SupportBundle) (*longhorn.SupportBundle, error) {
	return ds.supportBundles.create(ctx, obj)
}

// UpdateSupportBundle writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateSupportBundle(ctx context.Context, obj *longhorn.SupportBundle) (*longhorn.SupportBundle, error) {
	return ds.supportBundles.update(ctx, obj)
}

// UpdateSupportBundleStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateSupportBundleStatus(ctx context.Context, obj *longhorn.SupportBundle) (*longhorn.SupportBundle, error) {
	return ds.supportBundles.updateStatus(ctx, obj)
}

// DeleteSupportBundle deletes the SupportBundle name.
func (ds *DataStore) DeleteSupportBundle(ctx context.Context, name string) error {
	return ds.supportBundles.delete(ctx, name)
}

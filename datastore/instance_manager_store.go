package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// InstanceManagerInformer returns the shared informer of InstanceManager objects, for event handlers.
func (ds *DataStore) InstanceManagerInformer() cache.SharedIndexInformer {
	return ds.instanceManagers.informer
}

// GetInstanceManagerRO returns the cached InstanceManager name itself. It must not be modified.
func (ds *DataStore) GetInstanceManagerRO(_ context.Context, name string) (*longhorn.InstanceManager, error) {
	return ds.instanceManagers.getRO(name)
}

// ListInstanceManagersRO returns the cached InstanceManagers matching selector (nil = all); read-only.
func (ds *DataStore) ListInstanceManagersRO(_ context.Context, selector labels.Selector) ([]*longhorn.InstanceManager, error) {
	return ds.instanceManagers.listRO(selector)
}

// CreateInstanceManager creates an InstanceManager (in the store's namespace when obj has none).
func (ds *DataStore) CreateInstanceManager(ctx context.Context, obj *longhorn.InstanceManager) (*longhorn.InstanceManager, error) {
	return ds.instanceManagers.create(ctx, obj)
}

// UpdateInstanceManagerStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateInstanceManagerStatus(ctx context.Context, obj *longhorn.InstanceManager) (*longhorn.InstanceManager, error) {
	return ds.instanceManagers.updateStatus(ctx, obj)
}

// DeleteInstanceManager deletes InstanceManager name; its pod (owned by it) goes with it.
func (ds *DataStore) DeleteInstanceManager(ctx context.Context, name string) error {
	return ds.instanceManagers.delete(ctx, name)
}

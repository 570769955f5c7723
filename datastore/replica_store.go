package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// ReplicaInformer returns the shared informer of Replica objects, for event handlers.
func (ds *DataStore) ReplicaInformer() cache.SharedIndexInformer { return ds.replicas.informer }

// GetReplica returns a deep copy of the cached Replica name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetReplica(_ context.Context, name string) (*longhorn.Replica, error) {
	return ds.replicas.get(name)
}

// GetReplicaRO returns the cached Replica name itself. It must not be modified.
func (ds *DataStore) GetReplicaRO(_ context.Context, name string) (*longhorn.Replica, error) {
	return ds.replicas.getRO(name)
}

// ListReplicasRO returns the cached Replicas matching selector (nil = all); read-only.
func (ds *DataStore) ListReplicasRO(_ context.Context, selector labels.Selector) ([]*longhorn.Replica, error) {
	return ds.replicas.listRO(selector)
}

// CreateReplica creates a Replica (in the store's namespace when obj has none).
func (ds *DataStore) CreateReplica(ctx context.Context, obj *longhorn.Replica) (*longhorn.Replica, error) {
	return ds.replicas.create(ctx, obj)
}

// UpdateReplica writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateReplica(ctx context.Context, obj *longhorn.Replica) (*longhorn.Replica, error) {
	return ds.replicas.update(ctx, obj)
}

// UpdateReplicaStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateReplicaStatus(ctx context.Context, obj *longhorn.Replica) (*longhorn.Replica, error) {
	return ds.replicas.updateStatus(ctx, obj)
}

// DeleteReplica deletes the Replica name.
func (ds *DataStore) DeleteReplica(ctx context.Context, name string) error {
	return ds.replicas.delete(ctx, name)
}

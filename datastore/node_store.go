package datastore

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// NodeInformer returns the shared informer of Node objects, for event handlers.
func (ds *DataStore) NodeInformer() cache.SharedIndexInformer { return ds.nodes.informer }

// GetNode returns a deep copy of the cached Node name; the caller may change it.
// A missing object gives an apierrors NotFound error.
func (ds *DataStore) GetNode(_ context.Context, name string) (*longhorn.Node, error) {
	return ds.nodes.get(name)
}

// GetNodeRO returns the cached Node name itself. It must not be modified.
func (ds *DataStore) GetNodeRO(_ context.Context, name string) (*longhorn.Node, error) {
	return ds.nodes.getRO(name)
}

// ListNodesRO returns the cached Nodes matching selector (nil = all); read-only.
func (ds *DataStore) ListNodesRO(_ context.Context, selector labels.Selector) ([]*longhorn.Node, error) {
	return ds.nodes.listRO(selector)
}

// CreateNode creates a Node (in the store's namespace when obj has none).
func (ds *DataStore) CreateNode(ctx context.Context, obj *longhorn.Node) (*longhorn.Node, error) {
	return ds.nodes.create(ctx, obj)
}

// UpdateNode writes obj's metadata and spec; a stale resourceVersion gives a Conflict.
func (ds *DataStore) UpdateNode(ctx context.Context, obj *longhorn.Node) (*longhorn.Node, error) {
	return ds.nodes.update(ctx, obj)
}

// UpdateNodeStatus writes obj's status through the status subresource.
func (ds *DataStore) UpdateNodeStatus(ctx context.Context, obj *longhorn.Node) (*longhorn.Node, error) {
	return ds.nodes.updateStatus(ctx, obj)
}

// DeleteNode deletes the Node name.
func (ds *DataStore) DeleteNode(ctx context.Context, name string) error {
	return ds.nodes.delete(ctx, name)
}

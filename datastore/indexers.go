package datastore

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Index names.
const (
	// IndexByVolume indexes engines, replicas and snapshots by volume name.
	IndexByVolume = "longhorn.io/by-volume"
	// IndexByNode indexes engines, replicas and instance managers by node.
	IndexByNode = "longhorn.io/by-node"
)

// addIndexers registers the by-volume and by-node indexers. It must run
// before the informers start.
func (ds *DataStore) addIndexers() error {
	add := []struct {
		inf   cache.SharedIndexInformer
		index string
		fn    cache.IndexFunc
	}{
		{ds.engines.informer, IndexByVolume, indexOf(func(e *longhorn.Engine) []string { return nonEmpty(e.Spec.VolumeName) })},
		{ds.engines.informer, IndexByNode, indexOf(func(e *longhorn.Engine) []string { return nonEmpty(e.Spec.NodeID) })},
		{ds.replicas.informer, IndexByVolume, indexOf(func(r *longhorn.Replica) []string { return nonEmpty(r.Spec.VolumeName) })},
		{ds.replicas.informer, IndexByNode, indexOf(func(r *longhorn.Replica) []string { return nonEmpty(r.Spec.NodeID) })},
		{ds.instanceManagers.informer, IndexByNode, indexOf(func(im *longhorn.InstanceManager) []string { return nonEmpty(im.Spec.NodeID) })},
		{ds.snapshots.informer, IndexByVolume, indexOf(func(s *longhorn.Snapshot) []string { return nonEmpty(s.Spec.Volume) })},
	}
	for _, a := range add {
		if err := a.inf.AddIndexers(cache.Indexers{a.index: a.fn}); err != nil {
			return fmt.Errorf("add indexer %s: %w", a.index, err)
		}
	}
	return nil
}

// indexOf adapts a typed index function; objects of other types index nowhere.
func indexOf[P any](fn func(P) []string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		p, ok := obj.(P)
		if !ok {
			return nil, nil
		}
		return fn(p), nil
	}
}

func nonEmpty(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

// ListEnginesByVolumeRO returns the cached engines of volume; read-only.
func (ds *DataStore) ListEnginesByVolumeRO(_ context.Context, volume string) ([]*longhorn.Engine, error) {
	return ds.engines.byIndexRO(IndexByVolume, volume)
}

// ListEnginesByNodeRO returns the cached engines placed on node; read-only.
func (ds *DataStore) ListEnginesByNodeRO(_ context.Context, node string) ([]*longhorn.Engine, error) {
	return ds.engines.byIndexRO(IndexByNode, node)
}

// ListReplicasByVolumeRO returns the cached replicas of volume; read-only.
func (ds *DataStore) ListReplicasByVolumeRO(_ context.Context, volume string) ([]*longhorn.Replica, error) {
	return ds.replicas.byIndexRO(IndexByVolume, volume)
}

// ListReplicasByNodeRO returns the cached replicas placed on node; read-only.
func (ds *DataStore) ListReplicasByNodeRO(_ context.Context, node string) ([]*longhorn.Replica, error) {
	return ds.replicas.byIndexRO(IndexByNode, node)
}

// ListInstanceManagersByNodeRO returns the cached instance managers of node; read-only.
func (ds *DataStore) ListInstanceManagersByNodeRO(_ context.Context, node string) ([]*longhorn.InstanceManager, error) {
	return ds.instanceManagers.byIndexRO(IndexByNode, node)
}

// ListSnapshotsByVolumeRO returns the cached Snapshot objects of volume; read-only.
func (ds *DataStore) ListSnapshotsByVolumeRO(_ context.Context, volume string) ([]*longhorn.Snapshot, error) {
	return ds.snapshots.byIndexRO(IndexByVolume, volume)
}

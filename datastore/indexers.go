package datastore

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Index names.
const (
	// IndexByVolume indexes engines, replicas, snapshots and backups by volume name.
	IndexByVolume = "longhorn.io/by-volume"
	// IndexByNode indexes engines, replicas, instance managers and orphans by node.
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
		{ds.snapshots.informer, IndexByVolume, indexOf(func(s *longhorn.Snapshot) []string { return nonEmpty(s.Spec.Volume) })},
		{ds.backups.informer, IndexByVolume, indexOf(backupVolumeNames)},
		{ds.instanceManagers.informer, IndexByNode, indexOf(func(im *longhorn.InstanceManager) []string { return nonEmpty(im.Spec.NodeID) })},
		{ds.orphans.informer, IndexByNode, indexOf(func(o *longhorn.Orphan) []string { return nonEmpty(o.Spec.NodeID) })},
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

// backupVolumeNames indexes a backup by its volume: the status volumeName and
// the backup-volume label (Longhorn labels backups with their backup volume).
func backupVolumeNames(b *longhorn.Backup) []string {
	out := nonEmpty(b.Status.VolumeName)
	if l := b.Labels[types.LonghornLabelBackupVolume]; l != "" && l != b.Status.VolumeName {
		out = append(out, l)
	}
	return out
}

// ListEnginesByVolumeRO returns the cached engines of volume; read-only.
func (ds *DataStore) ListEnginesByVolumeRO(_ context.Context, volume string) ([]*longhorn.Engine, error) {
	return ds.engines.byIndexRO(IndexByVolume, volume)
}

// ListEnginesByVolume returns deep copies of the engines of volume.
func (ds *DataStore) ListEnginesByVolume(_ context.Context, volume string) ([]*longhorn.Engine, error) {
	return ds.engines.byIndex(IndexByVolume, volume)
}

// ListEnginesByNodeRO returns the cached engines placed on node; read-only.
func (ds *DataStore) ListEnginesByNodeRO(_ context.Context, node string) ([]*longhorn.Engine, error) {
	return ds.engines.byIndexRO(IndexByNode, node)
}

// ListReplicasByVolumeRO returns the cached replicas of volume; read-only.
func (ds *DataStore) ListReplicasByVolumeRO(_ context.Context, volume string) ([]*longhorn.Replica, error) {
	return ds.replicas.byIndexRO(IndexByVolume, volume)
}

// ListReplicasByVolume returns deep copies of the replicas of volume.
func (ds *DataStore) ListReplicasByVolume(_ context.Context, volume string) ([]*longhorn.Replica, error) {
	return ds.replicas.byIndex(IndexByVolume, volume)
}

// ListReplicasByNodeRO returns the cached replicas placed on node; read-only.
func (ds *DataStore) ListReplicasByNodeRO(_ context.Context, node string) ([]*longhorn.Replica, error) {
	return ds.replicas.byIndexRO(IndexByNode, node)
}

// ListSnapshotsByVolumeRO returns the cached snapshots of volume; read-only.
func (ds *DataStore) ListSnapshotsByVolumeRO(_ context.Context, volume string) ([]*longhorn.Snapshot, error) {
	return ds.snapshots.byIndexRO(IndexByVolume, volume)
}

// ListBackupsByVolumeRO returns the cached backups of volume; read-only.
func (ds *DataStore) ListBackupsByVolumeRO(_ context.Context, volume string) ([]*longhorn.Backup, error) {
	return ds.backups.byIndexRO(IndexByVolume, volume)
}

// ListInstanceManagersByNodeRO returns the cached instance managers of node; read-only.
func (ds *DataStore) ListInstanceManagersByNodeRO(_ context.Context, node string) ([]*longhorn.InstanceManager, error) {
	return ds.instanceManagers.byIndexRO(IndexByNode, node)
}

// ListOrphansByNodeRO returns the cached orphans on node; read-only.
func (ds *DataStore) ListOrphansByNodeRO(_ context.Context, node string) ([]*longhorn.Orphan, error) {
	return ds.orphans.byIndexRO(IndexByNode, node)
}

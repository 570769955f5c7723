package metrics

import (
	"context"

	"github.com/longhorn-go/longhorn/datastore"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// DataStoreSource is the Source of the manager: its informer caches.
type DataStoreSource struct{ DS *datastore.DataStore }

// ListVolumes lists every volume.
func (s DataStoreSource) ListVolumes(ctx context.Context) ([]*longhorn.Volume, error) {
	return s.DS.ListVolumesRO(ctx, nil)
}

// ListEngines lists the engines of volume.
func (s DataStoreSource) ListEngines(ctx context.Context, volume string) ([]*longhorn.Engine, error) {
	return s.DS.ListEnginesByVolumeRO(ctx, volume)
}

// ListNodes lists every Longhorn node.
func (s DataStoreSource) ListNodes(ctx context.Context) ([]*longhorn.Node, error) {
	return s.DS.ListNodesRO(ctx, nil)
}

// ListInstanceManagers lists every instance manager.
func (s DataStoreSource) ListInstanceManagers(ctx context.Context) ([]*longhorn.InstanceManager, error) {
	return s.DS.ListInstanceManagersRO(ctx, nil)
}

// ListBackups lists every backup.
func (s DataStoreSource) ListBackups(ctx context.Context) ([]*longhorn.Backup, error) {
	return s.DS.ListBackupsRO(ctx, nil)
}

// ListSnapshots lists the Snapshot objects of volume.
func (s DataStoreSource) ListSnapshots(ctx context.Context, volume string) ([]*longhorn.Snapshot, error) {
	return s.DS.ListSnapshotsByVolumeRO(ctx, volume)
}

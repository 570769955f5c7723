package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/scheduler"
	"github.com/longhorn-go/longhorn/types"
)

// ExpansionInput is what an expansion check needs: each replica's disk and
// the capacity settings.
type ExpansionInput struct {
	// Disks are the disks holding the volume's placed replicas, keyed by
	// "node/disk" for the message.
	Disks map[string]scheduler.DiskCapacity
}

// checkExpansion refuses growing a volume by growth bytes when one of its
// replicas' disks cannot take that much more under
// storage-over-provisioning-percentage and storage-minimal-available-
// percentage, the same formula (and message numbers) that placing a
// replica uses (scheduler.IsSchedulableToDisk). Disks are checked in name
// order so the message is stable.
func checkExpansion(in ExpansionInput, oldSize, newSize int64) error {
	growth := newSize - oldSize
	if growth <= 0 {
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(in.Disks)) {
		if ok, why := scheduler.IsSchedulableToDisk(growth, 0, in.Disks[key]); !ok {
			return Invalid("spec.size", "cannot expand from %d to %d bytes: disk %s cannot take %d more bytes: %s",
				oldSize, newSize, key, growth, why)
		}
	}
	return nil
}

// expansionDisks collects the capacity of the disks of v's placed replicas.
func expansionDisks(v *longhorn.Volume, replicas []*longhorn.Replica, nodes map[string]*longhorn.Node, overPct, minPct int64) (ExpansionInput, error) {
	in := ExpansionInput{Disks: map[string]scheduler.DiskCapacity{}}
	for _, r := range replicas {
		if r.Spec.NodeID == "" || r.Spec.DiskID == "" || r.DeletionTimestamp != nil || r.Spec.VolumeName != v.Name {
			continue
		}
		n := nodes[r.Spec.NodeID]
		if n == nil {
			continue
		}
		for name, st := range n.Status.DiskStatus {
			if st == nil || st.DiskUUID != r.Spec.DiskID {
				continue
			}
			in.Disks[n.Name+"/"+name] = scheduler.DiskCapacity{
				StorageMaximum: st.StorageMaximum, StorageAvailable: st.StorageAvailable,
				StorageScheduled: st.StorageScheduled, StorageReserved: n.Spec.Disks[name].StorageReserved,
				OverProvisioningPercentage: overPct, MinimalAvailablePercentage: minPct,
			}
		}
	}
	return in, nil
}

// ExpansionStore answers the expansion check from the caches.
type ExpansionStore interface {
	// Expansion returns the disks of v's placed replicas with the
	// capacity settings.
	Expansion(ctx context.Context, v *longhorn.Volume) (ExpansionInput, error)
}

func (s dsStore) Expansion(ctx context.Context, v *longhorn.Volume) (ExpansionInput, error) {
	replicas, err := s.ds.ListReplicasByVolumeRO(ctx, v.Name)
	if err != nil {
		return ExpansionInput{}, fmt.Errorf("list replicas: %w", err)
	}
	list, err := s.ds.ListNodesRO(ctx, nil)
	if err != nil {
		return ExpansionInput{}, fmt.Errorf("list nodes: %w", err)
	}
	nodes := map[string]*longhorn.Node{}
	for _, n := range list {
		nodes[n.Name] = n
	}
	over, err := s.ds.GetSettingAsInt(ctx, types.SettingNameStorageOverProvisioningPercentage)
	if err != nil {
		return ExpansionInput{}, err
	}
	minAvail, err := s.ds.GetSettingAsInt(ctx, types.SettingNameStorageMinimalAvailablePercentage)
	if err != nil {
		return ExpansionInput{}, err
	}
	return expansionDisks(v, replicas, nodes, over, minAvail)
}

package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// wantOrphans returns, by name, the Orphans of node n's replica data
// directories that no Replica on the node owns (dirs: directory names by
// disk name, for the disks that were scanned; a disk is scanned only when
// it is ready and has a UUID), and the set of scanned disks (pure).
func wantOrphans(namespace string, n *longhorn.Node, dirs map[string][]string, replicas []*longhorn.Replica) map[string]*longhorn.Orphan {
	out := map[string]*longhorn.Orphan{}
	for disk, names := range dirs {
		st := n.Status.DiskStatus[disk]
		for _, d := range names {
			if ownsData(replicas, d) {
				continue
			}
			o := newOrphan(namespace, n.Name, disk, n.Spec.Disks[disk].Path, st.DiskUUID, d)
			out[o.Name] = o
		}
	}
	return out
}

// reconcileOrphans scans this node's ready disks for replica data
// directories no Replica owns and keeps one Orphan (type replica, as
// Longhorn's node controller) per such directory: new ones are created, and
// those whose directory is gone or owned again are deleted (the orphan
// controller then leaves the data alone). Directories are listed before the
// replicas, so a replica that creates its directory meanwhile is in the
// list.
func (c *NodeController) reconcileOrphans(ctx context.Context, n *longhorn.Node) error {
	dirs := map[string][]string{}
	for name, d := range n.Spec.Disks {
		st := n.Status.DiskStatus[name]
		if st == nil || st.DiskUUID == "" || !condTrue(st.Conditions, longhorn.DiskConditionTypeReady) {
			continue
		}
		names, err := monitor.ReplicaDataDirectories(d.Path)
		if err != nil {
			continue // the disk's Ready condition reports it on the next probe
		}
		dirs[name] = names
	}
	replicas, err := c.ds.ListReplicasByNodeRO(ctx, n.Name)
	if err != nil {
		return err
	}
	want := wantOrphans(c.opts.Namespace, n, dirs, replicas)
	have, err := c.ds.ListOrphansRO(ctx, labels.SelectorFromSet(labels.Set{types.LonghornLabelNode: n.Name}))
	if err != nil {
		return err
	}
	for _, o := range have {
		_, scanned := dirs[o.Spec.Parameters[longhorn.OrphanDiskName]]
		if want[o.Name] == nil && scanned && o.DeletionTimestamp == nil && o.Spec.Type == longhorn.OrphanTypeReplicaData {
			if err := c.ds.DeleteOrphan(ctx, o.Name); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete orphan %s: %w", o.Name, err)
			}
		}
		delete(want, o.Name)
	}
	for _, o := range want {
		if _, err := c.ds.CreateOrphan(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create orphan %s: %w", o.Name, err)
		}
		c.recorder.Eventf(n, "Normal", "Orphaned", "Replica data %s on disk %s is owned by no replica: orphan %s",
			o.Spec.Parameters[longhorn.OrphanDataName], o.Spec.Parameters[longhorn.OrphanDiskName], o.Name)
	}
	return nil
}

package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// OrphanController acts on Orphan objects of replica data (Longhorn's
// orphan controller): the manager of the orphan's node removes the
// orphaned directory when the Orphan is deleted (by the user, or by
// orphan-resource-auto-deletion), then the finalizer. The node controller
// creates the Orphans (reconcileOrphans).
type OrphanController struct {
	*env
	w *Worker
}

func newOrphanController(e *env) (runner, error) {
	c := &OrphanController{env: e}
	c.w = NewWorker("longhorn-orphan", c.syncOrphan)
	if err := addHandler(e.ds.OrphanInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.SettingInformer(), onChange(func(obj any) {
		if strings.HasPrefix(nameOf(obj), string(types.SettingNameOrphanResourceAutoDeletion)) {
			c.enqueueAll()
		}
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *OrphanController) enqueueAll() {
	orphans, err := c.ds.ListOrphansRO(context.Background(), nil)
	if err != nil {
		return
	}
	for _, o := range orphans {
		c.w.Enqueue(c.key(o.Name))
	}
}

func (c *OrphanController) run(ctx context.Context, workers int) error {
	return c.w.Run(ctx, workers)
}

// syncOrphan handles one Orphan: on its node, deletion removes the data
// and then the finalizer, and auto-deletion deletes it once due; an Orphan
// of a node that is down or gone loses its finalizer (its data stays, as a
// replica's does).
func (c *OrphanController) syncOrphan(ctx context.Context, key string) (Result, error) {
	o, err := c.ds.GetOrphanRO(ctx, splitKey(key))
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil || o.Spec.Type != longhorn.OrphanTypeReplicaData {
		return Done, err
	}
	own := o.Spec.NodeID == c.opts.NodeName
	if o.DeletionTimestamp != nil {
		if own {
			if err := c.removeOrphanData(ctx, o); err != nil {
				return Done, err
			}
		} else if !c.isNodeDownOrDeleted(ctx, o.Spec.NodeID) {
			return Done, nil // the node's own manager removes the data
		}
		return Done, c.dropOrphanFinalizer(ctx, o.Name)
	}
	if !own {
		return Done, nil
	}
	return c.autoDeleteOrphan(ctx, o)
}

// autoDeleteOrphan deletes o when orphan-resource-auto-deletion lists
// replica-data and o is older than orphan-resource-auto-deletion-grace-period
// (seconds); it requeues for the rest of the grace period.
func (c *OrphanController) autoDeleteOrphan(ctx context.Context, o *longhorn.Orphan) (Result, error) {
	kinds, err := c.ds.GetSettingValue(ctx, types.SettingNameOrphanResourceAutoDeletion)
	if err != nil {
		return Done, err
	}
	if !slices.ContainsFunc(strings.Split(kinds, ";"), func(k string) bool { return strings.TrimSpace(k) == types.OrphanResourceTypeReplicaData }) {
		return Done, nil
	}
	grace, err := c.ds.GetSettingAsInt(ctx, types.SettingNameOrphanResourceAutoDeletionGracePeriod)
	if err != nil {
		return Done, err
	}
	if left := o.CreationTimestamp.Add(time.Duration(grace) * time.Second).Sub(c.now()); left > 0 {
		return After(left), nil
	}
	c.recorder.Eventf(o, corev1.EventTypeNormal, "AutoDelete",
		"Deleting orphaned replica data %s on node %s (orphan-resource-auto-deletion)", o.Spec.Parameters[longhorn.OrphanDataName], o.Spec.NodeID)
	return Done, ignoreNotFound(c.ds.DeleteOrphan(ctx, o.Name))
}

// removeOrphanData removes o's directory, unless a Replica now owns it or
// the disk at its path is no longer the one the orphan was found on.
func (c *OrphanController) removeOrphanData(ctx context.Context, o *longhorn.Orphan) error {
	p := o.Spec.Parameters
	name, path := p[longhorn.OrphanDataName], p[longhorn.OrphanDiskPath]
	if !validDataName(name) || path == "" {
		return nil
	}
	replicas, err := c.ds.ListReplicasByNodeRO(ctx, o.Spec.NodeID)
	if err != nil {
		return err
	}
	if ownsData(replicas, name) {
		return nil
	}
	if cfg, err := monitor.ReadDiskConfig(path); err != nil || cfg.DiskUUID != p[longhorn.OrphanDiskUUID] {
		return nil // another disk (or none) is mounted there now: not this orphan's data
	}
	dir := filepath.Join(path, monitor.ReplicaDirectory, name)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove orphaned replica data %s: %w", dir, err)
	}
	c.recorder.Eventf(o, corev1.EventTypeNormal, "Deleted", "Removed orphaned replica data %s", dir)
	return nil
}

func (c *OrphanController) dropOrphanFinalizer(ctx context.Context, name string) error {
	o, err := c.ds.GetOrphan(ctx, name)
	if err != nil || !slices.Contains(o.Finalizers, FinalizerName) {
		return ignoreNotFound(err)
	}
	o.Finalizers = slices.DeleteFunc(o.Finalizers, func(f string) bool { return f == FinalizerName })
	_, err = c.ds.UpdateOrphan(ctx, o)
	return ignoreNotFound(err)
}

// validDataName accepts a single path element (a replica directory name).
func validDataName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsRune(name, os.PathSeparator)
}

// ownsData reports whether one of replicas has data directory name.
func ownsData(replicas []*longhorn.Replica, name string) bool {
	for _, r := range replicas {
		if r.Spec.DataDirectoryName == name {
			return true
		}
	}
	return false
}

// orphanName is Longhorn's name of the Orphan of a replica directory:
// "orphan-" and the SHA-256 of node, disk name, path, UUID and directory.
func orphanName(node, disk, path, uuid, dir string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(fmt.Sprintf("%s-%s-%s-%s-%s", node, disk, path, uuid, dir))))
	return "orphan-" + hex.EncodeToString(sum[:])
}

// newOrphan is the Orphan of replica directory dir on disk (name, spec,
// status) of node.
func newOrphan(namespace, node, disk, path, uuid, dir string) *longhorn.Orphan {
	return &longhorn.Orphan{
		ObjectMeta: metav1.ObjectMeta{Name: orphanName(node, disk, path, uuid, dir), Namespace: namespace,
			Finalizers: []string{FinalizerName}, Labels: map[string]string{types.LonghornLabelNode: node}},
		Spec: longhorn.OrphanSpec{NodeID: node, Type: longhorn.OrphanTypeReplicaData, DataEngine: longhorn.DataEngineTypeV1,
			Parameters: map[string]string{longhorn.OrphanDiskName: disk, longhorn.OrphanDiskPath: path,
				longhorn.OrphanDiskUUID: uuid, longhorn.OrphanDataName: dir, longhorn.OrphanDiskType: string(longhorn.DiskTypeFilesystem)}},
	}
}

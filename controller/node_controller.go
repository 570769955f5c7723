package controller

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// diskMonitorInterval is how often the own node's disks are measured
// (Longhorn's DiskMonitor period).
const diskMonitorInterval = 30 * time.Second

// Kubernetes node labels the node controller reads.
const (
	labelCreateDefaultDisk = "node.longhorn.io/create-default-disk"
	labelZone              = "topology.kubernetes.io/zone"
	labelRegion            = "topology.kubernetes.io/region"
)

// NodeController keeps Longhorn Node objects: this node's object, disks and
// instance manager, and every node's Ready and Schedulable conditions.
type NodeController struct {
	*env
	w *Worker

	mu     sync.Mutex
	probed map[string]timedProbe // disk name -> last measurement
}

// timedProbe is a disk measurement and when it was taken.
type timedProbe struct {
	path string
	at   time.Time
	p    diskProbe
}

func newNodeController(e *env) (runner, error) {
	c := &NodeController{env: e, probed: map[string]timedProbe{}}
	c.w = NewWorker("longhorn-node", c.syncNode)
	enqueueName := func(obj any) {
		if n := nameOf(obj); n != "" {
			c.w.Enqueue(e.key(n))
		}
	}
	enqueueAll := func(any) { c.enqueueAll() }
	enqueueOwn := func(any) { c.w.Enqueue(e.key(e.opts.NodeName)) }
	if err := addHandler(e.ds.NodeInformer(), onChange(enqueueName)); err != nil {
		return nil, err
	}
	if err := addHandler(e.kubeFactory.Core().V1().Nodes().Informer(), onChange(enqueueName)); err != nil {
		return nil, err
	}
	if err := addHandler(e.nsFactory.Coordination().V1().Leases().Informer(), onChange(func(obj any) {
		if n, ok := strings.CutPrefix(nameOf(obj), ManagerLeasePrefix); ok {
			c.w.Enqueue(e.key(n))
		}
	})); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.ReplicaInformer(), onChange(enqueueOwn)); err != nil {
		return nil, err
	}
	// An instance manager of an older image on this node whose last
	// instance went is cleaned up (cleanupInstanceManagers).
	if err := addHandler(e.ds.InstanceManagerInformer(), onChange(func(obj any) {
		if im, ok := obj.(*longhorn.InstanceManager); ok && im.Spec.NodeID == e.opts.NodeName && im.Spec.Image != e.opts.InstanceManagerImage {
			enqueueOwn(obj)
		}
	})); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.SettingInformer(), onChange(enqueueAll)); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *NodeController) enqueueAll() {
	nodes, err := c.ds.ListNodesRO(context.Background(), nil)
	if err != nil {
		return
	}
	for _, n := range nodes {
		c.w.Enqueue(c.key(n.Name))
	}
	c.w.Enqueue(c.key(c.opts.NodeName))
}

func (c *NodeController) run(ctx context.Context, workers int) error {
	c.w.Enqueue(c.key(c.opts.NodeName))
	return c.w.Run(ctx, workers)
}

// syncNode reconciles one Longhorn node.
func (c *NodeController) syncNode(ctx context.Context, key string) (Result, error) {
	name := splitKey(key)
	own := name == c.opts.NodeName
	nodeRO, err := c.ds.GetNodeRO(ctx, name)
	if apierrors.IsNotFound(err) {
		if own {
			return Done, c.createOwnNode(ctx)
		}
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if own && c.skipReconcile(nodeRO, "Node") {
		return Done, nil
	}
	kn, lease := c.kubeNode(name), c.lease(name)
	next := nodeRO.DeepCopy()
	c.reconcileConditions(ctx, next, kn, lease)
	res := Result{}
	if d := leaseExpiresIn(lease, c.now()); d > 0 {
		res = After(d + time.Second)
	}
	if d := notReadyGraceLeft(kn, c.now()); d > 0 && (res.RequeueAfter == 0 || d < res.RequeueAfter) {
		res = After(d + 100*time.Millisecond)
	}
	if own {
		if err := c.reconcileDisks(ctx, next); err != nil {
			return Done, err
		}
		c.reconcileMountPropagation(ctx, next)
		if err := c.reconcileAutoEvicting(ctx, next, kn); err != nil {
			return Done, err
		}
		if err := c.reconcileOrphans(ctx, next); err != nil {
			LoggerFrom(ctx).WithError(err).Warn("Orphaned replica data")
		}
		if err := c.ensureInstanceManager(ctx); err != nil {
			return Done, err
		}
		if err := c.cleanupInstanceManagers(ctx); err != nil {
			return Done, err
		}
		if res.RequeueAfter == 0 || res.RequeueAfter > diskMonitorInterval {
			res = After(diskMonitorInterval)
		}
	}
	if !reflect.DeepEqual(nodeRO.Status, next.Status) {
		if _, err := c.ds.UpdateNodeStatus(ctx, next); err != nil {
			return Done, fmt.Errorf("update node %s status: %w", name, err)
		}
	}
	return res, nil
}

func (c *NodeController) kubeNode(name string) *corev1.Node {
	kn, err := c.kubeNodes.Get(name)
	if err != nil {
		return nil
	}
	return kn
}

func (c *NodeController) lease(name string) *coordinationv1.Lease {
	l, err := c.leases.Leases(c.opts.Namespace).Get(ManagerLeasePrefix + name)
	if err != nil {
		return nil
	}
	return l
}

// reconcileConditions sets Ready, Schedulable, zone and region.
func (c *NodeController) reconcileConditions(ctx context.Context, n *longhorn.Node, kn *corev1.Node, lease *coordinationv1.Lease) {
	now := c.now()
	ts := now.UTC().Format(time.RFC3339)
	r := decideNodeReady(kn, lease, now)
	n.Status.Conditions = setCond(n.Status.Conditions, longhorn.NodeConditionTypeReady,
		r.Status == longhorn.ConditionStatusTrue, r.Reason, r.Message, ts)
	disableOnCordon, err := c.ds.GetSettingAsBool(ctx, types.SettingNameDisableSchedulingOnCordonedNode)
	if err != nil {
		disableOnCordon = true
	}
	cordoned := kn != nil && kn.Spec.Unschedulable && disableOnCordon
	if cordoned {
		n.Status.Conditions = setCond(n.Status.Conditions, longhorn.NodeConditionTypeSchedulable, false,
			longhorn.NodeConditionReasonKubernetesNodeCordoned, "Kubernetes node is cordoned", ts)
	} else {
		n.Status.Conditions = setCond(n.Status.Conditions, longhorn.NodeConditionTypeSchedulable, true, "", "", ts)
	}
	if kn != nil {
		n.Status.Zone, n.Status.Region = kn.Labels[labelZone], kn.Labels[labelRegion]
	}
}

// reconcileDisks measures this node's disks and writes their status.
func (c *NodeController) reconcileDisks(ctx context.Context, n *longhorn.Node) error {
	probes := map[string]diskProbe{}
	for name, d := range n.Spec.Disks {
		probes[name] = c.probeDisk(name, d.Path)
	}
	replicas, err := c.ds.ListReplicasByNodeRO(ctx, n.Name)
	if err != nil {
		return err
	}
	over, err := c.ds.GetSettingAsInt(ctx, types.SettingNameStorageOverProvisioningPercentage)
	if err != nil {
		return err
	}
	minAvail, err := c.ds.GetSettingAsInt(ctx, types.SettingNameStorageMinimalAvailablePercentage)
	if err != nil {
		return err
	}
	n.Status.DiskStatus = decideDiskStatuses(n, probes, replicas,
		capacitySettings{OverProvisioningPercentage: over, MinimalAvailablePercentage: minAvail}, c.now().UTC().Format(time.RFC3339))
	return nil
}

// reconcileMountPropagation sets MountPropagation: True when the mount
// holding default-data-path is shared (mounts propagate to and from the
// host, as Longhorn requires of the manager's data path), else False with
// reason NoMountPropagationSupport. It does not change readiness.
func (c *NodeController) reconcileMountPropagation(ctx context.Context, n *longhorn.Node) {
	ts := c.now().UTC().Format(time.RFC3339)
	path, err := c.ds.GetSettingValue(ctx, types.SettingNameDefaultDataPath)
	shared := false
	if err == nil {
		shared, err = monitor.MountPropagation(path)
	}
	switch {
	case err != nil:
		n.Status.Conditions = setCond(n.Status.Conditions, longhorn.NodeConditionTypeMountPropagation, false,
			longhorn.NodeConditionReasonNoMountPropagationSupport, fmt.Sprintf("Cannot check mount propagation of %s: %v", path, err), ts)
	case !shared:
		n.Status.Conditions = setCond(n.Status.Conditions, longhorn.NodeConditionTypeMountPropagation, false,
			longhorn.NodeConditionReasonNoMountPropagationSupport,
			fmt.Sprintf("The mount holding %s is not shared: mounts do not propagate (mountinfo has no shared:N)", path), ts)
	default:
		n.Status.Conditions = setCond(n.Status.Conditions, longhorn.NodeConditionTypeMountPropagation, true, "", "", ts)
	}
}

// createOwnNode creates this node's Longhorn Node, with the default disk at
// default-data-path unless create-default-disk-labeled-nodes is on and the
// Kubernetes node lacks the label node.longhorn.io/create-default-disk=true.
func (c *NodeController) createOwnNode(ctx context.Context) error {
	name := c.opts.NodeName
	n := &longhorn.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.opts.Namespace},
		Spec:       longhorn.NodeSpec{Name: name, AllowScheduling: true, Disks: map[string]longhorn.DiskSpec{}, Tags: []string{}},
	}
	want, err := c.wantDefaultDisk(ctx)
	if err != nil {
		return err
	}
	if want {
		diskName, spec, err := c.defaultDisk(ctx)
		if err != nil {
			return err
		}
		n.Spec.Disks[diskName] = spec
	}
	_, err = c.ds.CreateNode(ctx, n)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		LoggerFrom(ctx).WithField("disks", len(n.Spec.Disks)).Info("Created Longhorn node")
	}
	return err
}

func (c *NodeController) wantDefaultDisk(ctx context.Context) (bool, error) {
	labeledOnly, err := c.ds.GetSettingAsBool(ctx, types.SettingNameCreateDefaultDiskLabeledNodes)
	if err != nil || !labeledOnly {
		return !labeledOnly, err
	}
	kn := c.kubeNode(c.opts.NodeName)
	return kn != nil && kn.Labels[labelCreateDefaultDisk] == "true", nil
}

// defaultDisk builds the default disk: key "default-disk-<fsid>", path
// default-data-path, storage-reserved-percentage-for-default-disk reserved.
func (c *NodeController) defaultDisk(ctx context.Context) (string, longhorn.DiskSpec, error) {
	path, err := c.ds.GetSettingValue(ctx, types.SettingNameDefaultDataPath)
	if err != nil {
		return "", longhorn.DiskSpec{}, err
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", longhorn.DiskSpec{}, fmt.Errorf("default data path %s: %w", path, err)
	}
	st, err := monitor.StatDisk(path)
	if err != nil {
		return "", longhorn.DiskSpec{}, err
	}
	pct, err := c.ds.GetSettingAsInt(ctx, types.SettingNameStorageReservedPercentageForDefaultDisk)
	if err != nil {
		return "", longhorn.DiskSpec{}, err
	}
	return "default-disk-" + st.FSID, longhorn.DiskSpec{
		Type: longhorn.DiskTypeFilesystem, Path: path, AllowScheduling: true,
		StorageReserved: st.StorageMaximum * pct / 100, Tags: []string{},
	}, nil
}

// ensureInstanceManager creates this node's InstanceManager object for the
// current instance-manager image when it is missing.
func (c *NodeController) ensureInstanceManager(ctx context.Context) error {
	image := c.opts.InstanceManagerImage
	name := types.InstanceManagerName(c.opts.NodeName, image, longhorn.DataEngineTypeV1)
	if _, err := c.ds.GetInstanceManagerRO(ctx, name); !apierrors.IsNotFound(err) {
		return err
	}
	im := &longhorn.InstanceManager{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.opts.Namespace, Labels: map[string]string{
			types.LonghornLabelComponent:           types.LonghornComponentInstanceManager,
			types.LonghornLabelInstanceManagerType: string(longhorn.InstanceManagerTypeAllInOne),
			types.LonghornLabelNode:                c.opts.NodeName,
			types.LonghornLabelDataEngine:          string(longhorn.DataEngineTypeV1),
		}},
		Spec: longhorn.InstanceManagerSpec{Image: image, NodeID: c.opts.NodeName,
			Type: longhorn.InstanceManagerTypeAllInOne, DataEngine: longhorn.DataEngineTypeV1},
	}
	_, err := c.ds.CreateInstanceManager(ctx, im)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// probeDisk measures a disk at most once per diskMonitorInterval (free
// space changes all the time; writing it on every event would churn).
func (c *NodeController) probeDisk(name, path string) diskProbe {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.probed[name]; ok && t.path == path && c.now().Sub(t.at) < diskMonitorInterval && t.p.Err == nil {
		return t.p
	}
	var p diskProbe
	p.Config, p.Err = monitor.EnsureDiskConfig(path, name)
	if p.Err == nil {
		p.Stat, p.Err = monitor.StatDisk(path)
	}
	c.probed[name] = timedProbe{path: path, at: c.now(), p: p}
	return p
}

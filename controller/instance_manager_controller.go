package controller

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// imResyncInterval re-lists a running instance manager's instances even
// without watch events.
const imResyncInterval = 30 * time.Second

// InstanceManagerController runs one instance-manager pod per
// InstanceManager object and mirrors the pod's state and its instances into
// the object's status.
type InstanceManagerController struct {
	*env
	w        *Worker
	monitors *imMonitors
	// orphans: instances seen running without their object (stopOrphanInstances).
	orphans orphanTracker
}

func newInstanceManagerController(e *env) (runner, error) {
	c := &InstanceManagerController{env: e}
	c.w = NewWorker("longhorn-instance-manager", c.syncInstanceManager)
	c.monitors = newIMMonitors(e.api, c.w.Enqueue)
	if err := addHandler(e.ds.InstanceManagerInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	// The pod has the instance manager's name.
	if err := addHandler(e.nsFactory.Core().V1().Pods().Informer(), onChange(func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Labels[types.LonghornLabelComponent] == types.LonghornComponentInstanceManager {
			c.w.Enqueue(e.key(p.Name))
		}
	})); err != nil {
		return nil, err
	}
	// A PodDisruptionBudget has its instance manager's name: one deleted by
	// someone else is put back at once, not at the next resync.
	if err := addHandler(e.nsFactory.Policy().V1().PodDisruptionBudgets().Informer(),
		cache.ResourceEventHandlerFuncs{DeleteFunc: c.w.EnqueueObject}); err != nil {
		return nil, err
	}
	// Node readiness changes the state (unknown) and the ownership.
	if err := addHandler(e.ds.NodeInformer(), onChange(func(obj any) {
		ims, err := e.ds.ListInstanceManagersByNodeRO(context.Background(), nameOf(obj))
		if err != nil {
			return
		}
		for _, im := range ims {
			c.w.Enqueue(e.key(im.Name))
		}
	})); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.SettingInformer(), onChange(func(obj any) {
		switch types.SettingName(nameOf(obj)) {
		case types.SettingNameStorageNetwork, types.SettingNameNodeDrainPolicy, types.SettingNameGuaranteedInstanceManagerCPU:
			c.enqueueAll()
		}
	})); err != nil {
		return nil, err
	}
	// Replicas coming, going, failing or getting healthy change the PDBs
	// (reconcilePDB) of every node: a replica elsewhere can make one the last.
	if err := addHandler(e.ds.ReplicaInformer(), onReplicaPDBChange(func(any) { c.enqueueAll() })); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *InstanceManagerController) enqueueAll() {
	ims, err := c.ds.ListInstanceManagersRO(context.Background(), nil)
	if err != nil {
		return
	}
	for _, im := range ims {
		c.w.Enqueue(c.key(im.Name))
	}
}

func (c *InstanceManagerController) run(ctx context.Context, workers int) error {
	defer c.monitors.stopAll()
	return c.w.Run(ctx, workers)
}

// decideIMState maps what is known about the pod to the instance manager
// state:
//
//	node down                      -> unknown
//	no pod, or pod being deleted   -> stopped
//	pod Pending                    -> starting
//	pod Running, gRPC answers      -> running
//	pod Running, gRPC silent       -> starting
//	pod Failed or Succeeded        -> error
//	pod phase Unknown              -> unknown
func decideIMState(nodeDown bool, pod *corev1.Pod, reachable bool) longhorn.InstanceManagerState {
	switch {
	case nodeDown:
		return longhorn.InstanceManagerStateUnknown
	case pod == nil || pod.DeletionTimestamp != nil:
		return longhorn.InstanceManagerStateStopped
	}
	switch pod.Status.Phase {
	case corev1.PodPending:
		return longhorn.InstanceManagerStateStarting
	case corev1.PodRunning:
		if reachable {
			return longhorn.InstanceManagerStateRunning
		}
		return longhorn.InstanceManagerStateStarting
	case corev1.PodFailed, corev1.PodSucceeded:
		return longhorn.InstanceManagerStateError
	}
	return longhorn.InstanceManagerStateUnknown
}

// imAddress is where the instance manager in pod listens.
func imAddress(ip string) engineapi.IMAddress {
	return engineapi.IMAddress{
		Address:      net.JoinHostPort(ip, strconv.Itoa(engineapi.DefaultInstanceManagerPort)),
		ProxyAddress: net.JoinHostPort(ip, strconv.Itoa(engineapi.DefaultProxyPort)),
	}
}

// syncInstanceManager reconciles one instance manager.
func (c *InstanceManagerController) syncInstanceManager(ctx context.Context, key string) (Result, error) {
	name := splitKey(key)
	imRO, err := c.ds.GetInstanceManagerRO(ctx, name)
	if apierrors.IsNotFound(err) {
		c.monitors.stop(name)
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, imRO.Spec.NodeID, imRO.Status.OwnerID) {
		c.monitors.stop(name)
		return Done, nil
	}
	if c.skipReconcile(imRO, "InstanceManager") {
		return Done, nil
	}
	im := imRO.DeepCopy()
	im.Status.OwnerID = c.opts.NodeName
	// A node whose manager alone is gone (its lease released or expired)
	// still runs its instance manager: only a gone or NotReady node makes
	// it unknown.
	nodeDown := c.isNodeDownOrDeleted(ctx, im.Spec.NodeID)
	pod, err := c.pods.Pods(c.opts.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		pod = nil
	} else if err != nil {
		return Done, err
	}
	if !nodeDown {
		if done, err := c.reconcilePod(ctx, im, pod); done || err != nil {
			return WaitShort, err
		}
		if err := c.reconcilePDB(ctx, im); err != nil {
			LoggerFrom(ctx).WithError(err).Warn("Instance manager PodDisruptionBudget")
		}
	}
	reachable := false
	if pod != nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" && !nodeDown {
		reachable = c.syncInstances(ctx, im, pod.Status.PodIP) == nil
	}
	im.Status.CurrentState = decideIMState(nodeDown, pod, reachable)
	if pod != nil && !nodeDown {
		im.Status.IP = pod.Status.PodIP
	}
	if im.Status.CurrentState == longhorn.InstanceManagerStateRunning {
		c.monitors.ensure(name, imTarget{Key: c.key(name), Addr: imAddress(im.Status.IP)})
	} else {
		c.monitors.stop(name)
	}
	if !reflect.DeepEqual(imRO.Status, im.Status) {
		if _, err := c.ds.UpdateInstanceManagerStatus(ctx, im); err != nil {
			if apierrors.IsConflict(err) {
				return Done, nil // another manager won, or the cache is behind: the event requeues
			}
			return Done, fmt.Errorf("update instance manager %s status: %w", name, err)
		}
	}
	if im.Status.CurrentState == longhorn.InstanceManagerStateRunning {
		return After(imResyncInterval), nil
	}
	return WaitShort, nil
}

// reconcilePod creates a missing pod and deletes a failed or outdated one.
// done means the pod was just created or deleted.
func (c *InstanceManagerController) reconcilePod(ctx context.Context, im *longhorn.InstanceManager, pod *corev1.Pod) (bool, error) {
	params, err := c.podParams(ctx)
	if err != nil {
		return false, err
	}
	if params.CPURequest, err = c.podCPURequest(ctx, im.Spec.NodeID); err != nil {
		return false, err
	}
	want := imPod(im, params)
	pods := c.kube.CoreV1().Pods(c.opts.Namespace)
	switch {
	case pod == nil:
		_, err := pods.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
		if err == nil {
			c.recorder.Eventf(im, corev1.EventTypeNormal, "Start", "Creating instance-manager pod %s on node %s", want.Name, im.Spec.NodeID)
		}
		return true, err
	case pod.DeletionTimestamp != nil:
		return true, nil
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded ||
		(podNeedsRecreate(pod, want) && len(im.Status.InstanceEngines)+len(im.Status.InstanceReplicas) == 0):
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return true, err
	}
	return false, nil
}

func (c *InstanceManagerController) podParams(ctx context.Context) (imPodParams, error) {
	nad, err := c.ds.GetSettingValue(ctx, types.SettingNameStorageNetwork)
	if err != nil {
		return imPodParams{}, err
	}
	path, err := c.ds.GetSettingValue(ctx, types.SettingNameDefaultDataPath)
	if err != nil {
		return imPodParams{}, err
	}
	sys, err := systemManagedFrom(func(n types.SettingName) (string, error) { return c.ds.GetSettingValue(ctx, n) })
	if err != nil {
		return imPodParams{}, err
	}
	return imPodParams{Namespace: c.opts.Namespace, ServiceAccount: c.opts.ServiceAccount, StorageNetwork: nad, DataPath: path, System: sys,
		NoProxy: c.opts.InstanceManagerNoProxy}, nil
}

// podCPURequest reads the inputs of imCPURequest for node: its Longhorn
// node's spec.instanceManagerCPURequest, the v1 value of
// guaranteed-instance-manager-cpu and the Kubernetes node's allocatable CPU
// (0 while the node is not known).
func (c *InstanceManagerController) podCPURequest(ctx context.Context, node string) (int64, error) {
	nodeRequest := 0
	if n, err := c.ds.GetNodeRO(ctx, node); err == nil {
		nodeRequest = n.Spec.InstanceManagerCPURequest
	}
	raw, err := c.ds.GetSettingValue(ctx, types.SettingNameGuaranteedInstanceManagerCPU)
	if err != nil {
		return 0, err
	}
	v, err := types.SettingValueForDataEngine(types.SettingNameGuaranteedInstanceManagerCPU, raw, longhorn.DataEngineTypeV1)
	if err != nil {
		return 0, err
	}
	pct, err := types.ParseSettingFloat(types.SettingNameGuaranteedInstanceManagerCPU, v)
	if err != nil {
		return 0, err
	}
	var allocatable int64
	if kn, err := c.kubeNodes.Get(node); err == nil {
		allocatable = kn.Status.Allocatable.Cpu().MilliValue()
	}
	return imCPURequest(nodeRequest, pct, allocatable), nil
}

// syncInstances pings the instance manager (and its proxy), so that a dead
// client is dropped and dialed again, then lists its instances into status.
func (c *InstanceManagerController) syncInstances(ctx context.Context, im *longhorn.InstanceManager, ip string) error {
	if _, err := c.api.Ping(ctx, imAddress(ip)); err != nil {
		return err
	}
	client, err := c.api.InstanceManager(ctx, imAddress(ip))
	if err != nil {
		return err
	}
	list, err := client.InstanceList(ctx)
	if err != nil {
		return err
	}
	engines, replicas := map[string]longhorn.InstanceProcess{}, map[string]longhorn.InstanceProcess{}
	for name, in := range list {
		p := longhorn.InstanceProcess{
			Spec: longhorn.InstanceProcessSpec{Name: name, DataEngine: longhorn.DataEngineTypeV1},
			Status: longhorn.InstanceProcessStatus{State: longhorn.InstanceState(in.Status.State), ErrorMsg: in.Status.ErrorMsg,
				PortStart: in.Status.PortStart, PortEnd: in.Status.PortEnd, Type: longhorn.InstanceType(in.Spec.Type),
				UUID: in.Status.UUID, Listen: ip},
		}
		switch in.Spec.Type {
		case engineapi.InstanceTypeEngine:
			engines[name] = p
		case engineapi.InstanceTypeReplica:
			replicas[name] = p
		}
	}
	im.Status.InstanceEngines, im.Status.InstanceReplicas = nilIfEmpty(engines), nilIfEmpty(replicas)
	c.stopOrphanInstances(ctx, im, client, list)
	v := client.Versions()
	im.Status.APIMinVersion, im.Status.APIVersion = int(v.InstanceManagerMin), int(v.InstanceManagerCurrent)
	im.Status.ProxyAPIMinVersion, im.Status.ProxyAPIVersion = int(v.ProxyMin), int(v.ProxyCurrent)
	return nil
}

// nilIfEmpty keeps status stable across a write and read back (omitempty
// maps come back nil).
func nilIfEmpty(m map[string]longhorn.InstanceProcess) map[string]longhorn.InstanceProcess {
	if len(m) == 0 {
		return nil
	}
	return m
}

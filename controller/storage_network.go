package controller

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// storageNetworkRecheck: an instance-manager pod that still runs instances
// when storage-network changed is looked at again after this long (the
// webhook refuses the change while volumes are attached, so this happens
// only when the setting came from the chart's ConfigMap or was forced).
const storageNetworkRecheck = time.Minute

// imPodNetwork is one instance-manager pod as the storage-network step sees
// it: its networks annotation and how many instances its instance manager
// runs.
type imPodNetwork struct {
	Name      string
	Networks  string // the pod's k8s.v1.cni.cncf.io/networks annotation
	Instances int
	Deleting  bool
}

// decideStorageNetworkRestarts returns the instance-manager pods to delete
// so that they come back on the network want (multusNetworks of the
// setting, "" for the pod network only), and those that must wait because
// their instance manager still runs engines or replicas (Longhorn applies
// the setting to an instance manager only once it runs no instance).
func decideStorageNetworkRestarts(pods []imPodNetwork, want string) (restart, waiting []string) {
	for _, p := range pods {
		switch {
		case p.Deleting || p.Networks == want:
		case p.Instances > 0:
			waiting = append(waiting, p.Name)
		default:
			restart = append(restart, p.Name)
		}
	}
	sort.Strings(restart)
	sort.Strings(waiting)
	return restart, waiting
}

// reconcileStorageNetwork applies the storage-network setting to this
// node's instance-manager pods: each one whose networks annotation differs
// from the setting is deleted (the instance manager controller creates it
// again with the new annotation), once it runs no instance.
func (c *SettingController) reconcileStorageNetwork(ctx context.Context, setting *longhorn.Setting) (Result, error) {
	want := ""
	if setting.Value != "" {
		want = multusNetworks(setting.Value)
	}
	pods, err := c.pods.Pods(c.opts.Namespace).List(labels.SelectorFromSet(labels.Set{
		types.LonghornLabelComponent: types.LonghornComponentInstanceManager, types.LonghornLabelNode: c.opts.NodeName}))
	if err != nil {
		return Done, err
	}
	var seen []imPodNetwork
	for _, p := range pods {
		n := imPodNetwork{Name: p.Name, Networks: p.Annotations[multusNetworksAnnotation], Deleting: p.DeletionTimestamp != nil}
		if im, err := c.ds.GetInstanceManagerRO(ctx, p.Name); err == nil {
			n.Instances = len(im.Status.InstanceEngines) + len(im.Status.InstanceReplicas)
		}
		seen = append(seen, n)
	}
	restart, waiting := decideStorageNetworkRestarts(seen, want)
	for _, name := range restart {
		if err := c.kube.CoreV1().Pods(c.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return Done, fmt.Errorf("delete instance-manager pod %s for %s: %w", name, types.SettingNameStorageNetwork, err)
		}
		c.recorder.Eventf(setting, corev1.EventTypeNormal, "RestartingInstanceManager",
			"Deleting instance-manager pod %s so that it comes back with storage network %q", name, setting.Value)
	}
	if len(waiting) > 0 {
		c.recorder.Eventf(setting, corev1.EventTypeWarning, "WaitingForInstances",
			"Instance-manager pods %v still run engines or replicas; %s applies to them once those stop", waiting, types.SettingNameStorageNetwork)
		return After(storageNetworkRecheck), nil
	}
	return Done, nil
}

package multus

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// NADResource is the NetworkAttachmentDefinition resource.
var NADResource = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}

// kubeCluster is Cluster over client-go.
type kubeCluster struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// NewKubeCluster reads kubeconfig and returns the Cluster the plugin uses
// (RBAC: get pods, update pods/status, get network-attachment-definitions;
// ClusterRole lhmultus of Manifest).
func NewKubeCluster(kubeconfig string) (Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 20 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &kubeCluster{kube: kube, dyn: dyn}, nil
}

func (k *kubeCluster) PodNetworks(ctx context.Context, namespace, name string) (string, error) {
	pod, err := k.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return pod.Annotations[NetworksAnnotation], nil
}

func (k *kubeCluster) NADConfig(ctx context.Context, namespace, name string) (string, error) {
	u, err := k.dyn.Resource(NADResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return nadConfig(u)
}

// nadConfig returns spec.config of a NetworkAttachmentDefinition.
func nadConfig(u *unstructured.Unstructured) (string, error) {
	cfg, found, err := unstructured.NestedString(u.Object, "spec", "config")
	if err != nil {
		return "", fmt.Errorf("spec.config: %w", err)
	}
	if !found || cfg == "" {
		return "", errors.New("spec.config is empty (this plugin reads no configuration files by name)")
	}
	return cfg, nil
}

// SetNetworkStatus writes the annotation through the pods/status
// subresource, as Multus does, retrying on conflicts with the kubelet's
// own status updates.
func (k *kubeCluster) SetNetworkStatus(ctx context.Context, namespace, name, status string) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		pod, err := k.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[NetworkStatusAnnotation] = status
		_, err = k.kube.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

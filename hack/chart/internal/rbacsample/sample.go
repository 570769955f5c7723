// Package rbacsample exercises the RBAC analysis (rbac_test.go): every kind
// of client use it must recognise.
package rbacsample

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
)

type holder struct{ c any }

// Use calls typed clients directly, through variables, an informer, a
// broadcaster, and passes a typed client on.
func Use(ctx context.Context, kube kubernetes.Interface, lh versioned.Interface, f informers.SharedInformerFactory) error {
	if _, err := kube.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_ = kube.CoreV1().Pods("ns").GetLogs("p", &corev1.PodLogOptions{})
	sc := kube.StorageV1().StorageClasses()
	if err := sc.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if _, err := lh.LonghornV1beta2().Volumes("ns").UpdateStatus(ctx, &longhorn.Volume{}, metav1.UpdateOptions{}); err != nil {
		return err
	}
	_ = f.Core().V1().Nodes().Informer()
	_ = record.NewBroadcaster()
	_ = holder{c: lh.LonghornV1beta2().Replicas("ns")}
	return nil
}

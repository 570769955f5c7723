package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/longhorn-go/longhorn/types"
)

// skipReconcileRequested reports whether obj carries
// longhorn.io/skip-reconcile: "true" (pure).
func skipReconcileRequested(obj metav1.Object) bool {
	return obj.GetLabels()[types.LonghornLabelSkipReconcile] == "true"
}

// skipReconcile reports whether the controller must leave obj alone: it is
// labelled longhorn.io/skip-reconcile=true, so an operator can repair it by
// hand without a controller undoing the work (nothing about it changes, not
// its status, its processes or its finalizer, until the label goes). The
// first sync of each version of such an object records a SkipReconcile
// event on it.
func (e *env) skipReconcile(obj interface {
	metav1.Object
	runtime.Object
}, kind string) bool {
	if !skipReconcileRequested(obj) {
		return false
	}
	key := kind + "/" + obj.GetName()
	if prev, ok := e.skipped.Load(key); !ok || prev != obj.GetResourceVersion() {
		e.skipped.Store(key, obj.GetResourceVersion())
		e.recorder.Eventf(obj, corev1.EventTypeNormal, "SkipReconcile",
			"%s %s has label %s=true: the controllers leave it alone until the label is removed", kind, obj.GetName(), types.LonghornLabelSkipReconcile)
	}
	return true
}

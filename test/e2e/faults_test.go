package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/types"
)

// Fault injection specific to the e2e scenarios: cutting a node's link and
// deleting a Longhorn pod.

// managerSelector selects the longhorn-manager DaemonSet's pods
// (deploy/longhorn.yaml).
const managerSelector = "app=longhorn-manager"

// imSelector selects instance-manager pods (controller/im_pod.go labels).
var imSelector = types.LonghornLabelComponent + "=" + types.LonghornComponentInstanceManager

// cutLink takes node i's link down (testbed/cluster SetLinkUp on the
// root-namespace veth end) and registers a cleanup that brings it back up;
// the returned function restores it earlier (idempotent).
func cutLink(t *testing.T, c *cluster.Config, i int) (restore func()) {
	t.Helper()
	if err := cluster.SetLinkUp(c, i, false); err != nil {
		t.Fatalf("cut %s: %v", c.NodeName(i), err)
	}
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		if err := cluster.SetLinkUp(c, i, true); err != nil {
			t.Errorf("restore %s's link: %v", c.NodeName(i), err)
		}
	}
	t.Cleanup(restore)
	return restore
}

// nodePod returns the live (not terminating) pod matching selector on node.
func nodePod(ctx context.Context, cs kubernetes.Interface, selector, node string) (*corev1.Pod, error) {
	pl, err := cs.CoreV1().Pods(lhNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	for i := range pl.Items {
		p := &pl.Items[i]
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no live pod %q on %s (%d pods match)", selector, node, len(pl.Items))
}

// podReady reports the pod's Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deletePod deletes p (default grace period, as `kubectl delete pod` does).
func deletePod(ctx context.Context, t *testing.T, cs kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	if err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", p.Name, err)
	}
	t.Logf("deleted pod %s on %s", p.Name, p.Spec.NodeName)
}

// waitPodReplaced waits until a Ready pod matching selector runs on node
// with a UID other than old's, and returns it.
func waitPodReplaced(ctx context.Context, t *testing.T, cs kubernetes.Interface, selector string, old *corev1.Pod, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var np *corev1.Pod
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := nodePod(ctx, cs, selector, old.Spec.NodeName)
		switch {
		case err != nil:
			last = err.Error()
			return false, nil
		case p.UID == old.UID:
			last = "old pod " + p.Name + " still there"
			return false, nil
		case !podReady(p):
			last = fmt.Sprintf("new pod %s is %s, not Ready", p.Name, p.Status.Phase)
			return false, nil
		}
		np = p
		return true, nil
	})
	if err != nil {
		t.Fatalf("pod %s on %s not replaced by a Ready pod within %v: %s", old.Name, old.Spec.NodeName, timeout, last)
	}
	return np
}

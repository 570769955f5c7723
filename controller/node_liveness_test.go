package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// A manager that stops releases its lease: the node reads as missing its
// manager at once, not LeaseDuration later.
func TestLeaseHeartbeatReleasesOnStop(t *testing.T) {
	kube := kubefake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runLeaseHeartbeat(ctx, kube, testNS, "node-1", func() time.Time { return t0 })
	}()
	leases := kube.CoordinationV1().Leases(testNS)
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := leases.Get(context.Background(), ManagerLeasePrefix+"node-1", metav1.GetOptions{})
		if err == nil && leaseFresh(l, t0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease never renewed: %v %+v", err, l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	l, err := leases.Get(context.Background(), ManagerLeasePrefix+"node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if leaseFresh(l, t0) {
		t.Fatalf("lease still fresh after the manager stopped: renewTime %v", l.Spec.RenewTime)
	}
	r := decideNodeReady(kubeNode(corev1.ConditionTrue, time.Hour), l, t0)
	if r.Status != longhorn.ConditionStatusFalse || r.Reason != longhorn.NodeConditionReasonManagerPodMissing {
		t.Fatalf("node readiness after release: %+v, want False/%s", r, longhorn.NodeConditionReasonManagerPodMissing)
	}
	// Releasing a lease that does not exist is fine.
	if err := releaseLease(context.Background(), kube, testNS, "node-2"); err != nil {
		t.Fatalf("release of a missing lease: %v", err)
	}
}

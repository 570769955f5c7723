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

// A node whose manager alone is missing hands its objects over
// (isNodeDown) but its instances still run (isNodeDownOrDeleted is false):
// its replicas are not failed and its instance manager is not unknown.
// A gone or NotReady Kubernetes node is both.
func TestNodeDownVersusManagerMissing(t *testing.T) {
	node := func(name, reason string) *longhorn.Node {
		st := longhorn.ConditionStatusFalse
		if reason == "" {
			st = longhorn.ConditionStatusTrue
		}
		return &longhorn.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
			Status: longhorn.NodeStatus{Conditions: []longhorn.Condition{{Type: longhorn.NodeConditionTypeReady, Status: st, Reason: reason}}}}
	}
	f := newFixture(t,
		node("ready", ""),
		node("no-manager", longhorn.NodeConditionReasonManagerPodMissing),
		node("not-ready", longhorn.NodeConditionReasonKubernetesNodeNotReady),
		node("gone", longhorn.NodeConditionReasonKubernetesNodeGone),
		node("pressure", longhorn.NodeConditionReasonKubernetesNodePressure))
	cases := []struct {
		name                 string
		ownersMove, instDown bool
	}{
		{"ready", false, false},
		{"no-manager", true, false},
		{"not-ready", true, true},
		{"gone", true, true},
		{"pressure", false, false},
		{"missing-lhn", true, true},
	}
	for _, tc := range cases {
		if got := f.m.env.isNodeDown(f.ctx, tc.name); got != tc.ownersMove {
			t.Errorf("%s: isNodeDown %v, want %v", tc.name, got, tc.ownersMove)
		}
		if got := f.m.env.isNodeDownOrDeleted(f.ctx, tc.name); got != tc.instDown {
			t.Errorf("%s: isNodeDownOrDeleted %v, want %v", tc.name, got, tc.instDown)
		}
	}
}

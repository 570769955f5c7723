package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/types"
)

// A volume labelled longhorn.io/skip-reconcile=true is left alone: no
// owner, engine or replicas are set up, one SkipReconcile event says why
// (not one per sync); without the label it is reconciled again.
func TestSkipReconcileLabelLeavesVolumeAlone(t *testing.T) {
	v := newVolume("vol", 3)
	v.Labels = map[string]string{types.LonghornLabelSkipReconcile: "true"}
	f := newFixture(t, threeNodeObjects(v)...)
	for range 3 {
		f.syncVolume("vol")
	}
	if got := f.volume("vol"); got.Status.OwnerID != "" || len(f.replicas("vol")) != 0 {
		t.Fatalf("labelled volume reconciled: owner %q, %d replicas", got.Status.OwnerID, len(f.replicas("vol")))
	}
	if es, _ := f.lh.LonghornV1beta2().Engines(testNS).List(f.ctx, metav1.ListOptions{}); len(es.Items) != 0 {
		t.Fatalf("labelled volume got %d engines", len(es.Items))
	}
	events := strings.Join(f.events(), "\n")
	if n := strings.Count(events, "SkipReconcile"); n != 1 {
		t.Fatalf("%d SkipReconcile events, want 1:\n%s", n, events)
	}
	if !strings.Contains(events, types.LonghornLabelSkipReconcile) {
		t.Errorf("event does not name the label: %s", events)
	}
	got := f.volume("vol")
	delete(got.Labels, types.LonghornLabelSkipReconcile)
	f.updateVolume(got)
	waitFor(t, func() bool {
		c, err := f.ds.GetVolumeRO(f.ctx, "vol")
		return err == nil && !skipReconcileRequested(c)
	})
	for range 3 {
		f.syncVolume("vol")
	}
	if got := f.volume("vol"); got.Status.OwnerID == "" || len(f.replicas("vol")) != 3 {
		t.Fatalf("unlabelled volume not reconciled: owner %q, %d replicas", got.Status.OwnerID, len(f.replicas("vol")))
	}
}

// A labelled replica is not started by its controller.
func TestSkipReconcileLabelLeavesReplicaAlone(t *testing.T) {
	f, _ := attachedHealthy(t)
	r := f.replicas("vol")[0]
	r.Labels[types.LonghornLabelSkipReconcile] = "true"
	r.Spec.DesireState = "stopped"
	f.updateReplica(r)
	f.settle()
	before := f.replicaNamed(r.Name).Status
	if _, err := f.syncReplica(r.Name); err != nil {
		t.Fatal(err)
	}
	if after := f.replicaNamed(r.Name).Status; after.CurrentState != before.CurrentState || after.OwnerID != before.OwnerID {
		t.Fatalf("labelled replica changed: %+v -> %+v", before, after)
	}
}

package e2e

import (
	"testing"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestInstanceManagerPodDeleted: two volumes are attached on the same node
// with data: "solo" has its only replica on that node, "trio" has 3
// replicas. The node's instance-manager pod is deleted (`kubectl delete
// pod`), which ends its engine and replica processes. Both volumes fault;
// auto-salvage (on by default) clears solo's failed replica, the
// instance-manager controller brings a new pod, the attachment tickets
// re-attach both volumes, and both come back healthy with their data
// intact.
func TestInstanceManagerPodDeleted(t *testing.T) {
	e := setup(t)
	const solo, trio = "e2e-salvage-solo", "e2e-salvage-trio"
	e.createVolume(solo, 1)
	e.createVolume(trio, 3)
	rs, err := e.f.Replicas(e.ctx, solo)
	e.must(err)
	if len(rs) != 1 || rs[0].Node == "" {
		t.Fatalf("%s: want 1 scheduled replica, have %s", solo, replicaSummary(rs))
	}
	node := rs[0].Node
	epSolo, epTrio := e.attach(solo, node), e.attach(trio, node)
	e.waitHealthy(solo, 1, rebuildTimeout)
	e.waitHealthy(trio, 3, rebuildTimeout)
	dSolo := framework.DataSet{Seed: 31, Offset: 0, Size: dataSize}
	dTrio := framework.DataSet{Seed: 32, Offset: 0, Size: dataSize}
	e.writeData(epSolo, dSolo)
	e.writeData(epTrio, dTrio)

	recSolo, recTrio := e.recordVolume(solo), e.recordVolume(trio)
	pod, err := e.f.InstanceManagerPod(e.ctx, node)
	e.must(err)
	t0 := time.Now()
	deletePod(e.ctx, t, e.f.Kube, pod)
	waitPodReplaced(e.ctx, t, e.f.Kube, imSelector, pod, 2*time.Minute)
	t.Logf("instance-manager pod on %s replaced after %.1fs", node, time.Since(t0).Seconds())

	for _, v := range []struct {
		name string
		n    int
		ep   framework.Endpoint
		d    framework.DataSet
		rec  *volumeRecorder
	}{{solo, 1, epSolo, dSolo, recSolo}, {trio, 3, epTrio, dTrio, recTrio}} {
		// The engine dies with the pod, but its status can still say running
		// (and keep the old endpoint) for a moment while the old pod's
		// processes stop: wait for the fault before waiting for the recovery,
		// or the recovery check can pass on that stale status.
		if !v.rec.waitRobustness(longhorn.VolumeRobustnessFaulted, time.Minute) {
			t.Errorf("%s never faulted: %s", v.name, v.rec.history())
		}
		e.waitHealthy(v.name, v.n, rebuildTimeout)
		t.Logf("%s recovered %.1fs after the delete: %s", v.name, time.Since(t0).Seconds(), v.rec.history())
		ep, err := e.f.Endpoint(e.ctx, v.name)
		e.must(err)
		if ep.Node != node {
			t.Errorf("%s re-attached on %s, want %s", v.name, ep.Node, node)
		}
		e.verifyData(ep, v.d)
	}
	vs, err := e.f.Volume(e.ctx, solo)
	e.must(err)
	if vs.Status.LastAutoSalvagedAt == "" {
		t.Errorf("%s: status.lastAutoSalvagedAt is empty: its only replica was not salvaged", solo)
	}
	e.detach(solo)
	e.detach(trio)
}

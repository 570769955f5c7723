package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
	"github.com/longhorn-go/longhorn/types"
)

// TestDataLocalityBestEffort: a 2-replica volume with dataLocality
// best-effort has its replicas on node-1 and node-2 (node-3's scheduling
// is off while it is created) and is attached on node-3 with data. A
// replica is rebuilt on node-3, the engine's node, and then one of the
// remote replicas is removed as surplus: the volume ends with 2 healthy
// replicas, one on node-3, and its data intact.
func TestDataLocalityBestEffort(t *testing.T) {
	e := setupWithin(t, 2*time.Minute)
	const vol = "e2e-locality"
	n1, n2, n3 := e.c.NodeName(1), e.c.NodeName(2), e.c.NodeName(3)
	e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = false })
	t.Cleanup(func() { e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = true }) })
	v := framework.NewVolume(vol, volSize, 2, longhorn.VolumeFrontendNBD)
	v.Spec.DataLocality = longhorn.DataLocalityBestEffort
	e.createVolumeFrom(v)
	onNodes(e, vol, n1, n2)
	e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = true })
	ep := e.attach(vol, n3)
	data := framework.DataSet{Seed: 91, Offset: 0, Size: dataSize}
	e.writeData(ep, data)

	t0 := time.Now()
	rs := e.waitReplicas(vol, "2 healthy replicas, one on "+n3, rebuildTimeout, func(rs []framework.Replica) bool {
		return placedOn(n1, n3)(rs) || placedOn(n2, n3)(rs)
	})
	t.Logf("local replica on %s and the remote surplus removed %.1fs after the attach: %s", n3, time.Since(t0).Seconds(), replicaSummary(rs))
	e.waitHealthy(vol, 2, rebuildTimeout)
	e.verifyData(ep, data)
	e.detach(vol)
}

// TestDataLocalityStrictLocal: a 1-replica volume with dataLocality
// strict-local keeps its replica unplaced while detached (Scheduled False,
// LocalReplicaSchedulingFailure), as Longhorn places a local volume's
// replica where its engine runs. Attached on node-2, the replica is placed
// there with hard node affinity to node-2 and the engine runs there too.
// Detached and asked to attach on node-3, it stays detached with
// Scheduled False saying that its replica is on node-2, and no engine runs
// on node-3; asked for node-2 again, it attaches there with its data.
func TestDataLocalityStrictLocal(t *testing.T) {
	e := setupWithin(t, 3*time.Minute)
	const vol = "e2e-strict-local"
	n2, n3 := e.c.NodeName(2), e.c.NodeName(3)
	v := framework.NewVolume(vol, volSize, 1, longhorn.VolumeFrontendNBD)
	v.Spec.DataLocality = longhorn.DataLocalityStrictLocal
	_, err := e.f.CreateVolume(e.ctx, v)
	e.must(err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.f.DeleteVolume(ctx, vol, 90*time.Second); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	e.waitScheduled(vol, longhorn.ConditionStatusFalse, longhorn.VolumeConditionReasonLocalReplicaSchedulingFailure, "")
	rs, err := e.f.Replicas(e.ctx, vol)
	e.must(err)
	if len(rs) != 1 || rs[0].Node != "" {
		t.Fatalf("detached strict-local volume: want one unplaced replica: %s", replicaSummary(rs))
	}

	ep := e.attach(vol, n2)
	r, eng := e.replicaObjects(vol), e.engineObject(vol)
	if len(r) != 1 || r[0].Spec.NodeID != n2 || r[0].Spec.HardNodeAffinity != n2 || eng.Spec.NodeID != n2 {
		t.Fatalf("attached on %s: replicas %v, engine on %q: want the one replica on %s with hard node affinity to it",
			n2, replicaPlacement(r), eng.Spec.NodeID, n2)
	}
	e.waitHealthy(vol, 1, rebuildTimeout)
	data := framework.DataSet{Seed: 93, Offset: 0, Size: dataSize}
	e.writeData(ep, data)
	e.detach(vol)

	rec := e.recordVolume(vol)
	if _, err := e.f.Attach(e.ctx, vol, n3, "e2e", longhorn.VolumeFrontendNBD, 20*time.Second); err == nil {
		t.Fatalf("strict-local volume %s with its replica on %s attached on %s", vol, n2, n3)
	}
	e.waitScheduled(vol, longhorn.ConditionStatusFalse, longhorn.VolumeConditionReasonLocalReplicaSchedulingFailure, "is on node "+n2)
	if got, eng := e.replicaObjects(vol), e.engineObject(vol); len(got) != 1 || got[0].Spec.NodeID != n2 ||
		(eng.Spec.NodeID == n3 && eng.Spec.DesireState == longhorn.InstanceStateRunning) {
		t.Fatalf("asked to attach on %s: replicas %v, engine on %q (%s)", n3, replicaPlacement(got), eng.Spec.NodeID, eng.Spec.DesireState)
	}
	if h := rec.history(); strings.Contains(h, "attached") || strings.Contains(h, "attaching") {
		t.Fatalf("asked to attach on %s the volume went %s", n3, h)
	}
	t.Logf("asked to attach on %s: stays detached (%s)", n3, rec.history())
	e.must(e.f.Detach(e.ctx, vol, "e2e", detachTimeout))

	ep = e.attach(vol, n2)
	e.waitHealthy(vol, 1, rebuildTimeout)
	e.verifyData(ep, data)
	e.detach(vol)
}

// waitScheduled waits until the volume's Scheduled condition has status,
// reason and a message containing msg.
func (e *testEnv) waitScheduled(vol string, status longhorn.ConditionStatus, reason, msg string) {
	e.t.Helper()
	var last longhorn.Condition
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && e.ctx.Err() == nil {
		v, err := e.f.Volume(e.ctx, vol)
		if err == nil {
			last = longhorn.GetCondition(v.Status.Conditions, longhorn.VolumeConditionTypeScheduled)
			if last.Status == status && last.Reason == reason && strings.Contains(last.Message, msg) {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	e.t.Fatalf("%s: Scheduled %s/%s %q, want %s/%s containing %q", vol, last.Status, last.Reason, last.Message, status, reason, msg)
}

// replicaObjects lists the volume's Replica objects.
func (e *testEnv) replicaObjects(vol string) []longhorn.Replica {
	e.t.Helper()
	l, err := e.f.LH.LonghornV1beta2().Replicas(framework.Namespace).List(e.ctx,
		metav1.ListOptions{LabelSelector: types.LonghornLabelVolume + "=" + vol})
	e.must(err)
	return l.Items
}

// engineObject returns the volume's Engine object.
func (e *testEnv) engineObject(vol string) *longhorn.Engine {
	e.t.Helper()
	eng, err := e.f.LH.LonghornV1beta2().Engines(framework.Namespace).Get(e.ctx, vol+"-e-0", metav1.GetOptions{})
	e.must(err)
	return eng
}

// replicaPlacement renders "name@node(affinity)" for logs.
func replicaPlacement(rs []longhorn.Replica) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s@%s(affinity %q)", r.Name, r.Spec.NodeID, r.Spec.HardNodeAffinity))
	}
	return strings.Join(parts, " ")
}

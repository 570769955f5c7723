package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestNodeKubeletKill (real nodes only): a 2-replica volume is attached on
// the node without a replica and written continuously. One replica node's
// kubelet and containerd are killed with SIGKILL (its containers run on
// without them, as after a crash of the node agents): the Kubernetes node
// goes NotReady after the node monitor's grace period, Longhorn counts the
// node down and replaces its replica on the remaining node, and no write
// through the volume fails. The daemons are started again, the node comes
// back, and every block written reads back intact.
func TestNodeKubeletKill(t *testing.T) {
	e := setup(t)
	if !e.c.Real() {
		t.Skip("node agent mode: there is no kubelet or containerd to kill")
	}
	const vol = "e2e-nodedown"
	e.setSetting("replica-replenishment-wait-interval", "0")
	e.createVolume(vol, 2)
	rs, err := e.f.Replicas(e.ctx, vol)
	e.must(err)
	holders := map[string]bool{}
	for _, r := range rs {
		holders[r.Node] = true
	}
	engineNode := ""
	for i := 1; i <= e.c.Nodes; i++ {
		if !holders[e.c.NodeName(i)] {
			engineNode = e.c.NodeName(i)
		}
	}
	if len(holders) != 2 || engineNode == "" {
		t.Fatalf("want 2 replicas on 2 of 3 nodes: %s", replicaSummary(rs))
	}
	down := rs[0]
	di := e.nodeIndex(down.Node)
	ep := e.attach(vol, engineNode)
	e.waitHealthy(vol, 2, rebuildTimeout)
	data := framework.DataSet{Seed: 43, Offset: 0, Size: dataSize}
	e.writeData(ep, data)

	w := startWriter(e, ep, dataSize, 1<<20)
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	e.must(cluster.StopNodeDaemons(e.c, di, "kubelet", "containerd"))
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			e.must(cluster.StartNodeDaemons(context.WithoutCancel(e.ctx), e.c, di, t.Logf))
		}
	}
	t.Cleanup(restart)
	t.Logf("killed kubelet and containerd of %s (replica %s); engine on %s", down.Node, down.Name, engineNode)

	e.waitKubeNodeNotReady(down.Node, 3*time.Minute)
	t.Logf("%s NotReady %.1fs after the kill", down.Node, time.Since(t0).Seconds())
	healthy := e.waitReplicas(vol, "a replacement replica off "+down.Node, rebuildTimeout, func(rs []framework.Replica) bool {
		n := 0
		for _, r := range rs {
			if r.Node != down.Node && r.State == longhorn.InstanceStateRunning && r.Mode == longhorn.ReplicaModeRW {
				n++
			}
		}
		return n == 2
	})
	t.Logf("replaced %.1fs after the kill: %s", time.Since(t0).Seconds(), replicaSummary(healthy))
	_, err = e.f.WaitVolume(e.ctx, vol, rebuildTimeout, framework.RobustnessIs(longhorn.VolumeRobustnessHealthy))
	e.must(err)
	writes := w.stop()
	if w.err != nil {
		t.Errorf("a write failed while %s was down: %v", down.Node, w.err)
	}
	if after := w.doneAfter(t0); after < 3 {
		t.Errorf("only %d writes completed after the kill, want I/O to continue", after)
	}
	t.Logf("%d writes of 1 MiB, %d after the kill, longest %.1fs", len(writes), w.doneAfter(t0), w.longest.Seconds())

	restart()
	e.waitNodeBack(di)
	e.verifyData(ep, data)
	e.must(verifyBlocks(e, ep, writes))
	e.waitHealthy(vol, 2, rebuildTimeout)
	e.detach(vol)
}

// waitKubeNodeNotReady waits until the Kubernetes node's Ready condition
// is not True (Unknown once the node lifecycle controller misses the
// kubelet's heartbeats, False when the kubelet reports a problem).
func (e *testEnv) waitKubeNodeNotReady(name string, timeout time.Duration) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := e.f.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status != corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		e.t.Fatalf("node %s still Ready after %v: %v", name, timeout, err)
	}
}

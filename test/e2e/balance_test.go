package e2e

import (
	"sync"
	"testing"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestReplicaAutoBalanceNodeJoin: a 3-replica volume with
// replicaAutoBalance best-effort and node soft anti-affinity enabled is
// made while node-3 takes no replicas (allowScheduling false, as Longhorn's
// auto-balance tests stand in for a node that has not joined yet), so two
// of its replicas share a node. Attached on node-1 with data, node-3 then
// joins (allowScheduling true): a replica is rebuilt on node-3 and one of
// the doubled ones removed, ending with one healthy replica per node. Every
// replica made after the join is on node-3 (balance never puts a replica
// where one already is: node soft anti-affinity kept, Longhorn bug
// #11189), the replicas stay put for 10 s afterwards, and the data is
// intact.
func TestReplicaAutoBalanceNodeJoin(t *testing.T) {
	e := setupWithin(t, 4*time.Minute)
	const vol = "e2e-balance"
	n1, n2, n3 := e.c.NodeName(1), e.c.NodeName(2), e.c.NodeName(3)
	e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = false })
	t.Cleanup(func() { e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = true }) })
	v := framework.NewVolume(vol, volSize, 3, longhorn.VolumeFrontendNBD)
	v.Spec.ReplicaAutoBalance = longhorn.ReplicaAutoBalanceBestEffort
	v.Spec.ReplicaSoftAntiAffinity = longhorn.ReplicaSoftAntiAffinityEnabled
	v.Spec.ReplicaDiskSoftAntiAffinity = longhorn.ReplicaDiskSoftAntiAffinityEnabled
	e.createVolumeFrom(v)
	before, err := e.f.Replicas(e.ctx, vol)
	e.must(err)
	if counts := nodeCounts(before); len(before) != 3 || counts[n3] != 0 || counts[n1]+counts[n2] != 3 {
		t.Fatalf("want 3 replicas on %s and %s only: %s", n1, n2, replicaSummary(before))
	}
	ep := e.attach(vol, n1)
	_, err = e.f.WaitVolume(e.ctx, vol, rebuildTimeout, framework.All(
		framework.StateIs(longhorn.VolumeStateAttached), framework.RobustnessIs(longhorn.VolumeRobustnessHealthy)))
	e.must(err)
	data := framework.DataSet{Seed: 95, Offset: 0, Size: dataSize}
	e.writeData(ep, data)

	w := e.watchNewReplicas(vol, before)
	t0 := time.Now()
	e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = true })
	rs := e.waitReplicas(vol, "one healthy replica on each node", rebuildTimeout, placedOn(n1, n2, n3))
	t.Logf("balanced %.1fs after %s joined: %s", time.Since(t0).Seconds(), n3, replicaSummary(rs))
	time.Sleep(10 * time.Second)
	after, err := e.f.Replicas(e.ctx, vol)
	e.must(err)
	if replicaSummary(after) != replicaSummary(rs) {
		t.Errorf("replicas changed after balancing: %s -> %s", replicaSummary(rs), replicaSummary(after))
	}
	made := w.stop()
	if len(made) == 0 {
		t.Errorf("no replica was made after %s joined", n3)
	}
	for name, node := range made {
		if node != n3 {
			t.Errorf("replica %s made after the join went to %s, which already held one (want %s)", name, node, n3)
		}
	}
	t.Logf("replicas made after the join: %v", made)
	e.verifyData(ep, data)
	e.detach(vol)
}

// nodeCounts is how many of rs each node holds.
func nodeCounts(rs []framework.Replica) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		out[r.Node]++
	}
	return out
}

// newReplicaWatch polls a volume's replicas and records the node of every
// replica not in a starting set once it is placed.
type newReplicaWatch struct {
	mu   sync.Mutex
	made map[string]string
	done chan struct{}
	wg   sync.WaitGroup
}

// watchNewReplicas starts a newReplicaWatch (every 250 ms); it stops with
// the test at the latest.
func (e *testEnv) watchNewReplicas(vol string, known []framework.Replica) *newReplicaWatch {
	old := map[string]bool{}
	for _, r := range known {
		old[r.Name] = true
	}
	w := &newReplicaWatch{made: map[string]string{}, done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			if rs, err := e.f.Replicas(e.ctx, vol); err == nil {
				w.mu.Lock()
				for _, r := range rs {
					if !old[r.Name] && r.Node != "" && w.made[r.Name] == "" {
						w.made[r.Name] = r.Node
					}
				}
				w.mu.Unlock()
			}
			select {
			case <-w.done:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	e.t.Cleanup(func() { w.stop() })
	return w
}

// stop ends the polling and returns new replica name -> node.
func (w *newReplicaWatch) stop() map[string]string {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.made
}

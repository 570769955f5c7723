package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
	"github.com/longhorn-go/longhorn/types"
)

// Bounds of TestDrainPolicies: a refused drain gives up after
// drainRefusedTimeout (kubectl retries a refused eviction every 5 s); a
// drain that waits for an eviction has drainEvictTimeout.
const (
	drainRefusedTimeout = 15 * time.Second
	drainEvictTimeout   = 100 * time.Second
)

// TestDrainPolicies: `kubectl drain --pod-selector=<instance-manager pods>`
// of the node holding the only replica of a 1-replica volume, under each
// node-drain-policy, with the PodDisruptionBudget Longhorn puts on the
// instance-manager pod:
//   - block-if-contains-last-replica: refused ("disruption budget") while
//     the node holds the last replica;
//   - allow-if-replica-is-stopped: refused while the volume is attached (its
//     replica runs), drained once it is detached;
//   - block-for-eviction: the drain cordons the node, the replica is evicted
//     (rebuilt on another node, then removed) and only then the drain ends;
//   - block-for-eviction-if-contains-last-replica: with a second, 2-replica
//     volume also on the node, only the last replica is evicted before the
//     drain ends; the other volume's replica there is not (drainEvictsLastReplicaOnly);
//   - always-allow: refused while the volume's engine runs on the node (the
//     PDB stays under every policy until the node's volumes are detached,
//     as Longhorn's); with the engine on another node, drained although the
//     node holds the last replica: the volume faults and comes back by
//     auto-salvage once the instance-manager pod runs again.
//
// After every drain the node is uncordoned and its instance-manager pod
// waited for Running; the data reads back intact after each case.
func TestDrainPolicies(t *testing.T) {
	e := setupWithin(t, 6*time.Minute)
	const vol = "e2e-drain"
	e.setSetting("node-drain-policy", "block-if-contains-last-replica")
	e.createVolume(vol, 1)
	rs, err := e.f.Replicas(e.ctx, vol)
	e.must(err)
	if len(rs) != 1 || rs[0].Node == "" {
		t.Fatalf("want 1 scheduled replica: %s", replicaSummary(rs))
	}
	holder := rs[0].Node
	other := e.c.NodeName(e.nodeIndex(holder)%e.c.Nodes + 1)
	ep := e.attach(vol, other)
	e.waitHealthy(vol, 1, rebuildTimeout)
	data := framework.DataSet{Seed: 71, Offset: 0, Size: dataSize}
	e.writeData(ep, data)

	t.Run("block-if-contains-last-replica", func(t *testing.T) {
		e := e.in(t)
		e.waitPDB(holder, true)
		e.drainRefused(holder)
	})
	t.Run("allow-if-replica-is-stopped", func(t *testing.T) {
		e := e.in(t)
		e.must(e.f.SetSetting(e.ctx, "node-drain-policy", "allow-if-replica-is-stopped"))
		e.waitPDB(holder, true)
		e.drainRefused(holder)
		e.detach(vol)
		e.waitPDB(holder, false)
		e.drain(holder, drainRefusedTimeout)
	})
	t.Run("block-for-eviction", func(t *testing.T) {
		e := e.in(t)
		e.must(e.f.SetSetting(e.ctx, "node-drain-policy", "block-for-eviction"))
		ep := e.attach(vol, other)
		e.waitHealthy(vol, 1, rebuildTimeout)
		e.waitPDB(holder, true)
		t0 := time.Now()
		e.drain(holder, drainEvictTimeout)
		rs := e.waitReplicas(vol, "its replica off "+holder, time.Minute, func(rs []framework.Replica) bool {
			return len(rs) == 1 && rs[0].Node != holder && framework.HealthyReplicas(rs) == 1
		})
		t.Logf("drain of %s ended %.1fs after it began, the replica evicted: %s", holder, time.Since(t0).Seconds(), replicaSummary(rs))
		e.verifyData(ep, data)
		e.detach(vol)
	})
	t.Run("block-for-eviction-if-contains-last-replica", func(t *testing.T) {
		e.in(t).drainEvictsLastReplicaOnly(vol, data)
	})
	t.Run("always-allow", func(t *testing.T) {
		e := e.in(t)
		e.must(e.f.SetSetting(e.ctx, "node-drain-policy", "always-allow"))
		rs, err := e.f.Replicas(e.ctx, vol)
		e.must(err)
		node := rs[0].Node
		// The volume's engine runs on the node: its PDB stays, as
		// Longhorn's does until every volume is detached from the node.
		e.attach(vol, node)
		e.waitHealthy(vol, 1, rebuildTimeout)
		e.waitPDB(node, true)
		e.drainRefused(node)
		e.detach(vol)
		ep := e.attach(vol, e.c.NodeName(e.nodeIndex(node)%e.c.Nodes+1))
		e.waitHealthy(vol, 1, rebuildTimeout)
		e.waitPDB(node, false)
		rec := e.recordVolume(vol)
		t0 := time.Now()
		e.drain(node, drainRefusedTimeout)
		if !rec.waitRobustness(longhorn.VolumeRobustnessFaulted, time.Minute) {
			t.Errorf("%s never faulted after the instance manager of its only replica was drained: %s", vol, rec.history())
		}
		e.waitHealthy(vol, 1, rebuildTimeout)
		t.Logf("%s back %.1fs after the drain of %s: %s", vol, time.Since(t0).Seconds(), node, rec.history())
		ep, err = e.f.Endpoint(e.ctx, vol)
		e.must(err)
		e.verifyData(ep, data)
		v, err := e.f.Volume(e.ctx, vol)
		e.must(err)
		if v.Status.LastAutoSalvagedAt == "" {
			t.Errorf("%s: status.lastAutoSalvagedAt is empty after losing its only replica", vol)
		}
		e.detach(vol)
	})
}

// in is e for subtest t (its failures and cleanups are t's).
func (e *testEnv) in(t *testing.T) *testEnv {
	c := *e
	c.t = t
	return &c
}

// drainArgs is `kubectl drain` of node's instance-manager pods, giving up
// after timeout.
func drainArgs(node string, timeout time.Duration) []string {
	return []string{"drain", node, "--pod-selector=" + imSelector, "--ignore-daemonsets",
		"--delete-emptydir-data", "--timeout=" + timeout.String()}
}

// drainRefused runs `kubectl drain` of node's instance-manager pods and
// fails unless it is refused on a disruption budget; it then uncordons the
// node and waits for its instance-manager pod.
func (e *testEnv) drainRefused(node string) {
	e.t.Helper()
	defer e.uncordon(node)
	out, err := e.f.Kubectl(e.ctx, drainArgs(node, drainRefusedTimeout)...)
	if err == nil {
		e.t.Fatalf("kubectl drain %s succeeded, want it refused by the instance manager's PodDisruptionBudget:\n%s", node, out)
	}
	if !strings.Contains(string(out), "disruption budget") {
		e.t.Fatalf("kubectl drain %s failed, but not on a disruption budget: %v", node, err)
	}
	e.t.Logf("kubectl drain %s refused on the disruption budget after %v", node, drainRefusedTimeout)
}

// drain runs `kubectl drain` of node's instance-manager pods and fails
// unless it completes within timeout; it then uncordons the node and waits
// for its instance-manager pod.
func (e *testEnv) drain(node string, timeout time.Duration) {
	e.t.Helper()
	defer e.uncordon(node)
	t0 := time.Now()
	if _, err := e.f.Kubectl(e.ctx, drainArgs(node, timeout)...); err != nil {
		e.t.Fatalf("kubectl drain %s: %v", node, err)
	}
	e.t.Logf("kubectl drain %s done in %.1fs", node, time.Since(t0).Seconds())
}

// uncordon makes node schedulable again and waits until its
// instance-manager pod and InstanceManager run (a drain evicted the pod;
// the instance manager controller makes a new one).
func (e *testEnv) uncordon(node string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 2*time.Minute)
	defer cancel()
	if _, err := e.f.Kubectl(ctx, "uncordon", node); err != nil {
		e.t.Errorf("uncordon: %v", err)
		return
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ok, saw := e.nodeUsable(node)
		last = saw
		return ok, nil
	})
	if err != nil {
		e.t.Errorf("%s not usable after uncordon: %s", node, last)
	}
}

// waitPDB waits until the PodDisruptionBudget of node's instance manager
// exists (want) or is gone (!want).
func (e *testEnv) waitPDB(node string, want bool) {
	e.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(e.ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		im, err := e.instanceManagerName(ctx, node)
		if err != nil {
			last = err
			return false, nil
		}
		_, err = e.f.Kube.PolicyV1().PodDisruptionBudgets(framework.Namespace).Get(ctx, im, metav1.GetOptions{})
		switch {
		case err == nil:
			return want, nil
		case apierrors.IsNotFound(err):
			return !want, nil
		}
		last = err
		return false, nil
	})
	if err != nil {
		e.t.Fatalf("PodDisruptionBudget of %s's instance manager: want present=%v (%v, %v)", node, want, err, last)
	}
}

// instanceManagerName returns the name of node's InstanceManager.
func (e *testEnv) instanceManagerName(ctx context.Context, node string) (string, error) {
	ims, err := e.f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, im := range ims.Items {
		if im.Spec.NodeID == node {
			return im.Name, nil
		}
	}
	return "", errors.New("no instance manager on " + node)
}

// drainEvictsLastReplicaOnly is the block-for-eviction-if-contains-last-
// replica case: the node X holding vol's only replica also holds one of the
// two replicas of a second volume (made while the third node takes no
// replicas); both are attached on another node Y. `kubectl drain X` ends
// once vol's replica is rebuilt off X; the second volume's replica on X is
// never marked for eviction and no replica of it is made elsewhere (it is
// not a last replica), and once X is back it is healthy again on X and Y.
// Both data sets read back intact.
func (e *testEnv) drainEvictsLastReplicaOnly(vol string, data framework.DataSet) {
	t := e.t
	const vol2 = "e2e-drain-2"
	e.must(e.f.SetSetting(e.ctx, "node-drain-policy", "block-for-eviction-if-contains-last-replica"))
	rs, err := e.f.Replicas(e.ctx, vol)
	e.must(err)
	x := rs[0].Node
	y := e.c.NodeName(e.nodeIndex(x)%e.c.Nodes + 1)
	z := e.c.NodeName(e.nodeIndex(y)%e.c.Nodes + 1)
	e.updateNode(z, func(n *longhorn.Node) { n.Spec.AllowScheduling = false })
	t.Cleanup(func() { e.updateNode(z, func(n *longhorn.Node) { n.Spec.AllowScheduling = true }) })
	e.createVolume(vol2, 2)
	e.updateNode(z, func(n *longhorn.Node) { n.Spec.AllowScheduling = true })
	onNodes(e, vol2, x, y)
	ep := e.attach(vol, y)
	ep2 := e.attach(vol2, y)
	e.waitHealthy(vol, 1, rebuildTimeout)
	before := e.waitHealthy(vol2, 2, rebuildTimeout)
	data2 := framework.DataSet{Seed: 73, Offset: 0, Size: dataSize}
	e.writeData(ep2, data2)
	e.waitPDB(x, true)

	flagged := e.watchEvictionFlags(vol2)
	made := e.watchNewReplicas(vol2, before)
	t0 := time.Now()
	e.drain(x, drainEvictTimeout)
	rs = e.waitReplicas(vol, "its replica off "+x, time.Minute, func(rs []framework.Replica) bool {
		return len(rs) == 1 && rs[0].Node != x && framework.HealthyReplicas(rs) == 1
	})
	t.Logf("drain of %s ended %.1fs after it began, %s's last replica evicted: %s", x, time.Since(t0).Seconds(), vol, replicaSummary(rs))
	rs2 := e.waitReplicas(vol2, "healthy again on "+x+" and "+y, rebuildTimeout, placedOn(x, y))
	if got := flagged.stop(); len(got) > 0 {
		t.Errorf("%s's replicas marked for eviction though not last replicas: %v", vol2, got)
	}
	if got := made.stop(); len(got) > 0 {
		t.Errorf("replicas made for %s during the drain: %v", vol2, got)
	}
	t.Logf("%s kept its replica on %s: %s", vol2, x, replicaSummary(rs2))
	e.verifyData(ep, data)
	e.verifyData(ep2, data2)
	e.detach(vol2)
	e.detach(vol)
}

// evictionFlags records the replicas of a volume seen with
// spec.evictionRequested (from a watch).
type evictionFlags struct {
	mu   sync.Mutex
	seen map[string]string
	stop func() map[string]string
}

// watchEvictionFlags starts an evictionFlags; its stop ends the watch and
// returns replica name -> node of those flagged.
func (e *testEnv) watchEvictionFlags(vol string) *evictionFlags {
	e.t.Helper()
	w, err := e.f.LH.LonghornV1beta2().Replicas(framework.Namespace).Watch(e.ctx, metav1.ListOptions{
		LabelSelector: types.LonghornLabelVolume + "=" + vol})
	e.must(err)
	f := &evictionFlags{seen: map[string]string{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if r, ok := ev.Object.(*longhorn.Replica); ok && r.Spec.EvictionRequested {
				f.mu.Lock()
				f.seen[r.Name] = r.Spec.NodeID
				f.mu.Unlock()
			}
		}
	}()
	f.stop = func() map[string]string {
		w.Stop()
		<-done
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.seen
	}
	e.t.Cleanup(func() { f.stop() })
	return f
}

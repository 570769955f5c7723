package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestNodeEvictionUnderFio: three 2-replica volumes have their replicas on
// node-1 and node-2 (node-3's scheduling is off while they are created) and
// are attached on node-3, each with a writer writing 1 MiB blocks. Then:
//   - node eviction: node-1's spec.evictionRequested is set; every replica
//     there is rebuilt elsewhere (on node-3) and then removed;
//   - disk eviction: node-1's eviction is cleared and spec.evictionRequested
//     is set on node-2's disk; its replicas move to node-1.
//
// Throughout, no write fails and no volume has fewer than 2 healthy
// replicas (nor turns degraded); at the end the data set and every block
// the writers wrote read back intact.
func TestNodeEvictionUnderFio(t *testing.T) {
	e := setupWithin(t, 4*time.Minute)
	vols := []string{"e2e-evict-a", "e2e-evict-b", "e2e-evict-c"}
	n1, n2, n3 := e.c.NodeName(1), e.c.NodeName(2), e.c.NodeName(3)
	e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = false })
	t.Cleanup(func() { e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = true }) })
	for _, v := range vols {
		e.createVolume(v, 2)
	}
	e.updateNode(n3, func(n *longhorn.Node) { n.Spec.AllowScheduling = true })

	type load struct {
		ep   framework.Endpoint
		data framework.DataSet
		w    *writer
		rec  *volumeRecorder
	}
	loads := map[string]*load{}
	for i, v := range vols {
		l := &load{ep: e.attach(v, n3), data: framework.DataSet{Seed: uint64(81 + i), Offset: 0, Size: dataSize}}
		e.waitHealthy(v, 2, rebuildTimeout)
		onNodes(e, v, n1, n2)
		e.writeData(l.ep, l.data)
		l.rec = e.recordVolume(v)
		loads[v] = l
	}
	for _, v := range vols {
		loads[v].w = startWriter(e, loads[v].ep, dataSize, 1<<20)
	}
	floor := e.watchReplicaFloor(vols)

	t0 := time.Now()
	start := t0
	e.updateNode(n1, func(n *longhorn.Node) { n.Spec.EvictionRequested = true })
	t.Cleanup(func() { e.updateNode(n1, func(n *longhorn.Node) { n.Spec.EvictionRequested = false }) })
	for _, v := range vols {
		rs := e.waitReplicas(v, "2 healthy replicas, none on "+n1, rebuildTimeout, placedOn(n2, n3))
		t.Logf("%s evicted from %s %.1fs after the request: %s", v, n1, time.Since(t0).Seconds(), replicaSummary(rs))
	}
	e.updateNode(n1, func(n *longhorn.Node) { n.Spec.EvictionRequested = false })

	t0 = time.Now()
	e.setDiskEviction(n2, true)
	t.Cleanup(func() { e.setDiskEviction(n2, false) })
	for _, v := range vols {
		rs := e.waitReplicas(v, "2 healthy replicas, none on "+n2+"'s disk", rebuildTimeout, placedOn(n1, n3))
		t.Logf("%s evicted from %s's disk %.1fs after the request: %s", v, n2, time.Since(t0).Seconds(), replicaSummary(rs))
	}
	e.setDiskEviction(n2, false)

	if low := floor.stop(); len(low) > 0 {
		t.Errorf("below 2 healthy replicas during the evictions: %v", low)
	}
	for _, v := range vols {
		l := loads[v]
		blocks := l.w.stop()
		if n := l.w.doneAfter(start); n < 3 {
			t.Errorf("%s: only %d writes completed during the evictions, want I/O to go on", v, n)
		}
		if l.w.err != nil {
			t.Errorf("%s: a write failed during the evictions: %v", v, l.w.err)
		}
		if l.rec.sawRobustness(longhorn.VolumeRobustnessDegraded) {
			t.Errorf("%s turned degraded during the evictions: %s", v, l.rec.history())
		}
		e.verifyData(l.ep, l.data)
		e.must(verifyBlocks(e, l.ep, blocks))
		t.Logf("%s: %d blocks of 1 MiB written during the evictions read back intact (longest write %.1fs)", v, len(blocks), l.w.longest.Seconds())
		e.detach(v)
	}
}

// onNodes fails unless the volume has one replica on each of nodes and
// no other.
func onNodes(e *testEnv, vol string, nodes ...string) {
	e.t.Helper()
	rs, err := e.f.Replicas(e.ctx, vol)
	e.must(err)
	on := map[string]bool{}
	for _, r := range rs {
		on[r.Node] = true
	}
	ok := len(rs) == len(nodes) && len(on) == len(nodes)
	for _, n := range nodes {
		ok = ok && on[n]
	}
	if !ok {
		e.t.Fatalf("%s: want one replica on each of %v: %s", vol, nodes, replicaSummary(rs))
	}
}

// placedOn returns a replica-list condition: exactly one replica on each
// of nodes, all healthy (running, RW).
func placedOn(nodes ...string) func([]framework.Replica) bool {
	return func(rs []framework.Replica) bool {
		if len(rs) != len(nodes) || framework.HealthyReplicas(rs) != len(nodes) {
			return false
		}
		on := map[string]bool{}
		for _, r := range rs {
			on[r.Node] = true
		}
		for _, n := range nodes {
			if !on[n] {
				return false
			}
		}
		return true
	}
}

// updateNode applies mutate to the Longhorn node (retrying on conflict).
func (e *testEnv) updateNode(name string, mutate func(*longhorn.Node)) {
	e.t.Helper()
	nodes := e.f.LH.LonghornV1beta2().Nodes(framework.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(n)
		_, err = nodes.Update(e.ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Errorf("update node %s: %v", name, err)
	}
}

// setDiskEviction sets spec.evictionRequested on every disk of the node.
func (e *testEnv) setDiskEviction(node string, on bool) {
	e.t.Helper()
	e.updateNode(node, func(n *longhorn.Node) {
		for id, d := range n.Spec.Disks {
			d.EvictionRequested = on
			n.Spec.Disks[id] = d
		}
	})
}

// replicaFloor polls volumes' replicas and records every time one had
// fewer healthy replicas than its spec.numberOfReplicas.
type replicaFloor struct {
	mu   sync.Mutex
	low  []string
	done chan struct{}
	wg   sync.WaitGroup
}

// watchReplicaFloor starts a replicaFloor over vols (every 250 ms).
func (e *testEnv) watchReplicaFloor(vols []string) *replicaFloor {
	f := &replicaFloor{done: make(chan struct{})}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			for _, v := range vols {
				vo, err := e.f.Volume(e.ctx, v)
				if err != nil {
					continue
				}
				rs, err := e.f.Replicas(e.ctx, v)
				if err == nil && framework.HealthyReplicas(rs) < vo.Spec.NumberOfReplicas {
					f.mu.Lock()
					f.low = append(f.low, fmt.Sprintf("%s %s: %s", time.Now().Format("15:04:05.0"), v, replicaSummary(rs)))
					f.mu.Unlock()
				}
			}
			select {
			case <-f.done:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	e.t.Cleanup(func() { f.stop() })
	return f
}

// stop ends the polling and returns the low points seen.
func (f *replicaFloor) stop() []string {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.low
}

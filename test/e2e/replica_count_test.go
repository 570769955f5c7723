package e2e

import (
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestNumberOfReplicasChange: a 2-replica volume attached with data gets
// numberOfReplicas 3 — a third replica is scheduled on the free node,
// rebuilt, and the volume is healthy with 3 RW replicas — then 2 again:
// one replica is removed (its Replica object deleted) and the volume stays
// healthy with 2. The data reads back intact at every step.
func TestNumberOfReplicasChange(t *testing.T) {
	e := setup(t)
	const vol = "e2e-scale"
	e.createVolume(vol, 2)
	ep := e.attach(vol, e.c.NodeName(1))
	before := e.waitHealthy(vol, 2, rebuildTimeout)
	data := framework.DataSet{Seed: 21, Offset: 0, Size: dataSize}
	e.writeData(ep, data)

	t0 := time.Now()
	e.must(e.f.SetNumberOfReplicas(e.ctx, vol, 3))
	up := e.waitHealthy(vol, 3, rebuildTimeout)
	t.Logf("2 -> 3 replicas in %.1fs", time.Since(t0).Seconds())
	old := map[string]bool{}
	for _, r := range before {
		old[r.Name] = true
	}
	added := 0
	for _, r := range up {
		if !old[r.Name] {
			added++
		}
	}
	if added != 1 {
		t.Errorf("after 2 -> 3: %d new replicas, want 1 (before %s, after %s)", added, replicaSummary(before), replicaSummary(up))
	}
	e.verifyData(ep, data)

	t0 = time.Now()
	e.must(e.f.SetNumberOfReplicas(e.ctx, vol, 2))
	down := e.waitReplicas(vol, "exactly 2 replica objects", rebuildTimeout, func(rs []framework.Replica) bool {
		return len(rs) == 2 && framework.HealthyReplicas(rs) == 2
	})
	e.waitHealthy(vol, 2, rebuildTimeout)
	t.Logf("3 -> 2 replicas in %.1fs: %s", time.Since(t0).Seconds(), replicaSummary(down))
	e.verifyData(ep, data)
	e.detach(vol)
}

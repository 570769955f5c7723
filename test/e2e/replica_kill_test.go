package e2e

import (
	"testing"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestReplicaProcessKilled: with a 3-replica volume attached on node-1 and
// data written, the real OS process of the replica on node-2 is killed with
// SIGKILL. The volume turns degraded, the replica is rebuilt (reused or
// replaced), the volume is healthy again with 3 RW replicas, and the data
// (and data written while degraded) reads back intact. Then the two other
// replicas are killed: the data reads back intact from the rebuilt replica
// alone, and the volume rebuilds to healthy again.
func TestReplicaProcessKilled(t *testing.T) {
	e := setup(t)
	const vol = "e2e-kill"
	e.createVolume(vol, 3)
	ep := e.attach(vol, e.c.NodeName(1))
	rs := e.waitHealthy(vol, 3, rebuildTimeout)
	data := framework.DataSet{Seed: 11, Offset: 0, Size: dataSize}
	e.writeData(ep, data)

	var victim framework.Replica
	for _, r := range rs {
		if r.Node == e.c.NodeName(2) {
			victim = r
		}
	}
	if victim.Name == "" {
		t.Fatalf("no replica on %s: %s", e.c.NodeName(2), replicaSummary(rs))
	}
	rec := e.recordVolume(vol)
	t0 := time.Now()
	pid, err := e.f.KillReplica(e.ctx, victim.Name)
	e.must(err)
	t.Logf("killed replica %s (pid %d on %s)", victim.Name, pid, victim.Node)

	_, err = e.f.WaitVolume(e.ctx, vol, time.Minute, framework.RobustnessIs(longhorn.VolumeRobustnessDegraded))
	if err != nil && !rec.sawRobustness(longhorn.VolumeRobustnessDegraded) {
		t.Fatalf("volume never degraded after the kill: %v\nhistory: %s", err, rec.history())
	}
	t.Logf("degraded after %.1fs", time.Since(t0).Seconds())
	// Written while degraded: the rebuild must carry it too.
	during := framework.DataSet{Seed: 12, Offset: dataSize, Size: 4 << 20}
	e.writeData(ep, during)

	rs = e.waitHealthy(vol, 3, rebuildTimeout)
	t.Logf("rebuilt and healthy %.1fs after the kill (%s); history %s", time.Since(t0).Seconds(), replicaSummary(rs), rec.history())
	e.verifyData(ep, data)
	e.verifyData(ep, during)

	// The rebuild is real: with the two other replicas killed, the rebuilt
	// one is the engine's only RW replica and serves every read.
	for _, r := range rs {
		if r.Name != victim.Name {
			_, err := e.f.KillReplica(e.ctx, r.Name)
			e.must(err)
		}
	}
	e.waitReplicas(vol, victim.Name+" the only RW replica", time.Minute, func(rs []framework.Replica) bool {
		for _, r := range rs {
			if (r.Mode == longhorn.ReplicaModeRW) != (r.Name == victim.Name) {
				return false
			}
		}
		return true
	})
	e.verifyData(ep, data)
	e.verifyData(ep, during)
	e.waitHealthy(vol, 3, rebuildTimeout)
	e.detach(vol)
}

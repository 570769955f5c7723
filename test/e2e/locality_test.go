package e2e

import (
	"testing"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
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

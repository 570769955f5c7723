package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestManagerPodDeleted: a volume is attached on node-1, so node-1's
// manager owns it (status.ownerID). node-1's longhorn-manager pod is
// deleted. Another node's manager marks Longhorn node node-1 not Ready
// (ManagerPodMissing) and takes the volume over (ownerID changes); the
// DaemonSet brings a new manager pod up on node-1, node-1 is Ready again
// and gets its volume back. The volume stays attached, never degraded or
// faulted (the data path does not depend on the manager), and its data
// intact throughout.
func TestManagerPodDeleted(t *testing.T) {
	e := setup(t)
	const vol = "e2e-owner"
	n1 := e.c.NodeName(1)
	e.createVolume(vol, 2)
	ep := e.attach(vol, n1)
	e.waitHealthy(vol, 2, rebuildTimeout)
	data := framework.DataSet{Seed: 51, Offset: 0, Size: dataSize}
	e.writeData(ep, data)
	e.waitOwner(vol, n1, time.Minute)

	rec := e.recordVolume(vol)
	nrec := e.recordNodeReady(n1)
	pod, err := nodePod(e.ctx, e.f.Kube, managerSelector, n1)
	e.must(err)
	t0 := time.Now()
	deletePod(e.ctx, t, e.f.Kube, pod)
	np := waitPodReplaced(e.ctx, t, e.f.Kube, managerSelector, pod, 2*time.Minute)
	t.Logf("manager pod %s replaced by %s after %.1fs", pod.Name, np.Name, time.Since(t0).Seconds())

	e.waitOwner(vol, n1, 2*time.Minute)
	if !nrec.saw(longhorn.ConditionStatusFalse, longhorn.NodeConditionReasonManagerPodMissing) {
		t.Errorf("lhn %s never turned Ready=False/%s: %s", n1, longhorn.NodeConditionReasonManagerPodMissing, nrec.history())
	}
	if owners := rec.owners(); len(owners) < 2 {
		t.Errorf("volume %s was never taken over by another manager: owners %v (history %s)", vol, owners, rec.history())
	}
	// Only the manager went away: the instance manager, engine and replicas
	// ran on, so no replica may have failed and the volume never faulted.
	for _, bad := range []longhorn.VolumeRobustness{longhorn.VolumeRobustnessFaulted, longhorn.VolumeRobustnessDegraded} {
		if rec.sawRobustness(bad) {
			t.Errorf("volume %s went %s while only its manager restarted: %s", vol, bad, rec.history())
		}
	}
	t.Logf("lhn %s: %s; volume: %s", n1, nrec.history(), rec.history())
	e.waitHealthy(vol, 2, rebuildTimeout)
	e.verifyData(ep, data)
	e.detach(vol)
}

// waitOwner waits until the volume's status.ownerID is node.
func (e *testEnv) waitOwner(vol, node string, timeout time.Duration) {
	e.t.Helper()
	_, err := e.f.WaitVolume(e.ctx, vol, timeout, func(v *longhorn.Volume) (bool, string) {
		return v.Status.OwnerID == node, fmt.Sprintf("ownerID %q, want %q", v.Status.OwnerID, node)
	})
	e.must(err)
}

// owners returns the distinct ownerIDs recorded, in order.
func (r *volumeRecorder) owners() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.seen {
		if s.OwnerID != "" && (len(out) == 0 || out[len(out)-1] != s.OwnerID) {
			out = append(out, s.OwnerID)
		}
	}
	return out
}

// nodeRecorder records the Ready condition of a Longhorn node from a watch.
type nodeRecorder struct {
	mu   sync.Mutex
	seen []longhorn.Condition
}

// recordNodeReady starts watching lhn name; it stops with the test.
func (e *testEnv) recordNodeReady(name string) *nodeRecorder {
	e.t.Helper()
	w, err := e.f.LH.LonghornV1beta2().Nodes(framework.Namespace).Watch(e.ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + name})
	e.must(err)
	rec := &nodeRecorder{}
	go func() {
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*longhorn.Node); ok {
				c := longhorn.GetCondition(n.Status.Conditions, longhorn.NodeConditionTypeReady)
				rec.mu.Lock()
				rec.seen = append(rec.seen, c)
				rec.mu.Unlock()
			}
		}
	}()
	e.t.Cleanup(w.Stop)
	return rec
}

// saw reports whether Ready had status st with reason.
func (r *nodeRecorder) saw(st longhorn.ConditionStatus, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.seen {
		if c.Status == st && c.Reason == reason {
			return true
		}
	}
	return false
}

// history renders the distinct Ready status/reason sequence.
func (r *nodeRecorder) history() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for _, c := range r.seen {
		cur := string(c.Status)
		if c.Reason != "" {
			cur += "/" + c.Reason
		}
		if len(parts) == 0 || parts[len(parts)-1] != cur {
			parts = append(parts, cur)
		}
	}
	return strings.Join(parts, " -> ")
}

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// Sizes and bounds shared by the scenarios.
const (
	// volSize is every test volume's size: small, so rebuilds are quick.
	volSize = 256 << 20
	// dataSize is the checksummed data set written at offset 0.
	dataSize = 16 << 20
	// scenarioTimeout bounds one scenario.
	scenarioTimeout = 5 * time.Minute
	// attachTimeout, detachTimeout, rebuildTimeout bound single steps.
	attachTimeout  = 90 * time.Second
	detachTimeout  = 90 * time.Second
	rebuildTimeout = 3 * time.Minute
)

// testEnv is what a scenario works with.
type testEnv struct {
	t   *testing.T
	ctx context.Context
	f   *framework.Cluster
	c   *cluster.Config
}

// setup skips without a cluster, connects and bounds the test in time.
func setup(t *testing.T) *testEnv {
	t.Helper()
	c := requireCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	t.Cleanup(cancel)
	f, err := framework.Connect(ctx, c.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	f.Log = t.Logf
	return &testEnv{t: t, ctx: ctx, f: f, c: c}
}

// must fails the test on err.
func (e *testEnv) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// createVolume creates a detached nbd volume with n replicas, waits until
// every replica is scheduled, and deletes it when the test ends.
func (e *testEnv) createVolume(name string, n int) {
	e.t.Helper()
	e.createVolumeFrom(framework.NewVolume(name, volSize, n, longhorn.VolumeFrontendNBD))
}

// createVolumeFrom is createVolume with the volume given in full.
func (e *testEnv) createVolumeFrom(v *longhorn.Volume) {
	e.t.Helper()
	name := v.Name
	_, err := e.f.CreateVolume(e.ctx, v)
	e.must(err)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.f.DeleteVolume(ctx, name, 90*time.Second); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	})
	_, err = e.f.WaitVolume(e.ctx, name, attachTimeout, framework.All(
		framework.StateIs(longhorn.VolumeStateDetached), framework.Scheduled()))
	e.must(err)
}

// attach attaches the volume on node with ticket "e2e" and returns its
// endpoint.
func (e *testEnv) attach(volume, node string) framework.Endpoint {
	e.t.Helper()
	t0 := time.Now()
	ep, err := e.f.Attach(e.ctx, volume, node, "e2e", longhorn.VolumeFrontendNBD, attachTimeout)
	e.must(err)
	e.t.Logf("%s attached on %s in %.1fs: %s", volume, node, time.Since(t0).Seconds(), ep.URI)
	return ep
}

// detach removes ticket "e2e" and waits until the volume is detached.
func (e *testEnv) detach(volume string) {
	e.t.Helper()
	e.must(e.f.Detach(e.ctx, volume, "e2e", detachTimeout))
}

// writeData writes the data set through ep and reads it back.
func (e *testEnv) writeData(ep framework.Endpoint, d framework.DataSet) {
	e.t.Helper()
	t0 := time.Now()
	e.must(e.f.WriteData(e.ctx, ep, d))
	e.must(e.f.VerifyData(e.ctx, ep, d))
	e.t.Logf("wrote and verified %d MiB at %d on %s (sha256 %.12s) in %.1fs", d.Size>>20, d.Offset, ep.Volume, d.SHA256(), time.Since(t0).Seconds())
}

// verifyData re-reads the data set through ep and compares checksums.
func (e *testEnv) verifyData(ep framework.Endpoint, d framework.DataSet) {
	e.t.Helper()
	e.must(e.f.VerifyData(e.ctx, ep, d))
	e.t.Logf("data intact on %s via %s (sha256 %.12s)", ep.Volume, ep.Node, d.SHA256())
}

// waitReplicas waits until cond holds for the volume's replica list.
func (e *testEnv) waitReplicas(volume, what string, timeout time.Duration, cond func([]framework.Replica) bool) []framework.Replica {
	e.t.Helper()
	var rs []framework.Replica
	deadline := time.Now().Add(timeout)
	for {
		var err error
		rs, err = e.f.Replicas(e.ctx, volume)
		if err == nil && cond(rs) {
			return rs
		}
		if time.Now().After(deadline) || e.ctx.Err() != nil {
			e.t.Fatalf("%s: %s not reached in %v (last: %v, err %v)\n%s", volume, what, timeout, rs, err, e.f.Dump(context.Background(), volume))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitHealthy waits until the volume is attached and healthy with n
// running RW replicas on n distinct nodes, and returns the replicas.
func (e *testEnv) waitHealthy(volume string, n int, timeout time.Duration) []framework.Replica {
	e.t.Helper()
	t0 := time.Now()
	_, err := e.f.WaitVolume(e.ctx, volume, timeout, framework.All(
		framework.StateIs(longhorn.VolumeStateAttached), framework.RobustnessIs(longhorn.VolumeRobustnessHealthy)))
	e.must(err)
	rs := e.waitReplicas(volume, fmt.Sprintf("%d healthy replicas on distinct nodes", n), timeout, func(rs []framework.Replica) bool {
		nodes := map[string]bool{}
		for _, r := range rs {
			if r.State == longhorn.InstanceStateRunning && r.Mode == longhorn.ReplicaModeRW {
				nodes[r.Node] = true
			}
		}
		return framework.HealthyReplicas(rs) == n && len(nodes) == n
	})
	e.t.Logf("%s healthy with %d replicas after %.1fs: %s", volume, n, time.Since(t0).Seconds(), replicaSummary(rs))
	return rs
}

// replicaSummary renders "name@node:mode/state" for logs.
func replicaSummary(rs []framework.Replica) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s@%s:%s/%s", r.Name, r.Node, r.Mode, r.State))
	}
	return strings.Join(parts, " ")
}

// nodeIndex returns i for node-i of the cluster.
func (e *testEnv) nodeIndex(node string) int {
	e.t.Helper()
	for i := 1; i <= e.c.Nodes; i++ {
		if e.c.NodeName(i) == node {
			return i
		}
	}
	e.t.Fatalf("node %q is not in cluster %s", node, e.c.Name)
	return 0
}

// replicaDirs lists the replica directories of volume under node i's
// /var/lib/longhorn/replicas (Longhorn names them <volume>-<random>).
func (e *testEnv) replicaDirs(i int, volume string) []string {
	e.t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.c.NodeDir(i), "longhorn", "replicas"))
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatal(err)
	}
	var out []string
	for _, en := range ents {
		if strings.HasPrefix(en.Name(), volume+"-") {
			out = append(out, en.Name())
		}
	}
	return out
}

// setSetting sets a Longhorn setting for the rest of the test and puts the
// old value back when it ends.
func (e *testEnv) setSetting(name, value string) {
	e.t.Helper()
	old, err := e.f.Setting(e.ctx, name)
	e.must(err)
	e.must(e.f.SetSetting(e.ctx, name, value))
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.f.SetSetting(ctx, name, old); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	})
}

// volumeRecorder records every status a volume goes through (from a
// watch), so that short-lived states such as degraded are not missed by
// polling.
type volumeRecorder struct {
	mu   sync.Mutex
	seen []longhorn.VolumeStatus
	stop func()
}

// recordVolume starts watching the volume; the recorder stops with the test.
func (e *testEnv) recordVolume(name string) *volumeRecorder {
	e.t.Helper()
	w, err := e.f.LH.LonghornV1beta2().Volumes(framework.Namespace).Watch(e.ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + name})
	e.must(err)
	rec := &volumeRecorder{stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			if v, ok := ev.Object.(*longhorn.Volume); ok && ev.Type != watch.Error {
				rec.mu.Lock()
				rec.seen = append(rec.seen, *v.Status.DeepCopy())
				rec.mu.Unlock()
			}
		}
	}()
	e.t.Cleanup(w.Stop)
	return rec
}

// sawRobustness reports whether any recorded status had robustness r.
func (r *volumeRecorder) sawRobustness(rb longhorn.VolumeRobustness) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.seen {
		if s.Robustness == rb {
			return true
		}
	}
	return false
}

// waitRobustness waits up to timeout until a recorded status had
// robustness rb and reports whether one did.
func (r *volumeRecorder) waitRobustness(rb longhorn.VolumeRobustness, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !r.sawRobustness(rb) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

// history renders the distinct state/robustness/owner sequence.
func (r *volumeRecorder) history() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	last := ""
	for _, s := range r.seen {
		cur := fmt.Sprintf("%s/%s@%s", s.State, s.Robustness, s.OwnerID)
		if cur != last {
			parts = append(parts, cur)
			last = cur
		}
	}
	return strings.Join(parts, " -> ")
}

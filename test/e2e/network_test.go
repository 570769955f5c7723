package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestNodeNetworkCut: a 2-replica volume on a 3-node cluster is attached on
// the node without a replica, and a writer keeps writing through the
// frontend. One replica node's link is cut (veth down): its replica fails,
// a replacement is scheduled on the remaining node (hard node anti-affinity
// allows no other) and rebuilt, the volume is healthy again, and no write
// failed during the cut. The link is restored and the node comes back
// Ready; every block written reads back intact.
func TestNodeNetworkCut(t *testing.T) {
	e := setup(t)
	const vol = "e2e-netcut"
	// Replace a failed replica at once instead of waiting 600 s for it to
	// come back (Longhorn's default).
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
	cutReplica := rs[0]
	cut := e.nodeIndex(cutReplica.Node)
	ep := e.attach(vol, engineNode)
	e.waitHealthy(vol, 2, rebuildTimeout)
	data := framework.DataSet{Seed: 41, Offset: 0, Size: dataSize}
	e.writeData(ep, data)

	w := startWriter(e, ep, dataSize, 1<<20)
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	restore := cutLink(t, e.c, cut)
	t.Logf("cut %s (replica %s); engine on %s", cutReplica.Node, cutReplica.Name, engineNode)

	healthy := e.waitReplicas(vol, "a replacement replica on "+engineNode, rebuildTimeout, func(rs []framework.Replica) bool {
		n := 0
		for _, r := range rs {
			if r.Node != cutReplica.Node && r.State == longhorn.InstanceStateRunning && r.Mode == longhorn.ReplicaModeRW {
				n++
			}
		}
		return n == 2
	})
	t.Logf("replaced %.1fs after the cut: %s", time.Since(t0).Seconds(), replicaSummary(healthy))
	_, err = e.f.WaitVolume(e.ctx, vol, rebuildTimeout, framework.RobustnessIs(longhorn.VolumeRobustnessHealthy))
	e.must(err)
	time.Sleep(2 * time.Second) // some writes against the healthy volume, still cut
	writes := w.stop()
	if w.err != nil {
		t.Errorf("a write failed during the cut: %v", w.err)
	}
	if after := w.doneAfter(t0); after < 3 {
		t.Errorf("only %d writes completed after the cut, want I/O to continue", after)
	}
	t.Logf("%d writes of 1 MiB during the test, %d after the cut, longest %.1fs", len(writes), w.doneAfter(t0), w.longest.Seconds())

	restore()
	e.waitNodeBack(cut)
	e.verifyData(ep, data)
	e.must(verifyBlocks(e, ep, writes))
	t.Logf("all %d writer blocks verified", len(writes))
	e.waitHealthy(vol, 2, rebuildTimeout)
	e.detach(vol)
}

// writer writes 1 MiB blocks with distinct byte patterns through an
// endpoint, one after another, until stopped or a write fails.
type writer struct {
	mu   sync.Mutex
	done []block
	// torn is the offset of the write cut short by stop (-1: none): its
	// block may hold the old pattern, the new one or a mix, so it is not
	// verified (after a wrap-around an older block was recorded there).
	torn    int64
	err     error
	longest time.Duration
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// block is one completed write.
type block struct {
	offset, length int64
	pattern        byte
	at             time.Time
}

// startWriter writes blocks of size bs from offset base upwards, wrapping
// at the end of the volume.
func startWriter(e *testEnv, ep framework.Endpoint, base, bs int64) *writer {
	ctx, cancel := context.WithCancel(e.ctx)
	w := &writer{cancel: cancel, torn: -1}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for i := int64(0); ctx.Err() == nil; i++ {
			off := base + (i*bs)%(volSize-base)
			pat := byte(i%250 + 1)
			wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
			t0 := time.Now()
			err := e.f.WritePattern(wctx, ep, off, bs, pat)
			wcancel()
			w.mu.Lock()
			if ctx.Err() != nil { // stopped mid-write: the block is torn
				w.torn = off
				w.mu.Unlock()
				return
			}
			if err != nil {
				w.err = fmt.Errorf("write %d at %d: %w", i, off, err)
				w.mu.Unlock()
				return
			}
			w.done = append(w.done, block{offset: off, length: bs, pattern: pat, at: time.Now()})
			w.longest = max(w.longest, time.Since(t0))
			w.mu.Unlock()
		}
	}()
	e.t.Cleanup(func() { w.stop() })
	return w
}

// stop ends the writer and returns the blocks written, later blocks last
// (a later block at the same offset overwrote an earlier one: only the
// last per offset is returned).
func (w *writer) stop() []block {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	last := map[int64]block{}
	var order []int64
	for _, b := range w.done {
		if _, ok := last[b.offset]; !ok {
			order = append(order, b.offset)
		}
		last[b.offset] = b
	}
	out := make([]block, 0, len(order))
	for _, off := range order {
		if off != w.torn {
			out = append(out, last[off])
		}
	}
	return out
}

// doneAfter counts writes completed after t.
func (w *writer) doneAfter(t time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, b := range w.done {
		if b.at.After(t) {
			n++
		}
	}
	return n
}

// verifyBlocks checks every block's pattern with qemu-io's `read -P`
// inside the engine's node, 64 blocks per qemu-io run.
func verifyBlocks(e *testEnv, ep framework.Endpoint, blocks []block) error {
	for len(blocks) > 0 {
		n := min(len(blocks), 64)
		args := []string{"qemu-io", "-f", "raw"}
		for _, b := range blocks[:n] {
			args = append(args, "-c", fmt.Sprintf("read -P 0x%02x %d %d", b.pattern, b.offset, b.length))
		}
		out, err := e.f.NodeExec(e.ctx, ep.Node, nil, append(args, ep.URI)...)
		if err != nil {
			return fmt.Errorf("%w: %w", framework.ErrMismatch, err)
		}
		// qemu-io reports a pattern mismatch on stdout and goes on.
		if bytes.Contains(out, []byte("Pattern verification failed")) {
			return fmt.Errorf("%w: %s", framework.ErrMismatch, out)
		}
		blocks = blocks[n:]
	}
	return nil
}

// waitNodeBack waits until node i's Kubernetes node and Longhorn node are
// Ready and its instance manager runs again (the next scenario needs all
// nodes).
func (e *testEnv) waitNodeBack(i int) {
	e.t.Helper()
	name := e.c.NodeName(i)
	t0 := time.Now()
	var last string
	for {
		ok, saw := e.nodeUsable(name)
		if ok {
			break
		}
		last = saw
		if time.Since(t0) > 3*time.Minute || e.ctx.Err() != nil {
			e.t.Fatalf("%s not back after the link was restored: %s", name, last)
		}
		time.Sleep(time.Second)
	}
	e.t.Logf("%s back (Ready, instance manager running, pods Ready) %.1fs after the link was restored", name, time.Since(t0).Seconds())
}

// nodeUsable reports whether the node is Ready in Kubernetes and Longhorn,
// its instance manager is running and its Longhorn pods are Ready.
func (e *testEnv) nodeUsable(name string) (bool, string) {
	kn, err := e.f.Kube.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, c := range kn.Status.Conditions {
		if c.Type == "Ready" && c.Status != "True" {
			return false, "kubernetes node " + name + " not Ready"
		}
	}
	ln, err := e.f.LH.LonghornV1beta2().Nodes(framework.Namespace).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	if c := longhorn.GetCondition(ln.Status.Conditions, longhorn.NodeConditionTypeReady); c.Status != longhorn.ConditionStatusTrue {
		return false, fmt.Sprintf("lhn %s Ready=%s (%s)", name, c.Status, c.Reason)
	}
	ims, err := e.f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	running := false
	for _, im := range ims.Items {
		running = running || im.Spec.NodeID == name && im.Status.CurrentState == longhorn.InstanceManagerStateRunning
	}
	if !running {
		return false, "no running instance manager on " + name
	}
	// The node lifecycle controller marked the node's pods Ready=False
	// while it was cut off; its kubelet must report them Ready again.
	pods, err := e.f.Kube.CoreV1().Pods(framework.Namespace).List(e.ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return false, err.Error()
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && !podReady(p) {
			return false, "pod " + p.Name + " not Ready"
		}
	}
	return true, ""
}

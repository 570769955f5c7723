package manager_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// proxyService is the gRPC service name an instance manager logs for every
// call through its engine proxy.
const proxyService = "ProxyEngineService/"

// TestInstanceManagerFallback is Longhorn's upgrade story for instance
// managers older than the engine proxy, on three managers and their
// instance managers:
//
//  1. the managers start instance managers with --no-proxy
//     (LONGHORN_INSTANCE_MANAGER_NO_PROXY): each reports proxy API version
//     0 and nothing listens on its proxy port; a volume attached there is
//     reached directly (event EngineClientDirect) and serves I/O, a
//     snapshot, an online expansion and a replica rebuild, which can only
//     have gone directly: no instance manager has a proxy, and none logs a
//     proxy call;
//  2. the managers are upgraded (restarted without the flag): the volume's
//     engine and replicas stay on the old instance managers (same pods),
//     the new managers fall back again (a new EngineClientDirect) and I/O
//     and a snapshot still work;
//  3. once the volume detaches, every old instance manager, now idle, is
//     replaced by a current one (a new pod without --no-proxy, proxy API
//     version > 0, its proxy port served);
//  4. reattached, the engine is reached through the proxy (event
//     EngineClientProxy; the instance manager logs the snapshot as a proxy
//     call) and the data written through the old instance managers reads
//     back.
func TestInstanceManagerFallback(t *testing.T) {
	c := newCluster(t, "LONGHORN_INSTANCE_MANAGER_NO_PROXY=true")
	c.waitProxyVersions(false)
	oldPods := c.imPods()
	for node, p := range oldPods {
		if !strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--no-proxy") {
			t.Fatalf("instance-manager pod of %s: args %v, want --no-proxy", node, p.Spec.Containers[0].Args)
		}
	}
	for _, n := range c.nodes {
		if c.proxyServed(n) {
			t.Fatalf("%s: something listens on the proxy port of an instance manager without proxy", n.name)
		}
	}
	const vol = "fallback-vol"
	engine := vol + "-e-0"
	c.applyVolume(t, vol)
	since := time.Now()
	c.attach(vol, "n1")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	c.waitEvent(engine, "EngineClientDirect", "n1", since)
	endpoint := c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint)
	qemuIO(t, endpoint, "write -P 0x11 0 1M")
	c.snapshot(t, vol, "fallback-snap-1")
	c.expand(t, vol, 128<<20)
	qemuIO(t, endpoint, "write -P 0x12 100M 1M", "read -P 0x12 100M 1M")
	c.rebuildOnN3(t, vol)
	qemuIO(t, endpoint, "read -P 0x11 0 1M", "read -P 0x12 100M 1M")
	for node, p := range oldPods {
		if log := c.podLog(p.Name); strings.Contains(log, proxyService) {
			t.Fatalf("instance manager of %s logged a proxy call without a proxy:\n%s", node, grepLines(log, proxyService))
		}
	}

	// The manager upgrade: the new managers start current instance managers.
	for _, n := range c.nodes {
		c.stopManager(n)
	}
	c.managerEnv = nil
	since = time.Now()
	for _, n := range c.nodes {
		c.startManager(n)
	}
	c.waitEvent(engine, "EngineClientDirect", "n1", since)
	for node, p := range c.imPods() {
		if p.UID != oldPods[node].UID {
			t.Fatalf("instance-manager pod of %s replaced while the volume runs on it", node)
		}
	}
	qemuIO(t, endpoint, "write -P 0x21 4M 1M", "read -P 0x21 4M 1M", "read -P 0x11 0 1M")
	c.snapshot(t, vol, "fallback-snap-2")
	if v := c.volume(vol); v.Status.Robustness != longhorn.VolumeRobustnessHealthy {
		t.Fatalf("after the manager upgrade: %s/%s", v.Status.State, v.Status.Robustness)
	}

	start := time.Now()
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	c.eventually("every instance manager replaced by a current one", 90*time.Second, func() (bool, string) {
		pods := c.imPods()
		var old []string
		for _, n := range c.nodes {
			p := pods[n.name]
			if p == nil || p.UID == oldPods[n.name].UID || p.Status.Phase != corev1.PodRunning ||
				strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--no-proxy") {
				old = append(old, n.name)
			}
		}
		return len(old) == 0, "not yet: " + strings.Join(old, ",")
	})
	c.waitProxyVersions(true)
	t.Logf("MEASURE detach -> three current instance managers: %v", time.Since(start).Round(time.Millisecond))
	for _, n := range c.nodes {
		if !c.proxyServed(n) {
			t.Fatalf("%s: the current instance manager serves no proxy", n.name)
		}
	}

	since = time.Now()
	c.attach(vol, "n1")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	c.waitEvent(engine, "EngineClientProxy", "n1", since)
	endpoint = c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint)
	qemuIO(t, endpoint, "read -P 0x11 0 1M", "read -P 0x21 4M 1M", "read -P 0x12 100M 1M")
	c.snapshot(t, vol, "fallback-snap-3")
	if log := c.podLog(c.imPods()["n1"].Name); !strings.Contains(log, proxyService+"VolumeSnapshot") {
		t.Fatalf("the snapshot after reattach did not go through n1's proxy:\n%s", grepLines(log, "gRPC call"))
	}
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	if out, err := c.kubectl("", "-n", ns, "delete", "volumes.longhorn.io", vol, "--wait=false"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
}

// waitProxyVersions waits until every instance manager runs and reports a
// proxy API version (proxy) or proxy API version 0 (!proxy), with an
// instance-manager API version either way.
func (c *cluster) waitProxyVersions(proxy bool) {
	c.t.Helper()
	c.eventually(fmt.Sprintf("three running instance managers, proxy=%v", proxy), 90*time.Second, func() (bool, string) {
		ims, err := c.lh.LonghornV1beta2().InstanceManagers(ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ok := 0
		var got []string
		for _, im := range ims.Items {
			s := im.Status
			got = append(got, fmt.Sprintf("%s=%s api=%d proxy=%d", im.Spec.NodeID, s.CurrentState, s.APIVersion, s.ProxyAPIVersion))
			if s.CurrentState == longhorn.InstanceManagerStateRunning && s.APIVersion > 0 && (s.ProxyAPIVersion > 0) == proxy {
				ok++
			}
		}
		return ok == 3, strings.Join(got, " ")
	})
}

// imPods returns the instance-manager pods by node.
func (c *cluster) imPods() map[string]*corev1.Pod {
	pods, err := c.kube.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{LabelSelector: "longhorn.io/component=instance-manager"})
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = p
		}
	}
	return out
}

// proxyServed reports whether something accepts connections on node n's
// instance-manager proxy port.
func (c *cluster) proxyServed(n *simNode) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(n.ip, "8501"), time.Second)
	if err == nil {
		_ = conn.Close()
	}
	return err == nil
}

// podLog is what the test kubelet's process of pod wrote.
func (c *cluster) podLog(pod string) string {
	b, err := os.ReadFile(filepath.Join(c.dir, pod+".log"))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	if len(out) > 20 {
		out = out[len(out)-20:]
	}
	return strings.Join(out, "\n")
}

// waitEvent waits for an event reason on the Engine object, recorded by
// host's manager at or after since.
func (c *cluster) waitEvent(engine, reason, host string, since time.Time) {
	c.t.Helper()
	since = since.Truncate(time.Second)
	c.eventually(fmt.Sprintf("event %s on engine %s from %s", reason, engine, host), 60*time.Second, func() (bool, string) {
		evs, err := c.kube.CoreV1().Events(ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind != "Engine" || e.InvolvedObject.Name != engine {
				continue
			}
			seen = append(seen, fmt.Sprintf("%s@%s %s", e.Reason, e.Source.Host, e.LastTimestamp.Format(time.TimeOnly)))
			if e.Reason == reason && e.Source.Host == host && !e.LastTimestamp.Time.Before(since) {
				c.t.Logf("event %s: %s", reason, e.Message)
				return true, ""
			}
		}
		return false, strings.Join(seen, "; ")
	})
}

// snapshot takes snapshot name of the attached volume vol through a
// Snapshot object and waits until it is ready.
func (c *cluster) snapshot(t *testing.T, vol, name string) {
	t.Helper()
	_, err := c.lh.LonghornV1beta2().Snapshots(ns).Create(c.ctx, &longhorn.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       longhorn.SnapshotSpec{Volume: vol, CreateSnapshot: true}}, metav1.CreateOptions{})
	c.must(err)
	c.eventually("snapshot "+name+" ready", 60*time.Second, func() (bool, string) {
		s, err := c.lh.LonghornV1beta2().Snapshots(ns).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.ReadyToUse, fmt.Sprintf("%+v", s.Status)
	})
}

// expand grows the attached volume vol to size and waits until the engine
// and every replica have it.
func (c *cluster) expand(t *testing.T, vol string, size int64) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"size":"%d"}}`, size)
	if out, err := c.kubectl("", "-n", ns, "patch", "volumes.longhorn.io", vol, "--type", "merge", "-p", patch); err != nil {
		t.Fatalf("patch size: %v\n%s", err, out)
	}
	c.eventually(fmt.Sprintf("engine and replicas at %d", size), 60*time.Second, func() (bool, string) {
		v, e := c.volume(vol), c.engineOf(vol)
		if v == nil || e == nil {
			return false, "no volume or engine"
		}
		ok := e.Status.CurrentSize == size && !e.Status.IsExpanding && !v.Status.ExpansionRequired
		for _, r := range c.replicasOf(vol) {
			ok = ok && r.Spec.VolumeSize == size
		}
		return ok, fmt.Sprintf("engine current=%d expanding=%v err=%q", e.Status.CurrentSize, e.Status.IsExpanding, e.Status.LastExpansionError)
	})
}

// rebuildOnN3 kills vol's replica process on n3 and waits until a new one
// there is rebuilt into the engine (RW) and the volume is healthy.
func (c *cluster) rebuildOnN3(t *testing.T, vol string) { c.rebuildOn(t, vol, "n3", true) }

// rebuildOn kills vol's replica process on node and waits until a new one
// (on that node when sameNode) is rebuilt into the engine (RW) and the
// volume is healthy.
func (c *cluster) rebuildOn(t *testing.T, vol, node string, sameNode bool) {
	t.Helper()
	var victim types.UID
	var dir string
	want, old := 0, map[int]bool{}
	for _, r := range c.replicasOf(vol) {
		want++
		for _, p := range c.pids("engine replica", r.Spec.DataDirectoryName) {
			old[p] = true
		}
		if r.Spec.NodeID == node {
			victim, dir = r.UID, r.Spec.DataDirectoryName
		}
	}
	ps := c.pids("engine replica", dir)
	if victim == "" || len(ps) != 1 {
		t.Fatalf("replica on %s: %q processes %v", node, victim, ps)
	}
	if err := syscall.Kill(ps[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessDegraded, 60*time.Second)
	c.eventually("replica on "+node+" rebuilt, volume healthy", 180*time.Second, func() (bool, string) {
		v, e := c.volume(vol), c.engineOf(vol)
		if v == nil || e == nil {
			return false, "no volume or engine"
		}
		rebuilt := false
		for _, r := range c.replicasOf(vol) {
			p := c.pids("engine replica", r.Spec.DataDirectoryName)
			if (r.Spec.NodeID == node || !sameNode) && len(p) == 1 && !old[p[0]] && e.Status.ReplicaModeMap[r.Name] == longhorn.ReplicaModeRW {
				rebuilt = true
			}
		}
		return v.Status.Robustness == longhorn.VolumeRobustnessHealthy && rebuilt && len(e.Status.ReplicaModeMap) == want,
			fmt.Sprintf("robustness=%s modes=%v", v.Status.Robustness, e.Status.ReplicaModeMap)
	})
}

// TestInstanceManagerCPURequest: the instance-manager pod asks for CPU as
// Longhorn computes it, and an idle pod is recreated when the inputs
// change: guaranteed-instance-manager-cpu percent of the Kubernetes node's
// allocatable CPU (12 % default of 2 CPUs on n1 = 240m; the setting at 20
// = 400m), no request on nodes whose allocatable CPU is unknown, and the
// Longhorn node's spec.instanceManagerCPURequest (300m on n2) over the
// setting.
func TestInstanceManagerCPURequest(t *testing.T) {
	c := newCluster(t)
	kn, err := c.kube.CoreV1().Nodes().Get(c.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kn.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	kn.Status.Capacity = kn.Status.Allocatable
	if _, err := c.kube.CoreV1().Nodes().UpdateStatus(c.ctx, kn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitCPURequests(map[string]int64{"n1": 240, "n2": 0, "n3": 0})
	c.eventually("guaranteed-instance-manager-cpu set to 20", 30*time.Second, func() (bool, string) {
		out, err := c.kubectl("", "-n", ns, "patch", "settings.longhorn.io", "guaranteed-instance-manager-cpu", "--type", "merge", "-p", `{"value":"20"}`)
		return err == nil, out
	})
	c.waitCPURequests(map[string]int64{"n1": 400, "n2": 0, "n3": 0})
	c.eventually("n2 instanceManagerCPURequest 300", 30*time.Second, func() (bool, string) {
		out, err := c.kubectl("", "-n", ns, "patch", "nodes.longhorn.io", "n2", "--type", "merge", "-p", `{"spec":{"instanceManagerCPURequest":300}}`)
		return err == nil, out
	})
	c.waitCPURequests(map[string]int64{"n1": 400, "n2": 300, "n3": 0})
}

// waitCPURequests waits until each node's running instance-manager pod
// requests the given millicpu (0: no CPU request).
func (c *cluster) waitCPURequests(want map[string]int64) {
	c.t.Helper()
	start := time.Now()
	c.eventually(fmt.Sprintf("instance-manager CPU requests %v", want), 90*time.Second, func() (bool, string) {
		pods := c.imPods()
		got := map[string]int64{}
		ok := true
		for node, m := range want {
			p := pods[node]
			if p == nil || p.Status.Phase != corev1.PodRunning {
				ok = false
				continue
			}
			got[node] = p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
			ok = ok && got[node] == m
		}
		return ok, fmt.Sprint(got)
	})
	c.t.Logf("MEASURE instance-manager CPU requests %v after %v", want, time.Since(start).Round(time.Millisecond))
}

package manager_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/testenv"
)

// kubectl runs kubectl against the test API server with stdin.
func (c *cluster) kubectl(stdin string, args ...string) (string, error) {
	cmd := env.KubectlCmd(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c *cluster) volume(name string) *longhorn.Volume {
	v, err := c.lh.LonghornV1beta2().Volumes(ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return v
}

func (c *cluster) replicasOf(volume string) []longhorn.Replica {
	list, err := c.lh.LonghornV1beta2().Replicas(ns).List(c.ctx, metav1.ListOptions{LabelSelector: "longhornvolume=" + volume})
	if err != nil {
		return nil
	}
	return list.Items
}

func (c *cluster) engineOf(volume string) *longhorn.Engine {
	e, err := c.lh.LonghornV1beta2().Engines(ns).Get(c.ctx, volume+"-e-0", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return e
}

// attach adds (or, with node "", removes) the test's longhorn-api ticket.
func (c *cluster) attach(volume, node string) {
	c.t.Helper()
	patch := `{"spec":{"attachmentTickets":{"longhorn-api-test":null}}}`
	if node != "" {
		patch = fmt.Sprintf(`{"spec":{"attachmentTickets":{"longhorn-api-test":{"id":"longhorn-api-test","type":"longhorn-api","nodeID":%q,"parameters":{"disableFrontend":"false"},"generation":0}}}}`, node)
	}
	c.eventually("volume attachment object", 30*time.Second, func() (bool, string) {
		out, err := c.kubectl("", "-n", ns, "patch", "volumeattachments.longhorn.io", volume, "--type", "merge", "-p", patch)
		return err == nil, out
	})
}

func (c *cluster) waitState(volume string, state longhorn.VolumeState, robustness longhorn.VolumeRobustness, timeout time.Duration) time.Duration {
	c.t.Helper()
	return c.eventually(fmt.Sprintf("volume %s %s/%s", volume, state, robustness), timeout, func() (bool, string) {
		v := c.volume(volume)
		if v == nil {
			return false, "no volume"
		}
		msg := fmt.Sprintf("state=%s robustness=%s owner=%s", v.Status.State, v.Status.Robustness, v.Status.OwnerID)
		return v.Status.State == state && (robustness == "" || v.Status.Robustness == robustness), msg
	})
}

// pids returns this test's processes whose command line contains every
// part: engines and replicas of other clusters on this machine may have the
// same volume and replica names, but not this run's node addresses.
func (c *cluster) pids(parts ...string) []int {
	base := c.nodes[0].ip[:strings.LastIndex(c.nodes[0].ip, ".")+1]
	return pids(append(parts, base)...)
}

// pids returns the processes whose command line contains every part.
func pids(parts ...string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		all := true
		for _, p := range parts {
			all = all && strings.Contains(cmd, p)
		}
		if all {
			out = append(out, pid)
		}
	}
	return out
}

func qemuIO(t *testing.T, endpoint string, cmds ...string) string {
	t.Helper()
	args := []string{"-f", "raw"}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	out, err := exec.Command("qemu-io", append(args, endpoint)...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "fail") || strings.Contains(string(out), "error") {
		t.Fatalf("qemu-io %v on %s: %v\n%s", cmds, endpoint, err, out)
	}
	return string(out)
}

func TestManagersOnThreeNodes(t *testing.T) {
	c := newCluster(t)
	t.Run("webhook", func(t *testing.T) { testWebhookRules(t, c) })
	t.Run("pre-upgrade", func(t *testing.T) { testPreUpgrade(t, c) })
	t.Run("post-upgrade", func(t *testing.T) { testPostUpgrade(t, c) })
	t.Run("upgrade path refused", func(t *testing.T) { testUpgradePathRefused(t, c) })
	t.Run("conversion webhook", func(t *testing.T) { testConversionWebhook(t, c) })
	t.Run("chart configmaps", func(t *testing.T) { testChartConfigMaps(t, c) })
	t.Run("rest api", func(t *testing.T) { testRESTClient(t, c) })
	t.Run("backup and restore", func(t *testing.T) { testBackupRestore(t, c) })
	t.Run("filesystem trim", func(t *testing.T) { testFilesystemTrim(t, c) })
	const vol = "example-volume"
	start := time.Now()
	out, err := c.kubectl("", "apply", "-f", filepath.Join(testenv.RepoRoot(), "examples", "volume.yaml"))
	if err != nil {
		t.Fatalf("kubectl apply examples/volume.yaml: %v\n%s", err, out)
	}
	c.eventually("3 replicas placed on 3 nodes", 60*time.Second, func() (bool, string) {
		nodes := map[string]bool{}
		reps := c.replicasOf(vol)
		for _, r := range reps {
			if r.Spec.NodeID != "" {
				nodes[r.Spec.NodeID] = true
			}
		}
		msg := fmt.Sprintf("%d replicas on %v", len(reps), nodes)
		if v := c.volume(vol); v != nil {
			msg += fmt.Sprintf("; Scheduled=%+v", longhorn.GetCondition(v.Status.Conditions, longhorn.VolumeConditionTypeScheduled))
		}
		return len(nodes) == 3, msg
	})
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	t.Logf("MEASURE create->detached with 3 placed replicas: %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	c.attach(vol, "n1")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	t.Logf("MEASURE attach ticket->attached healthy: %v", time.Since(start).Round(time.Millisecond))
	running := 0
	for _, r := range c.replicasOf(vol) {
		if r.Status.CurrentState == longhorn.InstanceStateRunning && len(c.pids("engine replica", r.Spec.DataDirectoryName)) == 1 {
			running++
		}
	}
	if running != 3 {
		t.Fatalf("%d replica processes running, want 3", running)
	}
	// examples/volume.yaml asks for frontend blockdev: the node gets
	// /dev/longhorn/<volume>, as Longhorn reports it (issue 23).
	endpoint := c.engineOf(vol).Status.Endpoint
	if endpoint != "/dev/longhorn/"+vol {
		t.Fatalf("engine endpoint %q, want /dev/longhorn/%s", endpoint, vol)
	}
	endpoint = c.hostEndpoint("n1", endpoint)
	qemuIO(t, endpoint, "write -P 0x5a 0 4M", "write -P 0xa5 512M 1M")
	qemuIO(t, endpoint, "read -P 0x5a 0 4M", "read -P 0xa5 512M 1M")

	t.Run("replica failure and rebuild", func(t *testing.T) { testRebuild(t, c, vol, endpoint) })
	t.Run("online expansion", func(t *testing.T) { testOnlineExpansion(t, c, vol, endpoint) })
	t.Run("orphan replica data", func(t *testing.T) { testOrphanReplicaData(t, c, vol) })
	t.Run("detach and delete", func(t *testing.T) { testDetachDelete(t, c, vol) })
	t.Run("iscsi frontend", func(t *testing.T) { testISCSIFrontend(t, c) })
	t.Run("takeover", func(t *testing.T) { testTakeover(t, c) })
	t.Run("kubernetes node down", func(t *testing.T) { testKubernetesNodeDown(t, c) })
	// Last: it removes everything.
	t.Run("uninstall", func(t *testing.T) { testUninstall(t, c) })
}

func testRebuild(t *testing.T, c *cluster, vol, endpoint string) {
	var victim longhorn.Replica
	for _, r := range c.replicasOf(vol) {
		if r.Spec.NodeID == "n3" {
			victim = r
		}
	}
	ps := c.pids("engine replica", victim.Spec.DataDirectoryName)
	if len(ps) != 1 {
		t.Fatalf("replica %s processes %v", victim.Name, ps)
	}
	start := time.Now()
	if err := syscall.Kill(ps[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessDegraded, 60*time.Second)
	degraded := time.Since(start)
	// Healthy again means: a replica process on n3 other than the killed
	// one, rebuilt into the engine as RW at its own address.
	c.eventually("rebuilt replica on n3, volume healthy", 180*time.Second, func() (bool, string) {
		v, e := c.volume(vol), c.engineOf(vol)
		if v == nil || e == nil {
			return false, "no volume or engine"
		}
		rw := 0
		for name, m := range e.Status.ReplicaModeMap {
			if m == longhorn.ReplicaModeRW && e.Status.CurrentReplicaAddressMap[name] == e.Spec.ReplicaAddressMap[name] {
				rw++
			}
		}
		onN3 := false
		for _, r := range c.replicasOf(vol) {
			p := c.pids("engine replica", r.Spec.DataDirectoryName)
			if r.Spec.NodeID == "n3" && r.Spec.FailedAt == "" && len(p) == 1 && p[0] != ps[0] &&
				e.Status.ReplicaModeMap[r.Name] == longhorn.ReplicaModeRW {
				onN3 = true
			}
		}
		return v.Status.Robustness == longhorn.VolumeRobustnessHealthy && rw == 3 && onN3,
			fmt.Sprintf("robustness=%s modes=%v current=%v", v.Status.Robustness, e.Status.ReplicaModeMap, e.Status.CurrentReplicaAddressMap)
	})
	t.Logf("MEASURE replica kill->degraded %v, ->rebuilt and healthy %v", degraded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	for _, r := range c.replicasOf(vol) {
		if r.Spec.NodeID == "n3" {
			t.Logf("replica on n3 after rebuild: %s retry=%d (victim %s)", r.Name, r.Spec.RebuildRetryCount, victim.Name)
		}
	}
	qemuIO(t, endpoint, "read -P 0x5a 0 4M", "read -P 0xa5 512M 1M")
}

func testDetachDelete(t *testing.T, c *cluster, vol string) {
	reps := c.replicasOf(vol)
	var addrs, dirs []string
	for _, r := range reps {
		addrs = append(addrs, net.JoinHostPort(r.Status.StorageIP, strconv.Itoa(r.Status.Port)))
		dirs = append(dirs, filepath.Join(r.Spec.DiskPath, "replicas", r.Spec.DataDirectoryName))
	}
	start := time.Now()
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	t.Logf("MEASURE detach: %v", time.Since(start).Round(time.Millisecond))
	c.eventually("no engine or replica process of the volume", 30*time.Second, func() (bool, string) {
		p := c.pids("engine", vol)
		return len(p) == 0, fmt.Sprint(p)
	})
	if out, err := c.kubectl("", "-n", ns, "delete", "volumes.longhorn.io", vol, "--wait=false"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	c.eventually("volume, engine and replicas gone", 60*time.Second, func() (bool, string) {
		_, err := c.lh.LonghornV1beta2().Volumes(ns).Get(c.ctx, vol, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && c.engineOf(vol) == nil && len(c.replicasOf(vol)) == 0,
			fmt.Sprintf("volume err=%v replicas=%d", err, len(c.replicasOf(vol)))
	})
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("replica directory %s left behind (%v)", d, err)
		}
	}
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("replica port %s still listening", a)
		}
	}
	if p := c.pids("engine", vol); len(p) != 0 {
		t.Errorf("processes left: %v", p)
	}
}

// applyVolume creates vol (64 MiB, 3 replicas, nbd) with kubectl apply,
// as a user does, and waits until it is detached.
func (c *cluster) applyVolume(t *testing.T, vol string) {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: longhorn.io/v1beta2
kind: Volume
metadata: {name: %s, namespace: %s}
spec: {size: 64Mi, numberOfReplicas: 3, frontend: nbd}
`, vol, ns)
	if out, err := c.kubectl(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply %s: %v\n%s", vol, err, out)
	}
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
}

func testTakeover(t *testing.T, c *cluster) {
	const vol = "takeover-vol"
	c.applyVolume(t, vol)
	c.attach(vol, "n3")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	if v := c.volume(vol); v.Status.OwnerID != "n3" {
		t.Fatalf("volume owner %s, want n3 (attached there)", v.Status.OwnerID)
	}
	start := time.Now()
	c.killManager(c.node("n3"))
	took := c.eventually("objects of n3 taken over", 60*time.Second, func() (bool, string) {
		var held []string
		if v := c.volume(vol); v == nil || v.Status.OwnerID == "n3" {
			held = append(held, "volume")
		}
		for _, r := range c.replicasOf(vol) {
			if r.Spec.NodeID == "n3" && r.Status.OwnerID == "n3" {
				held = append(held, r.Name)
			}
		}
		if e := c.engineOf(vol); e == nil || e.Status.OwnerID == "n3" {
			held = append(held, "engine")
		}
		ims, _ := c.lh.LonghornV1beta2().InstanceManagers(ns).List(c.ctx, metav1.ListOptions{})
		for _, im := range ims.Items {
			if im.Spec.NodeID == "n3" && im.Status.OwnerID == "n3" {
				held = append(held, im.Name)
			}
		}
		return len(held) == 0, strings.Join(held, ",")
	})
	t.Logf("MEASURE manager n3 killed -> its volume, engine, replicas and instance manager owned by others: %v", took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("takeover took %v, want <= 30 s", took)
	}
	n3, err := c.lh.LonghornV1beta2().Nodes(ns).Get(c.ctx, "n3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cond := longhorn.GetCondition(n3.Status.Conditions, longhorn.NodeConditionTypeReady); cond.Reason != longhorn.NodeConditionReasonManagerPodMissing {
		t.Errorf("n3 Ready condition %+v", cond)
	}
	_ = start
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
	"github.com/longhorn-go/longhorn/types"
)

// The storage network scenario's names and sizes.
const (
	storageSetting = "storage-network"
	// storageNADNamespace/storageNADName is the NetworkAttachmentDefinition
	// the scenario creates (macvlan on the nodes' eth1, host-local IPAM).
	storageNADNamespace = "kube-system"
	storageNADName      = "lh-storage"
	// storageIface is the interface Longhorn asks Multus for.
	storageIface = "lhnet1"
	// storageWrite is the known-size write whose traffic is counted.
	storageWrite = 64 << 20
	// storageTimeout bounds the scenario (two instance-manager restarts,
	// a cut and a rebuild).
	storageTimeout = 12 * time.Minute
	// imRestartTimeout bounds the instance-manager pods' restart on a
	// setting change.
	imRestartTimeout = 3 * time.Minute
)

// TestStorageNetwork follows Longhorn's storage-network story on the
// cluster's second bridge: the setting is refused with a bad format, a
// missing NetworkAttachmentDefinition and while a volume is attached; with
// the NAD created and volumes detached it is accepted and every
// instance-manager pod comes back with lhnet1. A 3-replica volume attached
// then has Engine and Replica status.storageIP inside the NAD's range (not
// status.ip), and the engine's replica addresses (spec and status) are on
// storage IPs. A write of known size crosses the storage bridge (host
// counters of the nodes' storage veths) about twice (two remote replicas)
// and the pod network hardly at all. Cutting one replica node's storage
// link degrades the volume while writes go on; restoring it rebuilds the
// replica over the storage network. Data is verified after each step.
func TestStorageNetwork(t *testing.T) {
	e := setupWithin(t, storageTimeout)
	if !e.c.StorageNetworkEnabled() {
		t.Skip("the cluster has no storage network (LONGHORN_E2E_STORAGE_SUBNET=none or agent nodes)")
	}
	const vol = "e2e-storagenet"
	nad := storageNADNamespace + "/" + storageNADName
	e.storageSettingRefused("no-namespace", "namespace")
	e.storageSettingRefused(nad, "not found")
	e.applyStorageNAD()
	e.resetStorageNetwork()

	// Data written on the pod network, refused while attached.
	e.createVolume(vol, 3)
	engineNode := e.c.NodeName(1)
	ep := e.attach(vol, engineNode)
	e.waitHealthy(vol, 3, rebuildTimeout)
	data := framework.DataSet{Seed: 58, Offset: 0, Size: dataSize}
	e.writeData(ep, data)
	e.storageSettingRefused(nad, vol)
	e.detach(vol)

	e.setStorageNetwork(nad)
	ep = e.attach(vol, engineNode)
	rs := e.waitHealthy(vol, 3, rebuildTimeout)
	e.verifyData(ep, data)
	e.checkStorageAddresses(vol)

	big := framework.DataSet{Seed: 59, Offset: dataSize, Size: storageWrite}
	before := e.linkCounters()
	e.writeData(ep, big)
	d := e.linkCounters().minus(before)
	e.t.Logf("write of %d MiB: storage bridge %s, pod network %s", storageWrite>>20, d.storage, d.pod)
	e.checkTraffic("replica I/O", d.storage.rx(), d.pod.rx(), 2*storageWrite)

	cutNode := ""
	for _, r := range rs {
		if r.Node != engineNode {
			cutNode = r.Node
		}
	}
	e.storageCutAndRebuild(vol, ep, e.nodeIndex(cutNode))
	e.verifyData(ep, data)
	e.verifyData(ep, big)
	e.detach(vol)
}

// setupWithin is setup with the scenario bounded by timeout.
func setupWithin(t *testing.T, timeout time.Duration) *testEnv {
	t.Helper()
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	e.ctx = ctx
	return e
}

// storageCutAndRebuild cuts node i's storage link while a writer writes:
// the replica there fails and the volume is degraded with no failed write.
// The link is restored: the replica is rebuilt over the storage network
// (node i's storage veth carries at least the data written so far, the pod
// network a small part of it) and every writer block reads back.
func (e *testEnv) storageCutAndRebuild(vol string, ep framework.Endpoint, i int) {
	e.t.Helper()
	node := e.c.NodeName(i)
	rec := e.recordVolume(vol)
	w := startWriter(e, ep, dataSize+storageWrite, 1<<20)
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	e.must(cluster.SetStorageLinkUp(e.c, i, false))
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := cluster.SetStorageLinkUp(e.c, i, true); err != nil {
				e.t.Errorf("restore storage link of %s: %v", node, err)
			}
		}
	}
	e.t.Cleanup(restore)
	e.t.Logf("cut the storage link of %s (%s)", node, e.c.StorageVeth(i))
	e.waitReplicas(vol, "the replica on "+node+" out of the engine", rebuildTimeout, func(rs []framework.Replica) bool {
		for _, r := range rs {
			if r.Node == node && r.Mode == longhorn.ReplicaModeRW {
				return false
			}
		}
		return true
	})
	_, err := e.f.WaitVolume(e.ctx, vol, rebuildTimeout, framework.RobustnessIs(longhorn.VolumeRobustnessDegraded))
	e.must(err)
	e.t.Logf("degraded %.1fs after the cut (%s)", time.Since(t0).Seconds(), rec.history())
	time.Sleep(3 * time.Second) // writes against the degraded volume
	writes := w.stop()
	if w.err != nil {
		e.t.Errorf("a write failed during the storage cut: %v", w.err)
	}
	if after := w.doneAfter(t0); after < 3 {
		e.t.Errorf("only %d writes completed after the cut, want I/O to continue", after)
	}
	before := e.linkCounters()
	t1 := time.Now()
	restore()
	e.waitHealthy(vol, 3, rebuildTimeout)
	d := e.linkCounters().minus(before)
	e.t.Logf("rebuilt %.1fs after the restore: %s's storage link %s, its node link %s; storage bridge %s, pod network %s",
		time.Since(t1).Seconds(), node, d.storageOf[i], d.podOf[i], d.storage, d.pod)
	if !rec.sawRobustness(longhorn.VolumeRobustnessDegraded) {
		e.t.Errorf("the volume was never degraded: %s", rec.history())
	}
	// The rebuilt replica receives at least the known-size write, on the
	// node's storage link and not its node link.
	e.checkTraffic("rebuild", d.storageOf[i].rx()+d.storageOf[i].tx(), d.podOf[i].rx()+d.podOf[i].tx(), storageWrite)
	e.must(verifyBlocks(e, ep, writes))
	e.t.Logf("all %d writer blocks verified after the rebuild", len(writes))
}

// checkTraffic asserts that the storage network carried at least min bytes
// and at least 20 times what the pod network carried meanwhile.
func (e *testEnv) checkTraffic(what string, storage, pod, min uint64) {
	e.t.Helper()
	ratio := float64(storage) / float64(max(pod, 1))
	e.t.Logf("%s: %d bytes on the storage network, %d on the pod network (ratio %.0f)", what, storage, pod, ratio)
	if storage < min {
		e.t.Errorf("%s: %d bytes crossed the storage network, want at least %d", what, storage, min)
	}
	if ratio < 20 {
		e.t.Errorf("%s: storage/pod network bytes %.1f, want >= 20 (the data moved on the pod network)", what, ratio)
	}
}

// storageSettingRefused asserts that setting storage-network to value is
// refused with a message containing want.
func (e *testEnv) storageSettingRefused(value, want string) {
	e.t.Helper()
	err := e.f.SetSetting(e.ctx, storageSetting, value)
	if err == nil {
		e.t.Fatalf("%s=%q accepted, want a refusal mentioning %q", storageSetting, value, want)
	}
	if !strings.Contains(err.Error(), want) {
		e.t.Fatalf("%s=%q refused with %v, want a message mentioning %q", storageSetting, value, err, want)
	}
	e.t.Logf("%s=%q refused: %v", storageSetting, value, err)
}

// applyStorageNAD creates the NAD (the cluster's StorageNAD: macvlan on
// eth1, host-local) and deletes it when the test ends.
func (e *testEnv) applyStorageNAD() {
	e.t.Helper()
	p := filepath.Join(e.t.TempDir(), "nad.yaml")
	e.must(os.WriteFile(p, []byte(e.c.StorageNAD(storageNADNamespace, storageNADName)), 0o644))
	_, err := e.f.Kubectl(e.ctx, "apply", "-f", p)
	e.must(err)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := e.f.Kubectl(ctx, "delete", "--ignore-not-found", "-f", p); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	})
}

// resetStorageNetwork sets storage-network back to empty when the test
// ends (after its volume is gone: the cleanup is registered before the
// volume's) and waits until the instance-manager pods are back on the pod
// network only.
func (e *testEnv) resetStorageNetwork() {
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), imRestartTimeout+30*time.Second)
		defer cancel()
		if v, err := e.f.Setting(ctx, storageSetting); err != nil || v == "" {
			return
		}
		cur := e.imPodUIDs()
		if err := e.waitNoneAttached(ctx); err != nil {
			e.t.Errorf("cleanup: %v", err)
			return
		}
		if err := e.f.SetSetting(ctx, storageSetting, ""); err != nil {
			e.t.Errorf("cleanup: %v", err)
			return
		}
		t0 := time.Now()
		if _, err := e.waitIMPods(ctx, cur, false); err != nil {
			e.t.Errorf("cleanup: %v", err)
			return
		}
		e.t.Logf("%s reset: instance-manager pods back on the pod network in %.1fs", storageSetting, time.Since(t0).Seconds())
	})
}

// setStorageNetwork sets storage-network to nad and waits until every
// node's instance-manager pod was recreated on it.
func (e *testEnv) setStorageNetwork(nad string) {
	e.t.Helper()
	old := e.imPodUIDs()
	e.must(e.waitNoneAttached(e.ctx))
	t0 := time.Now()
	e.must(e.f.SetSetting(e.ctx, storageSetting, nad))
	ctx, cancel := context.WithTimeout(e.ctx, imRestartTimeout)
	defer cancel()
	ips, err := e.waitIMPods(ctx, old, true)
	e.must(err)
	e.t.Logf("%s=%s: instance-manager pods recreated in %.1fs, %s addresses %v", storageSetting, nad, time.Since(t0).Seconds(), storageIface, ips)
	for node, ip := range ips {
		if !e.inStorageRange(ip) {
			e.t.Errorf("instance-manager pod of %s: %s address %s outside the NAD's range", node, storageIface, ip)
		}
	}
}

// waitNoneAttached waits (up to a minute) until no Longhorn volume is
// attached: the setting is refused while any is, and a volume of an
// earlier scenario may still be on its way to detached (a PVC's pod gone,
// its VolumeAttachment not yet). It names the volumes still attached.
func (e *testEnv) waitNoneAttached(ctx context.Context) error {
	var attached []string
	t0 := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		vs, err := e.f.LH.LonghornV1beta2().Volumes(lhNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		attached = attached[:0]
		for _, v := range vs.Items {
			if v.Status.State != "detached" {
				attached = append(attached, v.Name+":"+string(v.Status.State))
			}
		}
		return len(attached) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("volumes not detached after %.0fs: %v", time.Since(t0).Seconds(), attached)
	}
	if d := time.Since(t0); d > time.Second {
		e.t.Logf("waited %.1fs for the other volumes to detach", d.Seconds())
	}
	return nil
}

// imPodUIDs maps each node to its instance-manager pod's UID ("" when it
// has none running).
func (e *testEnv) imPodUIDs() map[string]string {
	out := map[string]string{}
	for i := 1; i <= e.c.Nodes; i++ {
		if p, err := e.f.InstanceManagerPod(e.ctx, e.c.NodeName(i)); err == nil {
			out[p.Spec.NodeName] = string(p.UID)
		}
	}
	return out
}

// waitIMPods waits until every node runs a new instance-manager pod (UID
// not in old), Ready, with (storage) or without the storage network, and
// its instance manager is running. It returns each node's lhnet1 address.
func (e *testEnv) waitIMPods(ctx context.Context, old map[string]string, storage bool) (map[string]string, error) {
	ips := map[string]string{}
	last := ""
	for {
		ok := true
		for i := 1; i <= e.c.Nodes && ok; i++ {
			node := e.c.NodeName(i)
			p, err := e.f.InstanceManagerPod(ctx, node)
			switch {
			case err != nil:
				ok, last = false, err.Error()
			case string(p.UID) == old[node] || !podReady(p):
				ok, last = false, "instance-manager pod "+p.Name+" not recreated or not Ready"
			default:
				ip := podStorageIP(p)
				if storage != (ip != "") {
					ok, last = false, fmt.Sprintf("pod %s: %s address %q", p.Name, storageIface, ip)
				}
				ips[node] = ip
			}
			if ok {
				if running, saw := e.imRunning(ctx, node, p.Status.PodIP); !running {
					ok, last = false, saw
				}
			}
		}
		if ok {
			return ips, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("instance-manager pods not recreated (storage network %v): %s (%s): %w", storage, last, e.imInstances(), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// imRunning reports whether node's instance manager is running on the pod
// with address podIP.
func (e *testEnv) imRunning(ctx context.Context, node, podIP string) (bool, string) {
	ims, err := e.f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, im := range ims.Items {
		if im.Spec.NodeID == node && im.Status.CurrentState == longhorn.InstanceManagerStateRunning && im.Status.IP == podIP {
			return true, ""
		}
	}
	return false, "no instance manager running on " + node + " at " + podIP
}

// imInstances renders every instance manager's instances ("im@node:
// names"): the setting controller restarts a pod only once its instance
// manager runs none.
func (e *testEnv) imInstances() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ims, err := e.f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, im := range ims.Items {
		var names []string
		for n := range im.Status.InstanceEngines {
			names = append(names, n)
		}
		for n := range im.Status.InstanceReplicas {
			names = append(names, n)
		}
		parts = append(parts, fmt.Sprintf("%s@%s %s: %v", im.Name, im.Spec.NodeID, im.Status.CurrentState, names))
	}
	return "instances: " + strings.Join(parts, "; ")
}

// podStorageIP is the pod's lhnet1 IPv4 address from its
// k8s.v1.cni.cncf.io/network-status annotation ("" without).
func podStorageIP(p *corev1.Pod) string {
	var st []struct {
		Interface string   `json:"interface"`
		IPs       []string `json:"ips"`
	}
	if json.Unmarshal([]byte(p.Annotations["k8s.v1.cni.cncf.io/network-status"]), &st) != nil {
		return ""
	}
	for _, s := range st {
		if s.Interface == storageIface && len(s.IPs) > 0 {
			return s.IPs[0]
		}
	}
	return ""
}

// inStorageRange reports whether ip is in the NAD's range (.10-.200 of the
// storage subnet, cluster.Config.StorageNAD).
func (e *testEnv) inStorageRange(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil || !e.c.StorageSubnet.Contains(a) {
		return false
	}
	last := a.As4()[3]
	return last >= 10 && last <= 200
}

// checkStorageAddresses asserts that the volume's engine and replicas have
// status.storageIP in the NAD's range and different from status.ip, and
// that the engine's replicaAddressMap (spec) and currentReplicaAddressMap
// (status) hold each replica's storageIP:port.
func (e *testEnv) checkStorageAddresses(vol string) {
	e.t.Helper()
	sel := metav1.ListOptions{LabelSelector: types.LonghornLabelVolume + "=" + vol}
	rl, err := e.f.LH.LonghornV1beta2().Replicas(framework.Namespace).List(e.ctx, sel)
	e.must(err)
	el, err := e.f.LH.LonghornV1beta2().Engines(framework.Namespace).List(e.ctx, sel)
	e.must(err)
	if len(el.Items) != 1 || len(rl.Items) != 3 {
		e.t.Fatalf("want 1 engine and 3 replicas, got %d and %d", len(el.Items), len(rl.Items))
	}
	want := map[string]string{}
	for _, r := range rl.Items {
		e.checkInstanceIPs("replica "+r.Name, r.Status.InstanceStatus)
		want[r.Name] = net.JoinHostPort(r.Status.StorageIP, strconv.Itoa(r.Status.Port))
	}
	eng := el.Items[0]
	e.checkInstanceIPs("engine "+eng.Name, eng.Status.InstanceStatus)
	for what, m := range map[string]map[string]string{"spec.replicaAddressMap": eng.Spec.ReplicaAddressMap,
		"status.currentReplicaAddressMap": eng.Status.CurrentReplicaAddressMap} {
		if fmt.Sprint(m) != fmt.Sprint(want) {
			e.t.Errorf("engine %s %s = %v, want the replicas' storage addresses %v", eng.Name, what, m, want)
		}
	}
	e.t.Logf("engine %s storageIP %s (ip %s); replica addresses %v", eng.Name, eng.Status.StorageIP, eng.Status.IP, want)
}

// checkInstanceIPs asserts one instance's storageIP is in the NAD's range
// and is not its pod IP.
func (e *testEnv) checkInstanceIPs(what string, s longhorn.InstanceStatus) {
	e.t.Helper()
	if !e.inStorageRange(s.StorageIP) || s.StorageIP == s.IP {
		e.t.Errorf("%s: storageIP %q (ip %q), want an address of the NAD's range %s .10-.200, not the pod IP", what, s.StorageIP, s.IP, e.c.StorageSubnet)
	}
}

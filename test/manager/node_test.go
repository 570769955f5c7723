package manager_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// testOnlineExpansion grows the attached volume with `kubectl patch` (a
// quantity, as users write it) and checks that the engine, the replicas and
// the NBD endpoint see the new size, and old and new ranges hold data.
func testOnlineExpansion(t *testing.T, c *cluster, vol, endpoint string) {
	start := time.Now()
	out, err := c.kubectl("", "-n", ns, "patch", "volumes.longhorn.io", vol, "--type", "merge", "-p", `{"spec":{"size":"2Gi"}}`)
	if err != nil {
		t.Fatalf("patch size: %v\n%s", err, out)
	}
	c.eventually("engine and replicas at 2 GiB", 60*time.Second, func() (bool, string) {
		v, e := c.volume(vol), c.engineOf(vol)
		if v == nil || e == nil {
			return false, "no volume or engine"
		}
		sizes := []string{}
		ok := e.Status.CurrentSize == 2<<30 && !e.Status.IsExpanding && !v.Status.ExpansionRequired
		for _, r := range c.replicasOf(vol) {
			sizes = append(sizes, fmt.Sprint(r.Spec.VolumeSize))
			ok = ok && r.Spec.VolumeSize == 2<<30
		}
		return ok, fmt.Sprintf("engine current=%d expanding=%v err=%q required=%v replicas=%s", e.Status.CurrentSize,
			e.Status.IsExpanding, e.Status.LastExpansionError, v.Status.ExpansionRequired, strings.Join(sizes, ","))
	})
	t.Logf("MEASURE online expansion 1 GiB -> 2 GiB: %v", time.Since(start).Round(time.Millisecond))
	qemuIO(t, endpoint, "write -P 0x3c 1536M 1M", "read -P 0x3c 1536M 1M", "read -P 0x5a 0 4M")
	if v := c.volume(vol); v.Status.State != longhorn.VolumeStateAttached || v.Status.Robustness != longhorn.VolumeRobustnessHealthy {
		t.Fatalf("after expansion: %s/%s", v.Status.State, v.Status.Robustness)
	}
}

// testKubernetesNodeDown turns n2's Kubernetes Node NotReady (past the 15 s
// grace) and then deletes it: the Longhorn node must go Ready=False with
// KubernetesNodeNotReady, then KubernetesNodeGone, and n2's instance
// manager must pass to another manager.
func testKubernetesNodeDown(t *testing.T, c *cluster) {
	kn, err := c.kube.CoreV1().Nodes().Get(c.ctx, "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	past := metav1.NewTime(time.Now().Add(-time.Minute))
	kn.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
		LastTransitionTime: past, LastHeartbeatTime: past, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}}
	if _, err := c.kube.CoreV1().Nodes().UpdateStatus(c.ctx, kn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.waitNodeReason("n2", longhorn.NodeConditionReasonKubernetesNodeNotReady)
	t.Logf("MEASURE Kubernetes node NotReady -> Longhorn node down: %v", time.Since(start).Round(time.Millisecond))
	c.eventually("n2's instance manager owned elsewhere and unknown", 30*time.Second, func() (bool, string) {
		ims, _ := c.lh.LonghornV1beta2().InstanceManagers(ns).List(c.ctx, metav1.ListOptions{})
		for _, im := range ims.Items {
			if im.Spec.NodeID == "n2" {
				return im.Status.OwnerID != "n2" && im.Status.CurrentState == longhorn.InstanceManagerStateUnknown,
					fmt.Sprintf("owner=%s state=%s", im.Status.OwnerID, im.Status.CurrentState)
			}
		}
		return false, "no instance manager for n2"
	})
	if err := c.kube.CoreV1().Nodes().Delete(c.ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitNodeReason("n2", longhorn.NodeConditionReasonKubernetesNodeGone)
}

func (c *cluster) waitNodeReason(node, reason string) {
	c.t.Helper()
	c.eventually(fmt.Sprintf("Longhorn node %s Ready=False %s", node, reason), 30*time.Second, func() (bool, string) {
		n, err := c.lh.LonghornV1beta2().Nodes(ns).Get(c.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := longhorn.GetCondition(n.Status.Conditions, longhorn.NodeConditionTypeReady)
		return cond.Status == longhorn.ConditionStatusFalse && cond.Reason == reason, fmt.Sprintf("%+v", cond)
	})
}

// testISCSIFrontend attaches a volume with frontend iscsi: the engine serves
// its own iSCSI target on its node, the engine reports an iscsi:// endpoint,
// and qemu-io (libiscsi) writes and reads through it. Then the volume is
// detached and deleted.
func testISCSIFrontend(t *testing.T, c *cluster) {
	const vol = "iscsi-vol"
	manifest := fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Volume\nmetadata: {name: %s, namespace: %s}\n"+
		"spec: {size: 64Mi, numberOfReplicas: 2, frontend: iscsi}\n", vol, ns)
	if out, err := c.kubectl(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	start := time.Now()
	c.attach(vol, "n2")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 60*time.Second)
	t.Logf("MEASURE iscsi attach ticket->attached healthy: %v", time.Since(start).Round(time.Millisecond))
	endpoint := c.engineOf(vol).Status.Endpoint
	if !strings.HasPrefix(endpoint, "iscsi://"+c.node("n2").ip+":") || !strings.HasSuffix(endpoint, "/iqn.2019-10.io.longhorn:"+vol+"/1") {
		t.Fatalf("engine endpoint %q, want iscsi://<n2>:PORT/iqn.2019-10.io.longhorn:%s/1", endpoint, vol)
	}
	qemuIO(t, endpoint, "write -P 0x7e 1M 1M", "read -P 0x7e 1M 1M")
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	if out, err := c.kubectl("", "-n", ns, "delete", "volumes.longhorn.io", vol, "--wait=false"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	c.eventually("iscsi volume gone", 60*time.Second, func() (bool, string) {
		return c.volume(vol) == nil && len(c.replicasOf(vol)) == 0, fmt.Sprintf("replicas=%d", len(c.replicasOf(vol)))
	})
}

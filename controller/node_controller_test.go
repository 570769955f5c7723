package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func setting(name types.SettingName, value string) *longhorn.Setting {
	return &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: string(name), Namespace: testNS}, Value: value}
}

func (f *fixture) syncNode(name string) Result {
	f.t.Helper()
	res, err := fixtureController[*NodeController](f).syncNode(f.ctx, testNS+"/"+name)
	if err != nil {
		f.t.Fatalf("syncNode: %v", err)
	}
	return res
}

// waitNode waits until the cache has node name.
func (f *fixture) waitNode(name string) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := f.ds.GetNodeRO(f.ctx, name); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("node %s never reached the cache", name)
}

func TestNodeControllerCreatesOwnNodeAndMeasuresDisks(t *testing.T) {
	dataPath := filepath.Join(t.TempDir(), "longhorn")
	f := newFixture(t, setting(types.SettingNameDefaultDataPath, dataPath))
	rt := metav1.NewMicroTime(f.now)
	secs := int32(15)
	if _, err := f.kube.CoordinationV1().Leases(testNS).Create(f.ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: ManagerLeasePrefix + "n1"},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &rt, LeaseDurationSeconds: &secs}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kube.CoreV1().Nodes().Create(f.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{labelZone: "z1"}}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the kube informers see them
	f.syncNode("n1")                   // creates the node with the default disk
	n, err := f.lh.LonghornV1beta2().Nodes(testNS).Get(f.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.Disks) != 1 || !n.Spec.AllowScheduling {
		t.Fatalf("node spec %+v", n.Spec)
	}
	var diskName string
	for k, d := range n.Spec.Disks {
		diskName = k
		if !strings.HasPrefix(k, "default-disk-") || d.Path != dataPath || d.StorageReserved <= 0 {
			t.Fatalf("default disk %s %+v", k, d)
		}
	}
	f.waitNode("n1")
	res := f.syncNode("n1") // status: conditions, disk status, instance manager
	if res.RequeueAfter <= 0 || res.RequeueAfter > diskMonitorInterval {
		t.Fatalf("requeue %v", res.RequeueAfter)
	}
	n, _ = f.lh.LonghornV1beta2().Nodes(testNS).Get(f.ctx, "n1", metav1.GetOptions{})
	if !condTrue(n.Status.Conditions, longhorn.NodeConditionTypeReady) || n.Status.Zone != "z1" {
		t.Fatalf("node status %+v", n.Status)
	}
	shared, err := monitor.MountPropagation(dataPath)
	if mp := longhorn.GetCondition(n.Status.Conditions, longhorn.NodeConditionTypeMountPropagation); err != nil ||
		(mp.Status == longhorn.ConditionStatusTrue) != shared ||
		(!shared && mp.Reason != longhorn.NodeConditionReasonNoMountPropagationSupport) {
		t.Fatalf("MountPropagation %+v, data path shared=%v (%v)", mp, shared, err)
	}
	st := n.Status.DiskStatus[diskName]
	cfg, err := monitor.ReadDiskConfig(dataPath)
	if err != nil || st == nil || st.DiskUUID != cfg.DiskUUID || st.StorageMaximum <= 0 || !condTrue(st.Conditions, longhorn.DiskConditionTypeReady) {
		t.Fatalf("disk status %+v (cfg %+v, %v)", st, cfg, err)
	}
	if _, err := os.Stat(filepath.Join(dataPath, monitor.ReplicaDirectory)); err != nil {
		t.Fatal(err)
	}
	imName := types.InstanceManagerName("n1", "longhorn:test", longhorn.DataEngineTypeV1)
	if im, err := f.lh.LonghornV1beta2().InstanceManagers(testNS).Get(f.ctx, imName, metav1.GetOptions{}); err != nil || im.Spec.NodeID != "n1" {
		t.Fatalf("instance manager %v %v", im, err)
	}

	// Another node whose manager never renewed its lease is down.
	if _, err := f.lh.LonghornV1beta2().Nodes(testNS).Create(f.ctx, &longhorn.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Namespace: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitNode("n2")
	f.syncNode("n2")
	n2, _ := f.lh.LonghornV1beta2().Nodes(testNS).Get(f.ctx, "n2", metav1.GetOptions{})
	if c := longhorn.GetCondition(n2.Status.Conditions, longhorn.NodeConditionTypeReady); c.Reason != longhorn.NodeConditionReasonKubernetesNodeGone {
		t.Fatalf("n2 Ready %+v", c)
	}
}

// With create-default-disk-labeled-nodes on, only a Kubernetes node labeled
// node.longhorn.io/create-default-disk=true gets the default disk.
func TestNodeControllerDefaultDiskOnlyOnLabeledNodes(t *testing.T) {
	for _, labeled := range []bool{false, true} {
		t.Run(map[bool]string{false: "unlabeled", true: "labeled"}[labeled], func(t *testing.T) {
			f := newFixture(t, setting(types.SettingNameDefaultDataPath, filepath.Join(t.TempDir(), "longhorn")),
				setting(types.SettingNameCreateDefaultDiskLabeledNodes, "true"))
			labels := map[string]string{}
			if labeled {
				labels[labelCreateDefaultDisk] = "true"
			}
			if _, err := f.kube.CoreV1().Nodes().Create(f.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}},
				metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for fixtureController[*NodeController](f).kubeNode("n1") == nil && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			f.syncNode("n1")
			n, err := f.lh.LonghornV1beta2().Nodes(testNS).Get(f.ctx, "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(n.Spec.Disks); (got == 1) != labeled || got > 1 {
				t.Fatalf("labeled=%v: %d disks", labeled, got)
			}
		})
	}
}

package controller

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func TestDecideStorageNetworkRestarts(t *testing.T) {
	want := multusNetworks("kube-system/storage")
	pods := []imPodNetwork{
		{Name: "im-c", Networks: ""},
		{Name: "im-a", Networks: want},
		{Name: "im-b", Networks: "", Instances: 2},
		{Name: "im-d", Networks: "", Deleting: true},
		{Name: "im-e", Networks: multusNetworks("kube-system/old")},
	}
	restart, waiting := decideStorageNetworkRestarts(pods, want)
	if !slices.Equal(restart, []string{"im-c", "im-e"}) || !slices.Equal(waiting, []string{"im-b"}) {
		t.Fatalf("restart %v waiting %v", restart, waiting)
	}
	// Back to the pod network: only pods with an annotation restart.
	restart, waiting = decideStorageNetworkRestarts(pods, "")
	if !slices.Equal(restart, []string{"im-a", "im-e"}) || len(waiting) != 0 {
		t.Fatalf("clearing: restart %v waiting %v", restart, waiting)
	}
}

func (f *fixture) setSetting(name types.SettingName, value string) *longhorn.Setting {
	f.t.Helper()
	s, err := f.lh.LonghornV1beta2().Settings(testNS).Get(f.ctx, string(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s, err = f.lh.LonghornV1beta2().Settings(testNS).Create(f.ctx,
			&longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: string(name), Namespace: testNS}, Value: value}, metav1.CreateOptions{})
	} else if err == nil {
		s.Value = value
		s, err = f.lh.LonghornV1beta2().Settings(testNS).Update(f.ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		f.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := f.ds.GetSettingRO(f.ctx, name); err == nil && c.Value == value {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("setting %s not in the cache", name)
	return nil
}

// TestStorageNetworkRestartsInstanceManagerPods: setting storage-network
// deletes this node's instance-manager pod (no instances), the instance
// manager controller creates it again with the Multus annotation, and an
// instance manager that runs an instance waits.
func TestStorageNetworkRestartsInstanceManagerPods(t *testing.T) {
	f := newFixture(t, readyNode("n1")...)
	f.runningIM()
	c := fixtureController[*SettingController](f)
	s := f.setSetting(types.SettingNameStorageNetwork, "kube-system/storage")
	f.waitPods()
	if res, err := c.syncSetting(f.ctx, testNS+"/"+s.Name); err != nil || res != Done {
		t.Fatalf("sync: %v %v", res, err)
	}
	if _, err := f.kube.CoreV1().Pods(testNS).Get(f.ctx, imName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("instance-manager pod not deleted: %v", err)
	}
	if !hasEvent(f.events(), "Normal RestartingInstanceManager") {
		t.Error("no RestartingInstanceManager event")
	}
	f.waitPodGone(imName)
	f.syncIM() // the instance manager controller creates it again
	pod, err := f.kube.CoreV1().Pods(testNS).Get(f.ctx, imName, metav1.GetOptions{})
	if err != nil || pod.Annotations[multusNetworksAnnotation] != multusNetworks("kube-system/storage") {
		t.Fatalf("new pod %v: %v", pod.Annotations, err)
	}

	// The pod now matches: nothing to do. Back to the pod network while a
	// replica runs: the pod waits for it.
	f.runIMPod()
	f.fakeIM().put(&engineapi.Instance{Spec: engineapi.InstanceSpec{Name: "r-1", Type: engineapi.InstanceTypeReplica},
		Status: engineapi.InstanceStatus{State: engineapi.InstanceStateRunning, PortStart: 10000, PortEnd: 10009, UUID: "u1"}})
	f.syncIM()
	s = f.setSetting(types.SettingNameStorageNetwork, "")
	f.waitPods()
	if res, err := c.syncSetting(f.ctx, testNS+"/"+s.Name); err != nil || res != After(storageNetworkRecheck) {
		t.Fatalf("sync with a running replica: %v %v", res, err)
	}
	if _, err := f.kube.CoreV1().Pods(testNS).Get(f.ctx, imName, metav1.GetOptions{}); err != nil {
		t.Fatalf("pod with a running replica deleted: %v", err)
	}
	if !hasEvent(f.events(), "Warning WaitingForInstances") {
		t.Error("no WaitingForInstances event")
	}

	// The replica goes: the instance manager's status update queues the
	// setting at once (not after storageNetworkRecheck), and its sync
	// deletes the pod. (The fake clientset keeps resourceVersions, so the
	// informer's update reaches no handler here: the test calls it.)
	if _, err := f.fakeIM().InstanceDelete(f.ctx, "r-1", engineapi.InstanceTypeReplica, ""); err != nil {
		t.Fatal(err)
	}
	f.syncIM()
	im, err := f.lh.LonghornV1beta2().InstanceManagers(testNS).Get(f.ctx, imName, metav1.GetOptions{})
	if err != nil || len(im.Status.InstanceReplicas) != 0 {
		t.Fatalf("instance manager after the replica went: %+v %v", im, err)
	}
	drainQueue(c.w)
	c.onInstanceManager(im)
	key := testNS + "/" + s.Name
	if q := drainQueue(c.w); !slices.Contains(q, key) {
		t.Fatalf("queued after the last instance went: %v, want %s", q, key)
	}
	other := im.DeepCopy()
	other.Spec.NodeID = "n2"
	busy := im.DeepCopy()
	busy.Status.InstanceEngines = map[string]longhorn.InstanceProcess{"e-1": {}}
	for _, o := range []*longhorn.InstanceManager{other, busy} {
		c.onInstanceManager(o)
		if q := drainQueue(c.w); len(q) != 0 {
			t.Fatalf("queued for an instance manager of node %s with %d engines: %v", o.Spec.NodeID, len(o.Status.InstanceEngines), q)
		}
	}
	if res, err := c.syncSetting(f.ctx, key); err != nil || res != Done {
		t.Fatalf("sync once idle: %v %v", res, err)
	}
	if _, err := f.kube.CoreV1().Pods(testNS).Get(f.ctx, imName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("idle instance-manager pod not deleted: %v", err)
	}
}

// waitPodGone waits until the pod cache no longer has name.
func (f *fixture) waitPodGone(name string) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := f.m.env.pods.Pods(testNS).Get(name); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("pod %s still in the cache", name)
}

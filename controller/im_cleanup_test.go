package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func TestRedundantInstanceManager(t *testing.T) {
	const cur, old = "longhorn:new", "longhorn:old"
	procs := func(states ...longhorn.InstanceState) map[string]longhorn.InstanceProcess {
		m := map[string]longhorn.InstanceProcess{}
		for i, s := range states {
			m[string(rune('a'+i))] = longhorn.InstanceProcess{Status: longhorn.InstanceProcessStatus{State: s}}
		}
		return m
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name     string
		image    string
		state    longhorn.InstanceManagerState
		engines  map[string]longhorn.InstanceProcess
		replicas map[string]longhorn.InstanceProcess
		deleting bool
		inUse    bool
		want     bool
	}{
		{name: "current image, empty", image: cur, state: longhorn.InstanceManagerStateRunning, want: false},
		{name: "current image, stopped", image: cur, state: longhorn.InstanceManagerStateStopped, want: false},
		{name: "old, running, empty", image: old, state: longhorn.InstanceManagerStateRunning, want: true},
		{name: "old, running engine", image: old, state: longhorn.InstanceManagerStateRunning,
			engines: procs(longhorn.InstanceStateRunning), want: false},
		{name: "old, starting replica", image: old, state: longhorn.InstanceManagerStateRunning,
			replicas: procs(longhorn.InstanceStateStopped, longhorn.InstanceStateStarting), want: false},
		{name: "old, only stopped and error instances", image: old, state: longhorn.InstanceManagerStateRunning,
			engines: procs(longhorn.InstanceStateStopped), replicas: procs(longhorn.InstanceStateError), want: true},
		{name: "old, pod gone", image: old, state: longhorn.InstanceManagerStateStopped,
			engines: procs(longhorn.InstanceStateRunning), want: true},
		{name: "old, pod failed", image: old, state: longhorn.InstanceManagerStateError, want: true},
		{name: "old, starting (gRPC not answering yet)", image: old, state: longhorn.InstanceManagerStateStarting, want: false},
		{name: "old, node down", image: old, state: longhorn.InstanceManagerStateUnknown, want: false},
		{name: "old, being deleted", image: old, state: longhorn.InstanceManagerStateRunning, deleting: true, want: false},
		{name: "old, empty, but a replica or volume here asks for its image", image: old, state: longhorn.InstanceManagerStateRunning,
			engines: procs(longhorn.InstanceStateStopped), inUse: true, want: false},
		{name: "old, pod gone, image still asked for", image: old, state: longhorn.InstanceManagerStateStopped, inUse: true, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := &longhorn.InstanceManager{Spec: longhorn.InstanceManagerSpec{Image: tc.image, NodeID: "n1"},
				Status: longhorn.InstanceManagerStatus{CurrentState: tc.state, InstanceEngines: tc.engines, InstanceReplicas: tc.replicas}}
			if tc.deleting {
				im.DeletionTimestamp = &now
			}
			if got := redundantInstanceManager(im, cur, tc.inUse); got != tc.want {
				t.Errorf("redundantInstanceManager = %v, want %v", got, tc.want)
			}
		})
	}
}

// An empty instance manager of an older image stays while a replica on its
// node still asks for that image (it would start there again) and goes
// once that replica is gone.
func TestCleanupKeepsInstanceManagerOfWantedImage(t *testing.T) {
	const old = "longhorn:old"
	oldIM := &longhorn.InstanceManager{ObjectMeta: metav1.ObjectMeta{Name: "im-old-n1", Namespace: testNS},
		Spec:   longhorn.InstanceManagerSpec{Image: old, NodeID: "n1", DataEngine: longhorn.DataEngineTypeV1},
		Status: longhorn.InstanceManagerStatus{CurrentState: longhorn.InstanceManagerStateRunning}}
	rep := &longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: "v-r-1", Namespace: testNS},
		Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "v", NodeID: "n1", Image: old}}}
	f := newFixture(t, append(readyNode("n1"), oldIM, rep)...)
	c := fixtureController[*NodeController](f)
	exists := func() bool {
		_, err := f.lh.LonghornV1beta2().InstanceManagers(testNS).Get(f.ctx, oldIM.Name, metav1.GetOptions{})
		return err == nil
	}
	f.settle()
	if err := c.cleanupInstanceManagers(f.ctx); err != nil || !exists() {
		t.Fatalf("with a replica of its image on the node: %v, exists %v", err, exists())
	}
	if err := f.lh.LonghornV1beta2().Replicas(testNS).Delete(f.ctx, rep.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := f.ds.GetReplicaRO(f.ctx, rep.Name); return err != nil })
	if err := c.cleanupInstanceManagers(f.ctx); err != nil || exists() {
		t.Fatalf("after the replica went: %v, exists %v", err, exists())
	}
}

package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// The fixture tests of the instance path: the replica, engine and
// instance-manager controllers one sync at a time against the in-memory
// instance manager of fake_api_test.go, asserting the resulting objects
// (and the fake's process table), never the calls made.

var imName = types.InstanceManagerName("n1", "longhorn:test", longhorn.DataEngineTypeV1)

func testReplica(name string, desire longhorn.InstanceState) *longhorn.Replica {
	return &longhorn.Replica{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Finalizers: []string{FinalizerName}},
		Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol", VolumeSize: 1 << 30, NodeID: "n1",
			DesireState: desire, Image: "longhorn:test", DataEngine: longhorn.DataEngineTypeV1},
			DiskPath: "/var/lib/longhorn", DataDirectoryName: name + "-dir", Active: true},
	}
}

func testEngine(replicas map[string]string) *longhorn.Engine {
	return &longhorn.Engine{
		ObjectMeta: metav1.ObjectMeta{Name: "vol-e-0", Namespace: testNS, Finalizers: []string{FinalizerName}},
		Spec: longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol", VolumeSize: 1 << 30, NodeID: "n1",
			DesireState: longhorn.InstanceStateRunning, Image: "longhorn:test", DataEngine: longhorn.DataEngineTypeV1},
			Frontend: longhorn.VolumeFrontendNBD, ReplicaAddressMap: replicas},
	}
}

func (f *fixture) replica(name string) *longhorn.Replica {
	f.t.Helper()
	r, err := f.lh.LonghornV1beta2().Replicas(testNS).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) instanceManager() *longhorn.InstanceManager {
	f.t.Helper()
	im, err := f.lh.LonghornV1beta2().InstanceManagers(testNS).Get(f.ctx, imName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return im
}

// fakeIM is the in-memory instance manager of node n1.
func (f *fixture) fakeIM() *fakeIM { return f.api.im(imAddress("10.0.0.1")) }

func (f *fixture) syncReplica(name string) (Result, error) {
	f.t.Helper()
	f.settle()
	snap := f.snapshotCache()
	res, err := fixtureController[*ReplicaController](f).syncReplica(f.ctx, testNS+"/"+name)
	f.checkCacheUnchanged(snap)
	return res, err
}

func (f *fixture) syncEngine() (Result, error) {
	f.t.Helper()
	f.settle()
	snap := f.snapshotCache()
	res, err := fixtureController[*EngineController](f).syncEngine(f.ctx, testNS+"/vol-e-0")
	f.checkCacheUnchanged(snap)
	return res, err
}

func (f *fixture) syncIM() Result {
	f.t.Helper()
	f.settle()
	f.waitPods()
	snap := f.snapshotCache()
	res, err := fixtureController[*InstanceManagerController](f).syncInstanceManager(f.ctx, testNS+"/"+imName)
	if err != nil {
		f.t.Fatalf("syncInstanceManager: %v", err)
	}
	f.checkCacheUnchanged(snap)
	return res
}

// waitPods waits until the pod cache holds what the fake clientset holds.
func (f *fixture) waitPods() {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		list, _ := f.kube.CoreV1().Pods(testNS).List(f.ctx, metav1.ListOptions{})
		ok := true
		for _, p := range list.Items {
			c, err := f.m.env.pods.Pods(testNS).Get(p.Name)
			ok = ok && err == nil && c.Status.Phase == p.Status.Phase
		}
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatal("pod cache did not catch up")
}

// runIMPod plays kubelet: the instance-manager pod the controller made runs.
func (f *fixture) runIMPod() {
	f.t.Helper()
	pod, err := f.kube.CoreV1().Pods(testNS).Get(f.ctx, imName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("instance-manager pod: %v", err)
	}
	pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "10.0.0.1"
	if _, err := f.kube.CoreV1().Pods(testNS).UpdateStatus(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(events []string, prefix string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, prefix) })
}

func TestInstanceManagerPodAndInstances(t *testing.T) {
	f := newFixture(t, readyNode("n1")...)
	f.fakeIM().put(&engineapi.Instance{Spec: engineapi.InstanceSpec{Name: "r-1", Type: engineapi.InstanceTypeReplica},
		Status: engineapi.InstanceStatus{State: engineapi.InstanceStateRunning, PortStart: 10000, PortEnd: 10009, UUID: "u1"}})
	f.syncIM() // creates the pod
	pod, err := f.kube.CoreV1().Pods(testNS).Get(f.ctx, imName, metav1.GetOptions{})
	if err != nil || pod.Spec.Containers[0].Image != "longhorn:test" || pod.Spec.NodeName != "n1" {
		t.Fatalf("pod %v: %v", pod, err)
	}
	if !hasEvent(f.events(), "Normal Start Creating instance-manager pod") {
		t.Error("no event for the pod")
	}
	pod.Status.Phase = corev1.PodPending
	if _, err := f.kube.CoreV1().Pods(testNS).UpdateStatus(f.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := f.syncIM(); res != WaitShort || f.instanceManager().Status.CurrentState != longhorn.InstanceManagerStateStarting {
		t.Fatalf("pending pod: %v, state %s", res, f.instanceManager().Status.CurrentState)
	}
	f.runIMPod()
	if res := f.syncIM(); res != After(imResyncInterval) {
		t.Errorf("running instance manager requeues after %v, want %v", res.RequeueAfter, imResyncInterval)
	}
	im := f.instanceManager()
	p := im.Status.InstanceReplicas["r-1"]
	if im.Status.CurrentState != longhorn.InstanceManagerStateRunning || im.Status.IP != "10.0.0.1" ||
		p.Status.State != longhorn.InstanceStateRunning || p.Status.PortStart != 10000 || p.Status.UUID != "u1" ||
		im.Status.APIVersion != 5 || im.Status.ProxyAPIVersion != 6 || im.Status.InstanceEngines != nil {
		t.Fatalf("status %+v", im.Status)
	}
}

// runningIM brings n1's instance manager to running with its pod.
func (f *fixture) runningIM() {
	f.t.Helper()
	f.syncIM()
	f.runIMPod()
	f.syncIM()
}

func TestReplicaInstanceLifecycle(t *testing.T) {
	f := newFixture(t, append(readyNode("n1"), testReplica("r-1", longhorn.InstanceStateRunning))...)
	f.runningIM()
	if _, err := f.syncReplica("r-1"); err != nil {
		t.Fatal(err)
	}
	im := f.fakeIM()
	if im.createCount() != 1 {
		t.Fatalf("%d creates, want 1", im.createCount())
	}
	spec := im.creates[0]
	if spec.Type != engineapi.InstanceTypeReplica || !slices.Contains(spec.Args, "/var/lib/longhorn/replicas/r-1-dir") ||
		!slices.Equal(spec.PortArgs, []string{"--listen,10.0.0.1:"}) {
		t.Fatalf("replica process spec %+v", spec)
	}
	if r := f.replica("r-1"); r.Status.CurrentState != longhorn.InstanceStateStopped || r.Status.InstanceManagerName != imName || r.Status.OwnerID != "n1" {
		t.Fatalf("after create: %+v", r.Status)
	}
	if !hasEvent(f.events(), "Normal Start Starting r-1 on n1") {
		t.Error("no Start event")
	}
	// The process runs: the instance manager reports it, the replica copies its address.
	im.setState("r-1", engineapi.InstanceStateRunning)
	f.syncIM()
	if _, err := f.syncReplica("r-1"); err != nil {
		t.Fatal(err)
	}
	r := f.replica("r-1")
	if r.Status.CurrentState != longhorn.InstanceStateRunning || !r.Status.Started || r.Status.IP != "10.0.0.1" ||
		r.Status.StorageIP != "10.0.0.1" || r.Status.Port != 10000 || r.Status.UUID != "uuid-0" || r.Status.CurrentImage != "longhorn:test" {
		t.Fatalf("running: %+v", r.Status)
	}
	if im.createCount() != 1 {
		t.Fatalf("a running replica was started again (%d creates)", im.createCount())
	}
	// The process dies: the replica is in error, and is not restarted behind the volume's back.
	im.setState("r-1", engineapi.InstanceStateError)
	f.syncIM()
	if _, err := f.syncReplica("r-1"); err != nil {
		t.Fatal(err)
	}
	if r := f.replica("r-1"); r.Status.CurrentState != longhorn.InstanceStateError || r.Status.IP != "" || r.Status.Port != 0 {
		t.Fatalf("after the process died: %+v", r.Status)
	}
	// Asked to stop: the record is deleted, and the replica is stopped.
	r = f.replica("r-1")
	r.Spec.DesireState = longhorn.InstanceStateStopped
	f.updateReplica(r)
	if _, err := f.syncReplica("r-1"); err != nil {
		t.Fatal(err)
	}
	f.syncIM()
	if _, err := f.syncReplica("r-1"); err != nil {
		t.Fatal(err)
	}
	if r := f.replica("r-1"); r.Status.CurrentState != longhorn.InstanceStateStopped || im.createCount() != 1 || len(im.deletes) != 1 {
		t.Fatalf("stopped: %+v; %d creates, deletes %v", r.Status, im.createCount(), im.deletes)
	}
}

// A replica without a disk cannot start: nothing is created and it waits.
func TestReplicaWithoutDiskWaits(t *testing.T) {
	r := testReplica("r-1", longhorn.InstanceStateRunning)
	r.Spec.DiskPath = ""
	f := newFixture(t, append(readyNode("n1"), r)...)
	f.runningIM()
	res, err := f.syncReplica("r-1")
	if err != nil || res != WaitShort || f.fakeIM().createCount() != 0 {
		t.Fatalf("sync: %v %v, %d creates", res, err, f.fakeIM().createCount())
	}
}

func TestEngineInstanceAndObservation(t *testing.T) {
	objs := append(readyNode("n1"), testEngine(map[string]string{"r-1": "10.0.0.1:10000"}))
	f := newFixture(t, objs...)
	f.runningIM()
	if _, err := f.syncEngine(); err != nil {
		t.Fatal(err)
	}
	im := f.fakeIM()
	if im.createCount() != 1 || im.creates[0].Type != engineapi.InstanceTypeEngine ||
		!slices.Contains(im.creates[0].Args, "tcp://10.0.0.1:10000") || !slices.Contains(im.creates[0].Args, "nbd") {
		t.Fatalf("engine process: %+v", im.creates)
	}
	im.setState("vol-e-0", engineapi.InstanceStateRunning)
	f.api.setEngine("vol-e-0", &engineapi.Volume{Name: "vol", Size: 1 << 30, Endpoint: "nbd://10.0.0.1:10001"},
		[]engineapi.Replica{{Address: "tcp://10.0.0.1:10000", InstanceName: "r-1", Mode: engineapi.ReplicaModeRW}})
	f.syncIM()
	if _, err := f.syncEngine(); err != nil { // running: starts the monitor
		t.Fatal(err)
	}
	ec := fixtureController[*EngineController](f)
	deadline := time.Now().Add(5 * time.Second)
	for ec.monitors.latest("vol-e-0") == nil {
		if time.Now().After(deadline) {
			t.Fatal("no engine observation within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := f.syncEngine(); err != nil {
		t.Fatal(err)
	}
	e := f.engine("vol-e-0")
	if e.Status.CurrentState != longhorn.InstanceStateRunning || e.Status.ReplicaModeMap["r-1"] != longhorn.ReplicaModeRW ||
		e.Status.Endpoint != "nbd://10.0.0.1:10001" || e.Status.CurrentSize != 1<<30 || e.Status.Snapshots["volume-head"] == nil {
		t.Fatalf("engine status %+v", e.Status)
	}
}

// A record with the engine's name that another process holds (live, other
// spec) is not a started engine: the sync fails with an event and retries,
// instead of reporting "Starting" forever while nothing runs.
func TestEngineCreateRefusedByAForeignRecord(t *testing.T) {
	f := newFixture(t, append(readyNode("n1"), testEngine(map[string]string{"r-1": "10.0.0.1:10000"}))...)
	f.runningIM()
	f.fakeIM().put(&engineapi.Instance{Spec: engineapi.InstanceSpec{Name: "vol-e-0", Type: engineapi.InstanceTypeEngine, Args: []string{"other"}},
		Status: engineapi.InstanceStatus{State: engineapi.InstanceStateStarting}})
	// The instance manager's status does not show it yet (as with a plain
	// process record, which InstanceList leaves out).
	if _, err := f.syncEngine(); err == nil || !engineapi.IsAlreadyExists(err) {
		t.Fatalf("sync over a foreign live record: %v, want AlreadyExists", err)
	}
	ev := f.events()
	if !hasEvent(ev, "Warning FailedStarting Error starting vol-e-0") || hasEvent(ev, "Normal Start Starting") {
		t.Fatalf("events %q", ev)
	}
	// A dead record is replaced (the instance manager's own rule).
	f.fakeIM().setState("vol-e-0", engineapi.InstanceStateError)
	if _, err := f.syncEngine(); err != nil {
		t.Fatalf("sync over a dead record: %v", err)
	}
	if f.fakeIM().createCount() != 1 || !hasEvent(f.events(), "Normal Start Starting vol-e-0 on n1") {
		t.Fatalf("%d creates", f.fakeIM().createCount())
	}
}

// reconcileInstance against instance managers in each state: it creates a
// process only where the instance manager runs, and a started instance on
// a lost instance manager is unknown (node down) or error, never restarted.
func TestReconcileInstanceByInstanceManagerState(t *testing.T) {
	cases := []struct {
		im      longhorn.InstanceManagerState
		started bool
		want    longhorn.InstanceState
		creates int
	}{
		{longhorn.InstanceManagerStateRunning, false, longhorn.InstanceStateStopped, 1},
		{longhorn.InstanceManagerStateRunning, true, longhorn.InstanceStateError, 0},
		{longhorn.InstanceManagerStateUnknown, true, longhorn.InstanceStateUnknown, 0},
		{longhorn.InstanceManagerStateUnknown, false, longhorn.InstanceStateStopped, 0},
		{longhorn.InstanceManagerStateStopped, true, longhorn.InstanceStateError, 0},
		{longhorn.InstanceManagerStateStarting, false, longhorn.InstanceStateStopped, 0},
	}
	for _, c := range cases {
		t.Run(string(c.im), func(t *testing.T) {
			objs := readyNode("n1")
			objs[1].(*longhorn.InstanceManager).Status.CurrentState = c.im
			f := newFixture(t, objs...)
			f.settle()
			r := testReplica("r-1", longhorn.InstanceStateRunning)
			r.Status.Started = c.started
			err := f.m.env.reconcileInstance(f.ctx, instanceTarget{Object: r, Name: r.Name, Type: engineapi.InstanceTypeReplica,
				Spec: &r.Spec.InstanceSpec, Status: &r.Status.InstanceStatus,
				ProcessSpec: func(im *longhorn.InstanceManager) (engineapi.InstanceSpec, error) {
					return fixtureController[*ReplicaController](f).processSpec(r, im)
				}})
			if err != nil || r.Status.CurrentState != c.want || f.fakeIM().createCount() != c.creates {
				t.Fatalf("err %v, state %s (want %s), %d creates (want %d)", err, r.Status.CurrentState, c.want, f.fakeIM().createCount(), c.creates)
			}
		})
	}
}

// After a rebuild, with auto-cleanup-system-generated-snapshot on (the
// default), the system snapshots are marked removed and purged, once no
// replica is rebuilding; user snapshots stay. A purge the engine refuses
// is tried again.
// rebuildFixture is an engine vol-e-0 running with r-1 (RW in every
// observation) and r-2 (running, to be rebuilt); step runs one
// reconcileReplicas with r-2 in mode m ("" = not in the engine).
func rebuildFixture(t *testing.T) (f *fixture, fe *fakeEngine, step func(m engineapi.ReplicaMode) Result) {
	r2 := testReplica("r-2", longhorn.InstanceStateRunning)
	r2.Status.CurrentState, r2.Status.StorageIP, r2.Status.Port = longhorn.InstanceStateRunning, "10.0.0.1", 10010
	e := testEngine(map[string]string{"r-1": "10.0.0.1:10000", "r-2": "10.0.0.1:10010"})
	e.Status.CurrentState, e.Status.IP, e.Status.Port = longhorn.InstanceStateRunning, "10.0.0.1", 10020
	f = newFixture(t, append(readyNode("n1"), e, r2)...)
	f.settle()
	fe = f.api.setEngine("vol-e-0", &engineapi.Volume{Size: 1 << 30}, nil)
	ec := fixtureController[*EngineController](f)
	rw := engineapi.Replica{Address: "tcp://10.0.0.1:10000", InstanceName: "r-1", Mode: engineapi.ReplicaModeRW}
	return f, fe, func(m engineapi.ReplicaMode) Result {
		t.Helper()
		obs := &engineObservation{Replicas: []engineapi.Replica{rw}}
		if m != "" {
			obs.Replicas = append(obs.Replicas, engineapi.Replica{Address: "tcp://10.0.0.1:10010", InstanceName: "r-2", Mode: m})
		}
		res, err := ec.reconcileReplicas(f.ctx, f.engine("vol-e-0"), obs)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}

func TestSystemSnapshotsCleanedUpAfterRebuild(t *testing.T) {
	f, fe, step := rebuildFixture(t)
	fe.snaps = map[string]*engineapi.Snapshot{
		"volume-head": {Name: "volume-head"}, "user-1": {Name: "user-1", UserCreated: true},
		"sys-a": {Name: "sys-a"}, "sys-b": {Name: "sys-b"},
	}
	step("") // r-2 missing: rebuild requested
	if len(fe.added) != 1 || fe.added[0] != "tcp://10.0.0.1:10010" {
		t.Fatalf("ReplicaAdd calls %v", fe.added)
	}
	step(engineapi.ReplicaModeWO)
	if fe.purges != 0 || len(fe.removed) != 0 {
		t.Fatal("cleanup while a replica is rebuilding")
	}
	fe.purgeErr = status.Error(codes.FailedPrecondition, "cannot purge snapshots while a replica is rebuilding")
	step(engineapi.ReplicaModeRW) // rebuilt; the purge is refused
	fe.purgeErr = nil
	step(engineapi.ReplicaModeRW) // tried again
	if fe.purges != 1 || !slices.Equal(fe.removed, []string{"sys-a", "sys-b"}) || fe.snaps["user-1"].Removed {
		t.Fatalf("purges %d, removed %v, user snapshot removed %v", fe.purges, fe.removed, fe.snaps["user-1"].Removed)
	}
	step(engineapi.ReplicaModeRW)
	if fe.purges != 1 {
		t.Fatalf("%d purges without a new rebuild", fe.purges)
	}
	if ev := f.events(); !hasEvent(ev, "Normal SystemSnapshotsCleanedUp Removing 2 system snapshot(s) of volume vol after rebuilding: sys-a, sys-b") {
		t.Errorf("no cleanup event in %q", ev)
	}
}

// A replica rebuilt once, then failed out of the engine and reused (running
// again under the same name), is added back with no other event needed
// (TestDrainPolicies: the reused replica waited for a node heartbeat that no
// longer enqueues engines): the step that sees it gone asks for WaitShort,
// the next adds it. While it is not running yet the engine is looked at
// again after WaitShort.
func TestReusedReplicaAddedAgain(t *testing.T) {
	f, fe, step := rebuildFixture(t)
	step("")
	step(engineapi.ReplicaModeRW) // rebuilt
	if res := step(engineapi.ReplicaModeRW); res != Done || len(fe.added) != 1 {
		t.Fatalf("steady: %+v, ReplicaAdd calls %v", res, fe.added)
	}
	// r-2 failed out of the engine and was reused: not in the step that
	// sees it gone (an ERR replica must first be marked failed), but the
	// engine is looked at again soon and the next step adds it.
	if res := step(""); res != WaitShort || len(fe.added) != 1 {
		t.Fatalf("reused, first step: %+v, ReplicaAdd calls %v", res, fe.added)
	}
	if res := step(""); len(fe.added) != 2 {
		t.Fatalf("reused, second step: %+v, ReplicaAdd calls %v", res, fe.added)
	}
	step(engineapi.ReplicaModeRW)
	// again, its process still starting: wait, looked at again soon.
	r := f.replica("r-2")
	r.Status.CurrentState = longhorn.InstanceStateStarting
	f.updateReplica(r)
	f.settle()
	if res := step(""); res != WaitShort || len(fe.added) != 2 {
		t.Fatalf("process starting: %+v, ReplicaAdd calls %v", res, fe.added)
	}
	r = f.replica("r-2")
	r.Status.CurrentState = longhorn.InstanceStateRunning
	f.updateReplica(r)
	f.settle()
	if res := step(""); len(fe.added) != 3 || fe.added[2] != "tcp://10.0.0.1:10010" {
		t.Fatalf("running again: %+v, ReplicaAdd calls %v", res, fe.added)
	}
}

package controller

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func threeNodeObjects(extra ...runtime.Object) []runtime.Object {
	var objs []runtime.Object
	for _, n := range []string{"n1", "n2", "n3"} {
		objs = append(objs, readyNode(n)...)
	}
	return append(objs, extra...)
}

// runReplicas plays the replica controller: every replica asked to run is
// running at a storage address on its node.
func (f *fixture) runReplicas(volume string) {
	for i, r := range f.replicas(volume) {
		if r.Spec.DesireState == longhorn.InstanceStateRunning && r.Status.CurrentState != longhorn.InstanceStateRunning {
			r.Status.CurrentState = longhorn.InstanceStateRunning
			r.Status.StorageIP, r.Status.IP, r.Status.Port = "10.0.0."+r.Spec.NodeID[1:], "10.0.0."+r.Spec.NodeID[1:], 10000+10*i
			r.Status.Started = true
			f.updateReplica(r)
		}
	}
}

// runEngine plays the engine controller: the engine runs and reports the
// given modes.
func (f *fixture) runEngine(name string, modes map[string]longhorn.ReplicaMode) {
	e := f.engine(name)
	e.Status.CurrentState, e.Status.IP, e.Status.Port, e.Status.Started = longhorn.InstanceStateRunning, "10.0.0.1", 10100, true
	e.Status.ReplicaModeMap = modes
	if engineFrontend(e) != "" {
		e.Status.Endpoint = "nbd://10.0.0.1:10100"
	}
	f.updateEngine(e)
}

func TestVolumeLifecycleOneSyncAtATime(t *testing.T) {
	f := newFixture(t, threeNodeObjects(newVolume("vol", 3))...)
	f.syncVolume("vol") // take ownership
	if v := f.volume("vol"); v.Status.OwnerID != "n1" {
		t.Fatalf("owner %q", v.Status.OwnerID)
	}

	f.syncVolume("vol") // engine, attachment, three placed replicas
	e := f.engine("vol-e-0")
	if e.Spec.VolumeName != "vol" || e.Spec.DesireState != longhorn.InstanceStateStopped || e.Spec.VolumeSize != 1<<30 {
		t.Fatalf("engine spec %+v", e.Spec)
	}
	reps := f.replicas("vol")
	nodes := map[string]bool{}
	for _, r := range reps {
		if !strings.HasPrefix(r.Name, "vol-r-") || r.Spec.DiskPath != "/var/lib/longhorn" || !strings.HasPrefix(r.Spec.DataDirectoryName, "vol-") {
			t.Fatalf("replica %s spec %+v", r.Name, r.Spec)
		}
		nodes[r.Spec.NodeID] = true
	}
	if len(reps) != 3 || len(nodes) != 3 {
		t.Fatalf("replicas %d on nodes %v, want 3 on 3 nodes", len(reps), nodes)
	}
	if c := longhorn.GetCondition(f.volume("vol").Status.Conditions, longhorn.VolumeConditionTypeScheduled); c.Status != longhorn.ConditionStatusTrue {
		t.Fatalf("Scheduled %+v", c)
	}
	f.syncVolume("vol")
	if v := f.volume("vol"); v.Status.State != longhorn.VolumeStateDetached || v.Status.Robustness != longhorn.VolumeRobustnessUnknown {
		t.Fatalf("state %s robustness %s, want detached unknown", v.Status.State, v.Status.Robustness)
	}

	v := f.volume("vol")
	v.Spec.NodeID = "n1"
	f.updateVolume(v)
	f.syncVolume("vol")
	if v := f.volume("vol"); v.Status.State != longhorn.VolumeStateAttaching || v.Status.CurrentNodeID != "n1" {
		t.Fatalf("state %s node %s", v.Status.State, v.Status.CurrentNodeID)
	}
	for _, r := range f.replicas("vol") {
		if r.Spec.DesireState != longhorn.InstanceStateRunning {
			t.Fatalf("replica %s not asked to run", r.Name)
		}
	}
	f.runReplicas("vol")
	f.syncVolume("vol")
	e = f.engine("vol-e-0")
	if e.Spec.DesireState != longhorn.InstanceStateRunning || e.Spec.NodeID != "n1" || len(e.Spec.ReplicaAddressMap) != 3 {
		t.Fatalf("engine not started with 3 replicas: %+v", e.Spec)
	}
	modes := map[string]longhorn.ReplicaMode{}
	for n := range e.Spec.ReplicaAddressMap {
		modes[n] = longhorn.ReplicaModeRW
	}
	f.runEngine("vol-e-0", modes)
	e = f.engine("vol-e-0")
	endpoint := e.Status.Endpoint
	e.Status.Endpoint = "" // the monitor has not polled the engine yet
	f.updateEngine(e)
	f.syncVolume("vol")
	if v := f.volume("vol"); endpoint != "" && v.Status.State != longhorn.VolumeStateAttaching {
		t.Fatalf("state %s before the engine reported its endpoint, want attaching", v.Status.State)
	}
	e = f.engine("vol-e-0")
	e.Status.Endpoint = endpoint
	f.updateEngine(e)
	f.syncVolume("vol")
	f.syncVolume("vol")
	v = f.volume("vol")
	if v.Status.State != longhorn.VolumeStateAttached || v.Status.Robustness != longhorn.VolumeRobustnessHealthy {
		t.Fatalf("state %s robustness %s, want attached healthy", v.Status.State, v.Status.Robustness)
	}
	for _, r := range f.replicas("vol") {
		if r.Spec.HealthyAt == "" {
			t.Fatalf("replica %s not marked healthy", r.Name)
		}
	}
	if n := countEvents(f.events(), "Normal Attached Volume vol has been attached to n1"); n != 1 {
		t.Fatalf("%d Attached events, want 1", n)
	}
	testReplicaFailureAndReuse(t, f, modes)
	testDetachEvent(t, f)
}

func countEvents(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// testDetachEvent: detaching an attached volume ends with one Detached event.
func testDetachEvent(t *testing.T, f *fixture) {
	v := f.volume("vol")
	v.Spec.NodeID = ""
	f.updateVolume(v)
	for i := 0; i < 6 && f.volume("vol").Status.State != longhorn.VolumeStateDetached; i++ {
		f.syncVolume("vol")
		if e := f.engine("vol-e-0"); e.Spec.DesireState == longhorn.InstanceStateStopped && e.Status.CurrentState != longhorn.InstanceStateStopped {
			e.Status.CurrentState, e.Status.IP, e.Status.Port, e.Status.Endpoint = longhorn.InstanceStateStopped, "", 0, ""
			f.updateEngine(e)
		}
		for _, r := range f.replicas("vol") {
			if r.Spec.DesireState == longhorn.InstanceStateStopped && r.Status.CurrentState != longhorn.InstanceStateStopped {
				r.Status.CurrentState = longhorn.InstanceStateStopped
				f.updateReplica(r)
			}
		}
	}
	if st := f.volume("vol").Status.State; st != longhorn.VolumeStateDetached {
		t.Fatalf("state %s after detach, want detached", st)
	}
	if n := countEvents(f.events(), "Normal Detached Volume vol has been detached"); n != 1 {
		t.Fatalf("%d Detached events, want 1", n)
	}
}

// testReplicaFailureAndReuse: a replica turns ERR -> failed, volume
// degraded; the failed replica is reusable, so it is rebuilt in place once
// the replenishment wait is over.
func testReplicaFailureAndReuse(t *testing.T, f *fixture, modes map[string]longhorn.ReplicaMode) {
	names := make([]string, 0, len(modes))
	for n := range modes {
		names = append(names, n)
	}
	sort.Strings(names)
	victim := names[0]
	modes[victim] = longhorn.ReplicaModeERR
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	f.syncVolume("vol")
	v := f.volume("vol")
	if v.Status.Robustness != longhorn.VolumeRobustnessDegraded || v.Status.LastDegradedAt == "" {
		t.Fatalf("robustness %s lastDegradedAt %q", v.Status.Robustness, v.Status.LastDegradedAt)
	}
	var failedRep *longhorn.Replica
	for _, r := range f.replicas("vol") {
		if r.Name == victim {
			failedRep = r
		}
	}
	if failedRep == nil || failedRep.Spec.FailedAt == "" || failedRep.Spec.DesireState != longhorn.InstanceStateStopped {
		t.Fatalf("victim not failed: %+v", failedRep)
	}
	if _, in := f.engine("vol-e-0").Spec.ReplicaAddressMap[victim]; in {
		t.Fatal("failed replica still in the engine")
	}
	// The engine drops it; while its old process still runs it is not reused
	// and, within replica-replenishment-wait-interval, no new replica is made.
	delete(modes, victim)
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	if n := len(f.replicas("vol")); n != 3 || f.replicaNamed(victim).Spec.FailedAt == "" {
		t.Fatalf("%d replicas during the wait; victim %+v", n, f.replicaNamed(victim).Spec)
	}
	// Once stopped, the failed replica's node and disk are fine: reused.
	r := f.replicaNamed(victim)
	r.Status.CurrentState, r.Status.Started = longhorn.InstanceStateStopped, false
	f.updateReplica(r)
	f.syncVolume("vol")
	for _, r := range f.replicas("vol") {
		if r.Name == victim && (r.Spec.FailedAt != "" || r.Spec.RebuildRetryCount != 1 || r.Spec.DesireState != longhorn.InstanceStateRunning) {
			t.Fatalf("victim not reused: %+v", r.Spec)
		}
	}
}

func TestVolumeHardAntiAffinityTwoNodes(t *testing.T) {
	var objs []runtime.Object
	for _, n := range []string{"n1", "n2"} {
		objs = append(objs, readyNode(n)...)
	}
	f := newFixture(t, append(objs, newVolume("vol", 3))...)
	f.syncVolume("vol")
	f.syncVolume("vol")
	reps := f.replicas("vol")
	unscheduled := 0
	for _, r := range reps {
		if r.Spec.NodeID == "" {
			unscheduled++
		}
	}
	if len(reps) != 3 || unscheduled != 1 {
		t.Fatalf("%d replicas, %d unscheduled; want 3 with 1 unscheduled", len(reps), unscheduled)
	}
	c := longhorn.GetCondition(f.volume("vol").Status.Conditions, longhorn.VolumeConditionTypeScheduled)
	if c.Status != longhorn.ConditionStatusFalse || c.Reason != longhorn.VolumeConditionReasonReplicaSchedulingFailure ||
		!strings.Contains(c.Message, "replica scheduling failed") {
		t.Fatalf("Scheduled condition %+v", c)
	}
	t.Logf("Scheduled=False message: %s", c.Message)
	if !strings.Contains(c.Message, "n1") || !strings.Contains(c.Message, "n2") {
		t.Fatalf("Scheduled message does not say why n1 and n2 were rejected: %q", c.Message)
	}
}

func (f *fixture) replicaNamed(name string) *longhorn.Replica {
	f.t.Helper()
	for _, r := range f.replicas("vol") {
		if r.Name == name {
			return r
		}
	}
	f.t.Fatalf("no replica %s", name)
	return nil
}

func TestVolumeFewerReplicasDeletesExtras(t *testing.T) {
	f := newFixture(t, threeNodeObjects(newVolume("vol", 3))...)
	f.syncVolume("vol")
	f.syncVolume("vol")
	f.syncVolume("vol")
	v := f.volume("vol")
	if v.Status.State != longhorn.VolumeStateDetached || len(f.replicas("vol")) != 3 {
		t.Fatalf("state %s replicas %d", v.Status.State, len(f.replicas("vol")))
	}
	v.Spec.NumberOfReplicas = 2
	f.updateVolume(v)
	f.syncVolume("vol")
	waitFor(t, func() bool { return len(f.replicas("vol")) == 2 })
}

package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

var cloneTicket = longhorn.GetAttachmentTicketID(longhorn.AttacherTypeVolumeCloneController, "vol")

// cloneSource is volume "src", attached on n2 with a running engine that
// lists snapshot s1, and its VolumeAttachment.
func cloneSource() []runtime.Object {
	src := newVolume("src", 1)
	src.Status = longhorn.VolumeStatus{OwnerID: "n1", State: longhorn.VolumeStateAttached, CurrentNodeID: "n2"}
	e := testEngine(nil)
	e.Name, e.Spec.VolumeName, e.Spec.NodeID = "src-e-0", "src", "n2"
	e.Status.CurrentState, e.Status.IP, e.Status.Port, e.Status.OwnerID = longhorn.InstanceStateRunning, "10.0.0.2", 10200, "n2"
	e.Status.Snapshots = map[string]*longhorn.SnapshotInfo{"s1": {Name: "s1"}}
	va := &longhorn.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "src", Namespace: testNS}, Spec: longhorn.VolumeAttachmentSpec{Volume: "src"}}
	return []runtime.Object{src, e, va}
}

func (f *fixture) tickets(volume string) map[string]*longhorn.AttachmentTicket {
	f.t.Helper()
	va, err := f.lh.LonghornV1beta2().VolumeAttachments(testNS).Get(f.ctx, volume, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return va.Spec.AttachmentTickets
}

// cloneAttached brings clone "vol" (of snap://src/s1) to attached in
// maintenance mode through its clone ticket and returns the engine's modes.
func cloneAttached(t *testing.T) *fixture {
	t.Helper()
	vol := newVolume("vol", 2)
	vol.UID = "0f0e"
	vol.Spec.DataSource = "snap://src/s1"
	f := newFixture(t, threeNodeObjects(append(cloneSource(), vol)...)...)
	for range 3 {
		f.syncVolume("vol")
	}
	cs := f.volume("vol").Status.CloneStatus
	if cs.State != longhorn.VolumeCloneStateInitiated || cs.SourceVolume != "src" || cs.Snapshot != "s1" {
		t.Fatalf("clone status %+v, want initiated src/s1", cs)
	}
	tk := f.tickets("vol")[cloneTicket]
	if tk == nil || tk.NodeID != "n1" || tk.Parameters[longhorn.AttachmentParameterDisableFrontend] != longhorn.TrueValue {
		t.Fatalf("clone ticket of the new volume %+v", tk)
	}
	if st := f.tickets("src")[cloneTicket]; st == nil || st.NodeID != "n2" || st.Parameters[longhorn.AttachmentParameterDisableFrontend] != longhorn.AnyValue {
		t.Fatalf("clone ticket of the source %+v, want one on n2 (where it is attached), frontend any", st)
	}
	if ds := f.engine("vol-e-0").Spec.RequestedDataSource; ds != "" {
		t.Fatalf("engine asked for %q before it runs", ds)
	}
	// The attachment controller's part: the tickets attach the new volume
	// and keep the source attached.
	for _, name := range []string{"vol", "src"} {
		waitFor(t, func() bool {
			a, err := f.ds.GetVolumeAttachmentRO(f.ctx, name)
			return err == nil && a.Spec.AttachmentTickets[cloneTicket] != nil
		})
		f.settle()
		if _, err := fixtureController[*VolumeAttachmentController](f).syncVolumeAttachment(f.ctx, testNS+"/"+name); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool {
		a, err := f.ds.GetVolumeAttachmentRO(f.ctx, "src")
		return err == nil && longhorn.IsAttachmentTicketSatisfied(cloneTicket, a)
	})
	f.settle()
	if v := f.volume("vol"); v.Spec.NodeID != "n1" || !v.Spec.DisableFrontend {
		t.Fatalf("ticket did not attach in maintenance mode: node %q disableFrontend %v", v.Spec.NodeID, v.Spec.DisableFrontend)
	}
	f.syncVolume("vol")
	f.runReplicas("vol")
	f.syncVolume("vol")
	modes := map[string]longhorn.ReplicaMode{}
	for n := range f.engine("vol-e-0").Spec.ReplicaAddressMap {
		modes[n] = longhorn.ReplicaModeRW
	}
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	f.syncVolume("vol")
	if v := f.volume("vol"); v.Status.State != longhorn.VolumeStateAttached {
		t.Fatalf("state %s, want attached", v.Status.State)
	}
	if ds := f.engine("vol-e-0").Spec.RequestedDataSource; ds != "snap://src/s1" {
		t.Fatalf("engine requestedDataSource %q, want snap://src/s1", ds)
	}
	return f
}

// setCloneStatus plays the engine controller: every replica of the engine
// reports st for snapshot s1.
func (f *fixture) setCloneStatus(st longhorn.SnapshotCloneStatus) {
	e := f.engine("vol-e-0")
	e.Status.CloneStatus = map[string]*longhorn.SnapshotCloneStatus{}
	for _, a := range e.Spec.ReplicaAddressMap {
		c := st
		e.Status.CloneStatus["tcp://"+a] = &c
	}
	f.updateEngine(e)
}

// The clone state machine, success: initiated with both tickets, the
// engine asked once the clone runs attached in maintenance mode, completed
// when every replica holds the snapshot, then the request and both tickets
// go.
func TestVolumeCloneCompletes(t *testing.T) {
	f := cloneAttached(t)
	f.setCloneStatus(longhorn.SnapshotCloneStatus{IsCloning: true, State: cloneStateInProgress, SnapshotName: "s1"})
	f.syncVolume("vol")
	if cs := f.volume("vol").Status.CloneStatus; cs.State != longhorn.VolumeCloneStateInitiated {
		t.Fatalf("clone status %+v while copying", cs)
	}
	f.setCloneStatus(longhorn.SnapshotCloneStatus{State: cloneStateComplete, Progress: 100, SnapshotName: "s1"})
	f.syncVolume("vol")
	cs := f.volume("vol").Status.CloneStatus
	if cs.State != longhorn.VolumeCloneStateCompleted || cs.AttemptCount != 0 {
		t.Fatalf("clone status %+v, want completed", cs)
	}
	f.syncVolume("vol")
	if ds := f.engine("vol-e-0").Spec.RequestedDataSource; ds != "" {
		t.Fatalf("engine still asked for %q", ds)
	}
	if f.tickets("vol")[cloneTicket] != nil || f.tickets("src")[cloneTicket] != nil {
		t.Fatalf("clone tickets left: %v / %v", f.tickets("vol"), f.tickets("src"))
	}
	if !hasEvent(f.events(), "Normal VolumeCloneCompleted Volume vol holds snapshot s1 of volume src") {
		t.Fatalf("events %q", f.events())
	}
}

// Failure: state failed, attemptCount 1, nextAllowedAttemptAt after the
// backoff; the engine request goes; at that time a new attempt starts.
func TestVolumeCloneFailureRetriesAfterBackoff(t *testing.T) {
	f := cloneAttached(t)
	f.setCloneStatus(longhorn.SnapshotCloneStatus{State: cloneStateError, Error: "connection refused", SnapshotName: "s1"})
	f.syncVolume("vol")
	cs := f.volume("vol").Status.CloneStatus
	want := f.now.Add(cloneBackoffBase).UTC().Format(time.RFC3339)
	if cs.State != longhorn.VolumeCloneStateFailed || cs.AttemptCount != 1 || cs.NextAllowedAttemptAt != want {
		t.Fatalf("clone status %+v, want failed, 1 attempt, next at %s", cs, want)
	}
	if ds := f.engine("vol-e-0").Spec.RequestedDataSource; ds != "" {
		t.Fatalf("engine still asked for %q after the failure", ds)
	}
	f.syncVolume("vol")
	if cs := f.volume("vol").Status.CloneStatus; cs.State != longhorn.VolumeCloneStateFailed || f.tickets("vol")[cloneTicket] == nil {
		t.Fatalf("before the backoff: %+v, tickets %v", cs, f.tickets("vol"))
	}
	f.now = f.now.Add(cloneBackoffBase)
	f.syncVolume("vol")
	if cs := f.volume("vol").Status.CloneStatus; cs.State != longhorn.VolumeCloneStateInitiated || cs.AttemptCount != 1 {
		t.Fatalf("after the backoff: %+v, want initiated again", cs)
	}
	if ds := f.engine("vol-e-0").Spec.RequestedDataSource; ds != "snap://src/s1" {
		t.Fatalf("engine requestedDataSource %q on the new attempt", ds)
	}
	if !hasEvent(f.events(), "Warning VolumeCloneFailed Cloning snapshot s1 of volume src failed (attempt 1, next in 10s)") {
		t.Fatalf("events %q", f.events())
	}
}

// vol:// asks for a new snapshot of the source (named after the clone's
// UID) and clones that one.
func TestVolumeCloneOfVolumeTakesASnapshot(t *testing.T) {
	vol := newVolume("vol", 1)
	vol.UID = "0f0e-uid"
	vol.Spec.DataSource = "vol://src"
	f := newFixture(t, threeNodeObjects(append(cloneSource(), vol)...)...)
	for range 3 {
		f.syncVolume("vol")
	}
	cs := f.volume("vol").Status.CloneStatus
	if cs.State != longhorn.VolumeCloneStateInitiated || cs.Snapshot != "0f0e-uid" {
		t.Fatalf("clone status %+v", cs)
	}
	s, err := f.lh.LonghornV1beta2().Snapshots(testNS).Get(f.ctx, "0f0e-uid", metav1.GetOptions{})
	if err != nil || s.Spec.Volume != "src" || !s.Spec.CreateSnapshot {
		t.Fatalf("snapshot object %+v, %v", s, err)
	}
}

// Deleting a clone mid-way drops its ticket on the source.
func TestVolumeCloneDeleteDropsSourceTicket(t *testing.T) {
	f := cloneAttached(t)
	v := f.volume("vol")
	now := metav1.NewTime(f.now)
	v.DeletionTimestamp = &now // the fake clientset ignores finalizers on Delete
	f.updateVolume(v)
	for range 8 {
		f.syncVolume("vol")
		if f.tickets("src")[cloneTicket] == nil {
			return
		}
		f.stopEngine("vol-e-0")
	}
	t.Fatalf("source ticket left after the clone was deleted: %v", f.tickets("src"))
}

func (f *fixture) stopEngine(name string) {
	e, err := f.lh.LonghornV1beta2().Engines(testNS).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	e.Status.CurrentState = longhorn.InstanceStateStopped
	f.updateEngine(e)
}

func TestCloneProgressAndBackoff(t *testing.T) {
	e := func(addr, snap, state, errMsg string, cloning bool) cloneEntry {
		return cloneEntry{Addr: addr, Snapshot: snap, State: state, Error: errMsg, Cloning: cloning}
	}
	cases := []struct {
		name          string
		es            []cloneEntry
		cloning, done bool
		failure       string
	}{
		{"nothing yet", nil, false, false, ""},
		{"one copying", []cloneEntry{e("b", "s1", cloneStateInProgress, "", true), e("a", "s1", cloneStateComplete, "", false)}, true, false, ""},
		{"all done", []cloneEntry{e("b", "s1", cloneStateComplete, "", false), e("a", "s1", cloneStateComplete, "", false)}, false, true, ""},
		{"another snapshot's completion", []cloneEntry{e("a", "s0", cloneStateComplete, "", false)}, false, false, ""},
		{"another snapshot's error", []cloneEntry{e("a", "s0", cloneStateError, "x", false)}, false, false, ""},
		{"failures sorted", []cloneEntry{e("b", "s1", cloneStateError, "eb", false), e("a", "s1", cloneStateError, "ea", false)}, false, false,
			"replica a: ea; replica b: eb"},
	}
	for _, tc := range cases {
		c, d, f := cloneProgress("s1", tc.es)
		if c != tc.cloning || d != tc.done || f != tc.failure {
			t.Errorf("%s: cloning %v done %v failure %q", tc.name, c, d, f)
		}
	}
	for attempt, want := range map[int]time.Duration{1: 10 * time.Second, 2: 20 * time.Second, 5: 160 * time.Second, 6: 5 * time.Minute, 50: 5 * time.Minute} {
		if got := cloneBackoff(attempt); got != want {
			t.Errorf("cloneBackoff(%d) = %s, want %s", attempt, got, want)
		}
	}
}

// The engine side: an engine asked for snap://src/s1 polls its replicas'
// clone status, asks once for the clone from the source engine's address
// (a stale error of an earlier attempt is not reported as this one's), and
// mirrors the status.
func TestEngineClonesRequestedDataSource(t *testing.T) {
	eng := testEngine(map[string]string{"r-1": "10.0.0.1:10000"})
	eng.Spec.RequestedDataSource = "snap://src/s1"
	eng.Spec.DisableFrontend = true
	f := newFixture(t, append(append(readyNode("n1"), cloneSource()...), eng)...)
	f.runningIM()
	if _, err := f.syncEngine(); err != nil {
		t.Fatal(err)
	}
	f.fakeIM().setState("vol-e-0", engineapi.InstanceStateRunning)
	ce := f.api.setEngine("vol-e-0", &engineapi.Volume{Name: "vol", Size: 1 << 30},
		[]engineapi.Replica{{Address: "tcp://10.0.0.1:10000", InstanceName: "r-1", Mode: engineapi.ReplicaModeRW}})
	ce.setCloneStatus(map[string]*engineapi.CloneStatus{"tcp://10.0.0.1:10000": {State: cloneStateError, Error: "old attempt", SnapshotName: "s1"}})
	f.syncIM()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 5s", what)
			}
			if _, err := f.syncEngine(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("clone call", func() bool { ce.cloneMu.Lock(); defer ce.cloneMu.Unlock(); return len(ce.clones) > 0 })
	if st := f.engine("vol-e-0").Status.CloneStatus; st != nil && st["tcp://10.0.0.1:10000"].Error == "old attempt" {
		t.Fatalf("stale error mirrored as this attempt's: %+v", st)
	}
	ce.cloneMu.Lock()
	call := ce.clones[0]
	ce.cloneMu.Unlock()
	if call.FromEngineAddress != "10.0.0.2:10200" || call.FromVolumeName != "src" || call.SnapshotName != "s1" {
		t.Fatalf("clone call %+v", call)
	}
	ce.setCloneStatus(map[string]*engineapi.CloneStatus{"tcp://10.0.0.1:10000": {State: cloneStateComplete, Progress: 100, SnapshotName: "s1"}})
	f.now = f.now.Add(time.Second)
	waitFor("mirrored completion", func() bool {
		st := f.engine("vol-e-0").Status.CloneStatus["tcp://10.0.0.1:10000"]
		return st != nil && st.State == cloneStateComplete
	})
	ce.cloneMu.Lock()
	n := len(ce.clones)
	ce.cloneMu.Unlock()
	if n != 1 {
		t.Fatalf("%d clone calls, want 1", n)
	}
	if !hasEvent(f.events(), "Normal SnapshotCloneStarted Cloning snapshot s1 of volume src") {
		t.Fatalf("events %q", f.events())
	}
}

package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// The engine's snapshot list becomes Snapshot objects; deleting one marks
// the snapshot removed and purges; a snapshot the engine dropped loses its
// object.
func TestSnapshotObjectsFollowEngine(t *testing.T) {
	if fe := snapshotObjectsFollowEngine(t, false); fe.purges != 1 {
		t.Fatalf("purges %d, want 1", fe.purges)
	}
	// disable-snapshot-purge: the snapshot is marked removed, not purged.
	if fe := snapshotObjectsFollowEngine(t, true); fe.purges != 0 {
		t.Fatalf("purges %d with disable-snapshot-purge, want 0", fe.purges)
	}
}

func snapshotObjectsFollowEngine(t *testing.T, purgeDisabled bool) *fakeEngine {
	eng := &longhorn.Engine{ObjectMeta: metav1.ObjectMeta{Name: "v1-e-0", Namespace: testNS},
		Spec: longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "v1", VolumeSize: 1 << 30}},
		Status: longhorn.EngineStatus{InstanceStatus: longhorn.InstanceStatus{OwnerID: "n1", CurrentState: longhorn.InstanceStateRunning, IP: "10.0.0.1", Port: 1},
			Snapshots: map[string]*longhorn.SnapshotInfo{
				"volume-head": {Name: "volume-head", Parent: "s1"},
				"s1":          {Name: "s1", Children: map[string]bool{"volume-head": true}, UserCreated: true, Created: "2026-12-01T00:00:00Z", Size: "4096"},
			}}}
	f := newFixture(t, eng)
	if purgeDisabled {
		f.setSetting(types.SettingNameDisableSnapshotPurge, "true")
	}
	fe := f.api.setEngine("v1-e-0", &engineapi.Volume{}, nil)
	fe.snaps = map[string]*engineapi.Snapshot{"s1": {Name: "s1"}}
	c := fixtureController[*SnapshotController](f)
	if _, err := c.sync(f.ctx, engineKeyPrefix+testNS+"/v1-e-0"); err != nil {
		t.Fatal(err)
	}
	s, err := f.lh.LonghornV1beta2().Snapshots(testNS).Get(f.ctx, "s1", metav1.GetOptions{})
	if err != nil || s.Spec.Volume != "v1" || !s.Status.ReadyToUse || s.Status.Size != 4096 || s.Status.RestoreSize != 1<<30 ||
		s.Status.CreationTime != "2026-12-01T00:00:00Z" || len(s.Status.Children) != 0 {
		t.Fatalf("snapshot object: %+v %v", s, err)
	}
	if _, err := f.lh.LonghornV1beta2().Snapshots(testNS).Get(f.ctx, "volume-head", metav1.GetOptions{}); err == nil {
		t.Fatal("the head got a Snapshot object")
	}
	now := metav1.NewTime(f.now)
	s.DeletionTimestamp = &now
	if _, err := f.lh.LonghornV1beta2().Snapshots(testNS).Update(f.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		o, err := f.ds.GetSnapshotRO(f.ctx, "s1")
		return err == nil && o.DeletionTimestamp != nil
	})
	if _, err := c.sync(f.ctx, testNS+"/s1"); err != nil {
		t.Fatal(err)
	}
	if len(fe.removed) != 1 || fe.removed[0] != "s1" {
		t.Fatalf("engine calls: removed %v, purges %d", fe.removed, fe.purges)
	}
	if _, err := f.lh.LonghornV1beta2().Snapshots(testNS).Get(f.ctx, "s1", metav1.GetOptions{}); err == nil {
		t.Fatal("deleted snapshot object still there")
	}
	return fe
}

// A Snapshot object to take on a detached volume puts a snapshot-controller
// ticket in the volume's VolumeAttachment on the owner node; once the
// engine runs and lists the snapshot, the ticket goes.
func TestSnapshotOfDetachedVolumeAttaches(t *testing.T) {
	vol := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: testNS},
		Status: longhorn.VolumeStatus{OwnerID: "n1", State: longhorn.VolumeStateDetached}}
	va := &longhorn.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: testNS},
		Spec: longhorn.VolumeAttachmentSpec{Volume: "v1"}}
	eng := &longhorn.Engine{ObjectMeta: metav1.ObjectMeta{Name: "v1-e-0", Namespace: testNS},
		Spec:   longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "v1", VolumeSize: 1 << 30}},
		Status: longhorn.EngineStatus{InstanceStatus: longhorn.InstanceStatus{OwnerID: "n1", CurrentState: longhorn.InstanceStateStopped}}}
	sn := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snapshot-1", Namespace: testNS},
		Spec: longhorn.SnapshotSpec{Volume: "v1", CreateSnapshot: true}}
	f := newFixture(t, vol, va, eng, sn)
	c := fixtureController[*SnapshotController](f)
	if _, err := c.sync(f.ctx, testNS+"/snapshot-1"); err != nil {
		t.Fatal(err)
	}
	got, err := f.lh.LonghornV1beta2().VolumeAttachments(testNS).Get(f.ctx, "v1", metav1.GetOptions{})
	tk := got.Spec.AttachmentTickets[snapshotTicketID("snapshot-1")]
	if err != nil || tk == nil || tk.Type != longhorn.AttacherTypeSnapshotController || tk.NodeID != "n1" ||
		tk.Parameters[longhorn.AttachmentParameterDisableFrontend] != longhorn.AnyValue {
		t.Fatalf("volume attachment: %+v %v", got.Spec, err)
	}

	// Attached: the engine runs and lists the snapshot; the ticket goes.
	eng.Status.CurrentState, eng.Status.IP, eng.Status.Port = longhorn.InstanceStateRunning, "10.0.0.1", 1
	eng.Status.Snapshots = map[string]*longhorn.SnapshotInfo{"snapshot-1": {Name: "snapshot-1", Created: "2026-12-02T00:00:00Z", Size: "0"}}
	if _, err := f.lh.LonghornV1beta2().Engines(testNS).UpdateStatus(f.ctx, eng, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		e, err := f.ds.GetEngineRO(f.ctx, "v1-e-0")
		return err == nil && e.Status.Snapshots["snapshot-1"] != nil
	})
	waitFor(t, func() bool {
		v, err := f.ds.GetVolumeAttachmentRO(f.ctx, "v1")
		return err == nil && v.Spec.AttachmentTickets[snapshotTicketID("snapshot-1")] != nil
	})
	if _, err := c.sync(f.ctx, testNS+"/snapshot-1"); err != nil {
		t.Fatal(err)
	}
	got, err = f.lh.LonghornV1beta2().VolumeAttachments(testNS).Get(f.ctx, "v1", metav1.GetOptions{})
	if err != nil || len(got.Spec.AttachmentTickets) != 0 {
		t.Fatalf("ticket left after the snapshot was taken: %+v %v", got.Spec, err)
	}
	s, err := f.lh.LonghornV1beta2().Snapshots(testNS).Get(f.ctx, "snapshot-1", metav1.GetOptions{})
	if err != nil || !s.Status.ReadyToUse {
		t.Fatalf("snapshot status: %+v %v", s, err)
	}
}

// A Snapshot object to take on a detached volume whose volume got attached
// on another node than its owner's (for another ticket, e.g. a clone's):
// the engine owner's controller takes it once the engine runs. Before, the
// volume owner's sync left it to the engine owner and nothing woke that
// one (e2e TestPVCVolumeSnapshot: a vol:// clone waited for its source
// snapshot for good).
func TestSnapshotTakenByEngineOwner(t *testing.T) {
	vol := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: testNS},
		Status: longhorn.VolumeStatus{OwnerID: "n2", State: longhorn.VolumeStateAttached}}
	eng := &longhorn.Engine{ObjectMeta: metav1.ObjectMeta{Name: "v1-e-0", Namespace: testNS},
		Spec: longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "v1", VolumeSize: 1 << 30}},
		Status: longhorn.EngineStatus{InstanceStatus: longhorn.InstanceStatus{OwnerID: "n1", CurrentState: longhorn.InstanceStateRunning, IP: "10.0.0.1", Port: 1},
			Snapshots: map[string]*longhorn.SnapshotInfo{"volume-head": {Name: "volume-head", Parent: "snapshot-1"},
				"snapshot-1": {Name: "snapshot-1", Created: "2026-12-01T00:00:00Z", Size: "0"}}}}
	pending := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snapshot-2", Namespace: testNS},
		Spec: longhorn.SnapshotSpec{Volume: "v1", CreateSnapshot: true}}
	taken := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snapshot-1", Namespace: testNS},
		Spec: longhorn.SnapshotSpec{Volume: "v1", CreateSnapshot: true}, Status: longhorn.SnapshotStatus{CreationTime: "2026-12-01T00:00:00Z"}}
	f := newFixture(t, vol, eng, pending, taken)
	fe := f.api.setEngine("v1-e-0", &engineapi.Volume{}, nil)
	c := fixtureController[*SnapshotController](f)
	drainQueue(c.w) // what the informers queued at start
	if _, err := c.sync(f.ctx, engineKeyPrefix+testNS+"/v1-e-0"); err != nil {
		t.Fatal(err)
	}
	queued := drainQueue(c.w)
	if len(queued) != 1 || queued[0] != testNS+"/snapshot-2" {
		t.Fatalf("queued after the engine sync: %v, want only %s/snapshot-2", queued, testNS)
	}
	if _, err := c.sync(f.ctx, queued[0]); err != nil {
		t.Fatal(err)
	}
	if len(fe.taken) != 1 || fe.taken[0] != "snapshot-2" {
		t.Fatalf("snapshots taken: %v, want [snapshot-2]", fe.taken)
	}
	if got := snapshotsAwaitingEngine([]*longhorn.Snapshot{pending, taken}); len(got) != 1 || got[0] != "snapshot-2" {
		t.Fatalf("snapshotsAwaitingEngine: %v", got)
	}
}

func TestSnapshotNeedsEngine(t *testing.T) {
	now := metav1.Now()
	pending := &longhorn.Snapshot{Spec: longhorn.SnapshotSpec{CreateSnapshot: true}}
	taken := &longhorn.Snapshot{Spec: longhorn.SnapshotSpec{CreateSnapshot: true}, Status: longhorn.SnapshotStatus{CreationTime: "t"}}
	deleting := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}
	for _, c := range []struct {
		s         *longhorn.Snapshot
		hasEngine bool
		want      bool
	}{{pending, true, true}, {pending, false, true}, {taken, true, false}, {deleting, true, true}, {deleting, false, false},
		{&longhorn.Snapshot{}, true, false}} {
		if got := snapshotNeedsEngine(c.s, c.hasEngine); got != c.want {
			t.Errorf("snapshotNeedsEngine(%+v, %v) = %v", c.s, c.hasEngine, got)
		}
	}
}

// drainQueue takes every key off the worker's queue until it stayed empty
// for 200 ms (informer events arrive late) and returns them in order.
func drainQueue(w *Worker) []string {
	var keys []string
	for quiet := time.Now(); time.Since(quiet) < 200*time.Millisecond; {
		if w.Len() == 0 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		k, _ := w.queue.Get()
		w.queue.Done(k)
		keys = append(keys, k)
		quiet = time.Now()
	}
	return keys
}

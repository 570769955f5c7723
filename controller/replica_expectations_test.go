package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func TestReplicaExpectations(t *testing.T) {
	e := newReplicaExpectations()
	r := &longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: "vol-r-0a0b0c0d"}, Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol"}}}
	e.created(r, t0)
	if got := e.pending("vol", nil, t0.Add(time.Second)); len(got) != 1 || got[0] != r {
		t.Fatalf("pending before the cache shows it: %v", got)
	}
	if got := e.pending("vol", map[string]*longhorn.Replica{r.Name: r}, t0.Add(time.Second)); len(got) != 0 {
		t.Fatalf("pending once cached: %v", got)
	}
	e.created(r, t0)
	e.observed(r, t0)
	if got := e.pending("vol", nil, t0); len(got) != 0 {
		t.Fatalf("pending after the informer saw it: %v", got)
	}
	// The informer's add event can arrive before the create call returns.
	early := &longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: "vol-r-1a1b1c1d"}, Spec: r.Spec}
	e.observed(early, t0)
	e.created(early, t0)
	if got := e.pending("vol", nil, t0); len(got) != 0 {
		t.Fatalf("pending after an event that beat the create: %v", got)
	}
	e.created(r, t0)
	if got := e.pending("vol", nil, t0.Add(replicaExpectationTimeout+time.Second)); len(got) != 0 {
		t.Fatalf("pending after the timeout: %v", got)
	}
}

// A replica that replaces a deleted one gets a name, and so a data
// directory, that no replica of the volume had before.
func TestReplacementReplicaNeverReusesAName(t *testing.T) {
	f := newFixture(t, threeNodeObjects(newVolume("vol", 3))...)
	names, dirs := map[string]bool{}, map[string]bool{}
	for round := 0; round < 5; round++ {
		for i := 0; i < 4 && len(f.replicas("vol")) < 3; i++ {
			f.syncVolume("vol")
		}
		reps := f.replicas("vol")
		if len(reps) != 3 {
			t.Fatalf("round %d: %d replicas", round, len(reps))
		}
		for _, r := range reps {
			if r.Spec.DataDirectoryName == "" {
				f.syncVolume("vol")
				r = f.replicaNamed(r.Name)
			}
			names[r.Name], dirs[r.Spec.DataDirectoryName] = true, true
		}
		if len(names) != 3+round || len(dirs) != 3+round {
			t.Fatalf("round %d: %d names, %d data directories over %d replicas ever made", round, len(names), len(dirs), 3+round)
		}
		victim := reps[0]
		if err := f.lh.LonghornV1beta2().Replicas(testNS).Delete(f.ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The informer updates its cache before it calls the handlers: wait
		// for the delete handler too (a worker would be enqueued by it).
		vc := fixtureController[*VolumeController](f)
		waitFor(t, func() bool {
			_, err := f.ds.GetReplicaRO(f.ctx, victim.Name)
			return err != nil && len(vc.expect.pending("vol", map[string]*longhorn.Replica{}, f.now)) == 0
		})
	}
}

// All replicas and the engine killed, replacements made but never placed:
// the volume is faulted (its every data-holding replica failed), so
// auto-salvage brings the newest replicas back, status and events agree,
// and lowering the replica count removes the unplaced replicas.
func TestAllReplicasFailedSalvagesAndDropsUnplaced(t *testing.T) {
	v := newVolume("vol", 3)
	v.Status.OwnerID, v.Status.State = "n1", longhorn.VolumeStateDetached
	e := &longhorn.Engine{ObjectMeta: metav1.ObjectMeta{Name: "vol-e-0", Namespace: testNS},
		Spec: longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol", DesireState: longhorn.InstanceStateStopped}}}
	objs := []runtime.Object{v, e}
	for _, n := range []string{"n1", "n2", "n3"} {
		node := readyNode(n)
		node[0].(*longhorn.Node).Spec.AllowScheduling = false // nothing new can be placed
		objs = append(objs, node...)
	}
	mk := func(name, node, failedAt string) *longhorn.Replica {
		r := testReplica(name, longhorn.InstanceStateStopped)
		r.Spec.NodeID, r.Spec.FailedAt, r.Spec.HealthyAt = node, failedAt, "2026-01-01T00:00:00Z"
		if node != "" {
			r.Spec.DiskID = node + "-disk"
		} else {
			r.Spec.DiskPath, r.Spec.DataDirectoryName, r.Spec.HealthyAt = "", "", ""
		}
		r.Labels = map[string]string{"longhornvolume": "vol"}
		return r
	}
	objs = append(objs, mk("vol-r-a", "n1", "2026-01-01T00:00:01Z"), mk("vol-r-b", "n2", "2026-01-01T00:00:02Z"),
		mk("vol-r-c", "n3", "2026-01-01T00:00:03Z"), mk("vol-r-u1", "", ""), mk("vol-r-u2", "", ""), mk("vol-r-u3", "", ""))
	f := newFixture(t, objs...)
	f.syncVolume("vol")
	salvaged := 0
	for _, r := range f.replicas("vol") {
		if r.Spec.NodeID != "" && r.Spec.FailedAt == "" {
			salvaged++
		}
	}
	vs := f.volume("vol").Status
	ev := f.events()
	if salvaged != 3 || vs.LastAutoSalvagedAt == "" || vs.Robustness != longhorn.VolumeRobustnessFaulted ||
		!hasEvent(ev, "Warning Faulted") || !hasEvent(ev, "Warning AutoSalvaged Salvaged 3 replica(s)") {
		t.Fatalf("salvaged %d, status %s lastAutoSalvagedAt %q, events %q", salvaged, vs.Robustness, vs.LastAutoSalvagedAt, ev)
	}
	v = f.volume("vol")
	v.Spec.NumberOfReplicas = 1
	f.updateVolume(v)
	f.syncVolume("vol")
	for _, r := range f.replicas("vol") {
		if r.Spec.NodeID == "" {
			t.Fatalf("unplaced replica %s left with 3 salvaged replicas for numberOfReplicas 1", r.Name)
		}
	}
}

package controller

import (
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// attachedHealthy brings volume "vol" (3 replicas on n1-n3) to attached and
// healthy on n1, playing the replica and engine controllers, and returns
// the engine's replica modes (all RW).
func attachedHealthy(t *testing.T, extra ...runtime.Object) (*fixture, map[string]longhorn.ReplicaMode) {
	t.Helper()
	f := newFixture(t, threeNodeObjects(append(extra, newVolume("vol", 3))...)...)
	for range 3 {
		f.syncVolume("vol")
	}
	return f, f.attachOn(t, "n1")
}

// failInEngine reports replica name ERR, then drops it from the engine, as
// the engine monitor would.
func failInEngine(f *fixture, modes map[string]longhorn.ReplicaMode, name string) {
	modes[name] = longhorn.ReplicaModeERR
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	delete(modes, name)
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
}

func sortedNames(m map[string]longhorn.ReplicaMode) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// A failed replica that may come back (its process has not stopped yet, so
// it cannot be reused now) holds off a new replica for exactly
// replica-replenishment-wait-interval after the volume became degraded.
func TestVolumeReplenishAfterWaitInterval(t *testing.T) {
	f, modes := attachedHealthy(t, setting(types.SettingNameReplicaReplenishmentWaitInterval, "120"))
	victim := sortedNames(modes)[0]
	failInEngine(f, modes, victim)
	if v := f.volume("vol"); v.Status.Robustness != longhorn.VolumeRobustnessDegraded {
		t.Fatalf("robustness %s", v.Status.Robustness)
	}
	degradedAt := f.now
	for _, wait := range []time.Duration{0, 60 * time.Second, 119 * time.Second} {
		f.now = degradedAt.Add(wait)
		res := f.syncVolume("vol")
		if n := len(f.replicas("vol")); n != 3 {
			t.Fatalf("%v into the wait: %d replicas, want 3", wait, n)
		}
		if res.RequeueAfter <= 0 || res.RequeueAfter > 121*time.Second-wait { // Longhorn waits 1 s past the interval
			t.Fatalf("%v into the wait: requeue after %v, want at most %v", wait, res.RequeueAfter, 120*time.Second-wait)
		}
	}
	f.now = degradedAt.Add(120 * time.Second)
	f.syncVolume("vol")
	var fresh []*longhorn.Replica
	for _, r := range f.replicas("vol") {
		if _, known := modes[r.Name]; !known && r.Name != victim {
			fresh = append(fresh, r)
		}
	}
	if len(fresh) != 1 || fresh[0].Spec.FailedAt != "" {
		t.Fatalf("after the wait: new replicas %v, want one", fresh)
	}
	if f.replicaNamed(victim).Spec.FailedAt == "" {
		t.Fatal("the failed replica was revived as well")
	}
}

// Rebuilding one replica at a time: while a new replica rebuilds (WO), a
// second failure does not start another replacement.
func TestVolumeReplenishOneAtATime(t *testing.T) {
	f, modes := attachedHealthy(t, setting(types.SettingNameReplicaReplenishmentWaitInterval, "0"))
	names := sortedNames(modes)
	failInEngine(f, modes, names[0])
	f.syncVolume("vol")
	if n := len(f.replicas("vol")); n != 4 {
		t.Fatalf("%d replicas after the first failure, want 4 (one new)", n)
	}
	failInEngine(f, modes, names[1])
	f.syncVolume("vol")
	if n := len(f.replicas("vol")); n != 4 {
		t.Fatalf("%d replicas while the first replacement rebuilds, want 4", n)
	}
}

// stopAll plays the engine and replica controllers after the volume asked
// everything to stop.
func (f *fixture) stopAll() {
	e := f.engine("vol-e-0")
	e.Status.CurrentState, e.Status.Started, e.Status.Endpoint, e.Status.ReplicaModeMap = longhorn.InstanceStateStopped, false, "", nil
	f.updateEngine(e)
	for _, r := range f.replicas("vol") {
		r.Status.CurrentState, r.Status.Started = longhorn.InstanceStateStopped, false
		f.updateReplica(r)
	}
}

// All replicas fail: the volume becomes faulted and detaches; with
// auto-salvage on, the replicas that failed last lose their failure mark so
// the volume can attach again; with it off, they stay failed.
func TestVolumeAutoSalvage(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "auto-salvage on", false: "auto-salvage off"}[on], func(t *testing.T) {
			f, modes := attachedHealthy(t, setting(types.SettingNameAutoSalvage, map[bool]string{true: "true", false: "false"}[on]))
			for n := range modes {
				modes[n] = longhorn.ReplicaModeERR
			}
			f.runEngine("vol-e-0", modes)
			f.syncVolume("vol")
			f.syncVolume("vol")
			if v := f.volume("vol"); v.Status.Robustness != longhorn.VolumeRobustnessFaulted || v.Status.State != longhorn.VolumeStateDetaching {
				t.Fatalf("all replicas failed: %s/%s, want detaching/faulted", v.Status.State, v.Status.Robustness)
			}
			f.stopAll()
			f.syncVolume("vol")
			f.syncVolume("vol")
			v := f.volume("vol")
			failedLeft := 0
			for _, r := range f.replicas("vol") {
				if r.Spec.FailedAt != "" {
					failedLeft++
				}
			}
			switch {
			case on && (failedLeft != 0 || v.Status.LastAutoSalvagedAt == ""):
				t.Fatalf("salvage: %d replicas still failed, lastAutoSalvagedAt %q", failedLeft, v.Status.LastAutoSalvagedAt)
			case !on && (failedLeft != 3 || v.Status.LastAutoSalvagedAt != ""):
				t.Fatalf("no salvage expected: %d failed, lastAutoSalvagedAt %q", failedLeft, v.Status.LastAutoSalvagedAt)
			}
			if on {
				// The ticket still asks for n1: the salvaged volume attaches again.
				f.syncVolume("vol")
				if v := f.volume("vol"); v.Status.State != longhorn.VolumeStateAttaching {
					t.Fatalf("after salvage: state %s, want attaching", v.Status.State)
				}
			}
		})
	}
}

// Restore and TooManySnapshots conditions follow the engine's snapshots and
// snapshot-count-warning-threshold.
func TestVolumeSnapshotConditions(t *testing.T) {
	f, modes := attachedHealthy(t, setting(types.SettingNameSnapshotCountWarningThreshold, "2"))
	cond := func(typ string) longhorn.Condition {
		return longhorn.GetCondition(f.volume("vol").Status.Conditions, typ)
	}
	if c := cond(longhorn.VolumeConditionTypeRestore); c.Status != longhorn.ConditionStatusFalse {
		t.Fatalf("Restore %+v, want False (no restore)", c)
	}
	if c := cond(longhorn.VolumeConditionTypeTooManySnapshots); c.Status != longhorn.ConditionStatusFalse {
		t.Fatalf("TooManySnapshots %+v with no snapshots", c)
	}
	snaps := map[string]*longhorn.SnapshotInfo{
		"volume-head": {Name: "volume-head", Size: "4096"},
		"s1":          {Name: "s1", Size: "1048576"},
		"gone":        {Name: "gone", Size: "0", Removed: true},
	}
	set := func() {
		f.runEngine("vol-e-0", modes)
		e := f.engine("vol-e-0")
		e.Status.Snapshots = snaps
		f.updateEngine(e)
		f.syncVolume("vol")
	}
	set()
	if c := cond(longhorn.VolumeConditionTypeTooManySnapshots); c.Status != longhorn.ConditionStatusFalse {
		t.Fatalf("TooManySnapshots %+v with 1 snapshot, threshold 2", c)
	}
	if v := f.volume("vol"); v.Status.ActualSize != 4096+1048576 {
		t.Fatalf("actualSize %d", v.Status.ActualSize)
	}
	snaps["s2"] = &longhorn.SnapshotInfo{Name: "s2", Size: "0"}
	set()
	if c := cond(longhorn.VolumeConditionTypeTooManySnapshots); c.Status != longhorn.ConditionStatusTrue ||
		c.Reason != longhorn.VolumeConditionReasonTooManySnapshots {
		t.Fatalf("TooManySnapshots %+v with 2 snapshots, threshold 2", c)
	}
}

// Offline expansion: a detached volume's new size goes to the engine and
// every replica spec, so their processes start at the new size; online
// expansion is left to the running engine (ExpansionRequired until its
// current size catches up).
func TestVolumeExpansionSizes(t *testing.T) {
	f := newFixture(t, threeNodeObjects(newVolume("vol", 3))...)
	for range 3 {
		f.syncVolume("vol")
	}
	v := f.volume("vol")
	v.Spec.Size = 2 << 30
	f.updateVolume(v)
	f.syncVolume("vol")
	if e := f.engine("vol-e-0"); e.Spec.VolumeSize != 2<<30 {
		t.Fatalf("engine size %d", e.Spec.VolumeSize)
	}
	for _, r := range f.replicas("vol") {
		if r.Spec.VolumeSize != 2<<30 {
			t.Fatalf("replica %s size %d", r.Name, r.Spec.VolumeSize)
		}
	}
	if f.volume("vol").Status.ExpansionRequired {
		t.Fatal("detached volume marked expansionRequired")
	}

	f, modes := attachedHealthy(t)
	v = f.volume("vol")
	v.Spec.Size = 2 << 30
	f.updateVolume(v)
	e := f.engine("vol-e-0")
	e.Status.CurrentSize = 1 << 30
	f.updateEngine(e)
	f.syncVolume("vol")
	if !f.volume("vol").Status.ExpansionRequired || f.engine("vol-e-0").Spec.VolumeSize != 2<<30 {
		t.Fatal("attached volume: engine not asked to grow, or expansionRequired not set")
	}
	f.runEngine("vol-e-0", modes)
	e = f.engine("vol-e-0")
	e.Status.CurrentSize = 2 << 30
	f.updateEngine(e)
	f.syncVolume("vol")
	if v := f.volume("vol"); v.Status.ExpansionRequired || v.Status.Robustness != longhorn.VolumeRobustnessHealthy {
		t.Fatalf("after the engine grew: expansionRequired=%v robustness=%s", v.Status.ExpansionRequired, v.Status.Robustness)
	}
}

package controller

import (
	"strings"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// setAllowScheduling sets node spec.allowScheduling and waits for the cache.
func (f *fixture) setAllowScheduling(name string, on bool) {
	f.t.Helper()
	f.updateNodeSpec(name, func(spec *longhorn.NodeSpec) { spec.AllowScheduling = on })
}

// remoteVolume creates vol (2 replicas, the given locality) on n1-n3 with
// its replicas on n2 and n3 (n1 refuses scheduling until they are placed),
// then attaches it on n1, the fixture's own node, and returns the engine's
// modes and the replicas' nodes before the attachment.
func remoteVolume(t *testing.T, locality longhorn.DataLocality) (*fixture, map[string]longhorn.ReplicaMode, map[string]string) {
	t.Helper()
	vol := newVolume("vol", 2)
	vol.Spec.DataLocality = locality
	objs := threeNodeObjects(vol)
	objs[0].(*longhorn.Node).Spec.AllowScheduling = false
	f := newFixture(t, objs...)
	for range 3 {
		f.syncVolume("vol")
	}
	before := f.replicaNodes("vol")
	for _, n := range before {
		if n == "n1" || n == "" {
			t.Fatalf("setup: replicas %v, want them on n2 and n3", before)
		}
	}
	f.setAllowScheduling("n1", true)
	return f, f.attachOn(t, "n1"), before
}

// replicaNodes maps each replica of volume to its node.
func (f *fixture) replicaNodes(volume string) map[string]string {
	out := map[string]string{}
	for _, r := range f.replicas(volume) {
		out[r.Name] = r.Spec.NodeID
	}
	return out
}

// attachOn brings volume "vol" to attached on node, every replica RW, and
// returns the engine's modes.
func (f *fixture) attachOn(t *testing.T, node string) map[string]longhorn.ReplicaMode {
	t.Helper()
	v := f.volume("vol")
	v.Spec.NodeID = node
	f.updateVolume(v)
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
	if v := f.volume("vol"); v.Status.State != longhorn.VolumeStateAttached || v.Status.Robustness != longhorn.VolumeRobustnessHealthy {
		t.Fatalf("setup: %s/%s, want attached/healthy on %s", v.Status.State, v.Status.Robustness, node)
	}
	return modes
}

// Data locality best-effort: a 2-replica volume attached on the one node
// without a replica gets a replica there (hard node affinity to it); while
// it rebuilds both remote replicas stay; once it is RW, one remote replica
// is deleted and the local one is kept.
func TestVolumeDataLocalityBestEffort(t *testing.T) {
	f, modes, before := remoteVolume(t, longhorn.DataLocalityBestEffort)
	free := "n1"
	f.syncVolume("vol")
	var local *longhorn.Replica
	for _, r := range f.replicas("vol") {
		if _, old := before[r.Name]; !old {
			local = r
		}
	}
	if local == nil || local.Spec.NodeID != free || local.Spec.HardNodeAffinity != free || len(f.replicas("vol")) != 3 {
		t.Fatalf("after attaching on %s: replicas %v, want a third one on %s", free, f.replicaNodes("vol"), free)
	}
	f.runReplicas("vol")
	f.syncVolume("vol")
	if _, ok := f.engine("vol-e-0").Spec.ReplicaAddressMap[local.Name]; !ok {
		t.Fatalf("engine replicaAddressMap %v lacks the local replica", f.engine("vol-e-0").Spec.ReplicaAddressMap)
	}
	modes[local.Name] = longhorn.ReplicaModeWO
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	f.syncVolume("vol")
	if n := len(f.replicas("vol")); n != 3 {
		t.Fatalf("while the local replica rebuilds: %d replicas %v, want 3", n, f.replicaNodes("vol"))
	}
	modes[local.Name] = longhorn.ReplicaModeRW
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	waitFor(t, func() bool { return len(f.replicas("vol")) == 2 })
	after := f.replicaNodes("vol")
	if after[local.Name] != free {
		t.Fatalf("after the local replica is RW: replicas %v, want the one on %s kept", after, free)
	}
	f.syncVolume("vol")
	if n := len(f.replicas("vol")); n != 2 {
		t.Fatalf("the volume settled at %d replicas %v, want 2", n, f.replicaNodes("vol"))
	}
}

// Data locality disabled: the same attachment adds no replica.
func TestVolumeDataLocalityDisabledAddsNone(t *testing.T) {
	f, _, _ := remoteVolume(t, longhorn.DataLocalityDisabled)
	f.syncVolume("vol")
	f.syncVolume("vol")
	if n := len(f.replicas("vol")); n != 2 {
		t.Fatalf("%d replicas %v, want 2", n, f.replicaNodes("vol"))
	}
}

func strictVolume(t *testing.T) *fixture {
	t.Helper()
	vol := newVolume("vol", 1)
	vol.Spec.DataLocality = longhorn.DataLocalityStrictLocal
	f := newFixture(t, threeNodeObjects(vol)...)
	for range 3 {
		f.syncVolume("vol")
	}
	return f
}

// Data locality strict-local: the single replica waits unplaced (Scheduled
// False, LocalReplicaSchedulingFailure) until the volume is asked to attach,
// then is placed on that node with hard node affinity to it, and the engine
// runs there.
func TestVolumeDataLocalityStrictLocal(t *testing.T) {
	f := strictVolume(t)
	reps := f.replicas("vol")
	if len(reps) != 1 || reps[0].Spec.NodeID != "" {
		t.Fatalf("detached: replicas %v, want one unplaced", f.replicaNodes("vol"))
	}
	c := longhorn.GetCondition(f.volume("vol").Status.Conditions, longhorn.VolumeConditionTypeScheduled)
	if c.Status != longhorn.ConditionStatusFalse || c.Reason != longhorn.VolumeConditionReasonLocalReplicaSchedulingFailure {
		t.Fatalf("detached: Scheduled %s/%s %q", c.Status, c.Reason, c.Message)
	}
	f.attachOn(t, "n1")
	r := f.replicas("vol")[0]
	if r.Spec.NodeID != "n1" || r.Spec.HardNodeAffinity != "n1" || f.engine("vol-e-0").Spec.NodeID != "n1" {
		t.Fatalf("attached: replica on %q (affinity %q), engine on %q, want all n1", r.Spec.NodeID, r.Spec.HardNodeAffinity,
			f.engine("vol-e-0").Spec.NodeID)
	}
	if c := longhorn.GetCondition(f.volume("vol").Status.Conditions, longhorn.VolumeConditionTypeScheduled); c.Status != longhorn.ConditionStatusTrue {
		t.Fatalf("attached: Scheduled %s/%s %q", c.Status, c.Reason, c.Message)
	}
}

// A strict-local volume whose replica sits on another node does not attach:
// no replica or engine starts, and the Scheduled condition says why.
func TestVolumeDataLocalityStrictLocalAttachesOnlyOnItsNode(t *testing.T) {
	f := strictVolume(t)
	r := f.replicas("vol")[0]
	r.Spec.NodeID, r.Spec.DiskID, r.Spec.DiskPath = "n2", "n2-disk", "/var/lib/longhorn"
	f.updateReplica(r)
	v := f.volume("vol")
	v.Spec.NodeID = "n1"
	f.updateVolume(v)
	for range 3 {
		f.syncVolume("vol")
	}
	v = f.volume("vol")
	if v.Status.State != longhorn.VolumeStateDetached || f.engine("vol-e-0").Spec.DesireState == longhorn.InstanceStateRunning ||
		f.replicas("vol")[0].Spec.DesireState == longhorn.InstanceStateRunning {
		t.Fatalf("state %s, engine desire %s, replica desire %s: want nothing started", v.Status.State,
			f.engine("vol-e-0").Spec.DesireState, f.replicas("vol")[0].Spec.DesireState)
	}
	c := longhorn.GetCondition(v.Status.Conditions, longhorn.VolumeConditionTypeScheduled)
	if c.Reason != longhorn.VolumeConditionReasonLocalReplicaSchedulingFailure || !strings.Contains(c.Message, "is on node n2") {
		t.Fatalf("Scheduled %s/%s %q", c.Status, c.Reason, c.Message)
	}
}

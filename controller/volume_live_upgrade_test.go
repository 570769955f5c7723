package controller

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

const nextImage = "longhorn:next"

// nextImageObjects are the second build on n1-n3: its EngineImage and a
// running instance manager of it beside each node's first one.
func nextImageObjects() []runtime.Object {
	out := []runtime.Object{&longhorn.EngineImage{ObjectMeta: metav1.ObjectMeta{Name: types.EngineImageName(nextImage), Namespace: testNS},
		Spec: longhorn.EngineImageSpec{Image: nextImage}}}
	for _, n := range []string{"n1", "n2", "n3"} {
		out = append(out, &longhorn.InstanceManager{
			ObjectMeta: metav1.ObjectMeta{Name: types.InstanceManagerName(n, nextImage, longhorn.DataEngineTypeV1), Namespace: testNS},
			Spec:       longhorn.InstanceManagerSpec{Image: nextImage, NodeID: n, DataEngine: longhorn.DataEngineTypeV1},
			Status:     longhorn.InstanceManagerStatus{CurrentState: longhorn.InstanceManagerStateRunning, IP: "10.0.1." + n[1:]},
		})
	}
	return out
}

// startLiveUpgrade brings "vol" attached and healthy, sets spec.image to
// nextImage and runs the volume controller until the engine's spec asks
// for the upgrade; it returns the old replicas (name -> data directory) and
// the twins (name -> data directory).
func startLiveUpgrade(t *testing.T) (*fixture, map[string]string, map[string]string) {
	t.Helper()
	f, _ := attachedHealthy(t, nextImageObjects()...)
	old := dirsByName(f.replicas("vol"))
	v := f.volume("vol")
	v.Spec.Image = nextImage
	f.updateVolume(v)
	f.syncVolume("vol")
	twins := map[string]string{}
	for _, r := range f.replicas("vol") {
		if _, isOld := old[r.Name]; isOld {
			continue
		}
		if r.Spec.Active || r.Spec.Image != nextImage || r.Spec.DesireState != longhorn.InstanceStateRunning {
			t.Fatalf("twin %s: %+v", r.Name, r.Spec)
		}
		twins[r.Name] = r.Spec.NodeID + ":" + r.Spec.DataDirectoryName
	}
	if !slices.Equal(sortedValues(twins), sortedValues(old)) {
		t.Fatalf("twins on %v, replicas on %v: want the same data directories", twins, old)
	}
	if e := f.engine("vol-e-0"); e.Spec.Image != "longhorn:test" || len(e.Spec.UpgradedReplicaAddressMap) != 0 {
		t.Fatalf("engine asked to upgrade before the twins run: %+v", e.Spec)
	}
	f.runReplicas("vol")
	f.syncVolume("vol")
	e := f.engine("vol-e-0")
	if e.Spec.Image != nextImage || !slices.Equal(slices.Sorted(maps.Keys(e.Spec.UpgradedReplicaAddressMap)), slices.Sorted(maps.Keys(twins))) {
		t.Fatalf("engine spec after the twins run: image %s upgraded map %v, twins %v", e.Spec.Image, e.Spec.UpgradedReplicaAddressMap, twins)
	}
	return f, old, twins
}

func dirsByName(rs []*longhorn.Replica) map[string]string {
	out := map[string]string{}
	for _, r := range rs {
		out[r.Name] = r.Spec.NodeID + ":" + r.Spec.DataDirectoryName
	}
	return out
}

func sortedValues(m map[string]string) []string { return slices.Sorted(maps.Values(m)) }

// The volume controller's side of a live upgrade that succeeds: once the
// engine runs the new image (the engine controller switched), the twins are
// the engine's replicas, active and healthy, the old replicas go, and
// status.currentImage follows; the volume stays attached and healthy.
func TestVolumeLiveUpgrade(t *testing.T) {
	f, old, twins := startLiveUpgrade(t)
	e := f.engine("vol-e-0")
	e.Status.CurrentImage = nextImage
	e.Status.ReplicaModeMap = map[string]longhorn.ReplicaMode{}
	for n := range twins {
		e.Status.ReplicaModeMap[n] = longhorn.ReplicaModeRW
	}
	f.updateEngine(e)
	f.syncVolume("vol")
	v := f.volume("vol")
	if v.Status.CurrentImage != nextImage || v.Status.State != longhorn.VolumeStateAttached || v.Status.Robustness != longhorn.VolumeRobustnessHealthy {
		t.Fatalf("volume %s/%s image %s", v.Status.State, v.Status.Robustness, v.Status.CurrentImage)
	}
	e = f.engine("vol-e-0")
	if len(e.Spec.UpgradedReplicaAddressMap) != 0 || !slices.Equal(slices.Sorted(maps.Keys(e.Spec.ReplicaAddressMap)), slices.Sorted(maps.Keys(twins))) {
		t.Fatalf("engine replicas %v upgraded %v, want the twins %v", e.Spec.ReplicaAddressMap, e.Spec.UpgradedReplicaAddressMap, twins)
	}
	left := dirsByName(f.replicas("vol"))
	if !maps.Equal(left, twins) {
		t.Fatalf("replicas %v, want only the twins %v (old %v)", left, twins, old)
	}
	for _, r := range f.replicas("vol") {
		if !r.Spec.Active || r.Spec.HealthyAt == "" {
			t.Fatalf("replica %s after the upgrade: %+v", r.Name, r.Spec)
		}
	}
	if !hasEvent(f.events(), "Normal EngineUpgraded") {
		t.Fatal("no EngineUpgraded event")
	}
}

// A failed attempt (the engine controller reports FailedEngineUpgrade after
// the old engine serves again) is rolled back: spec.image is the current
// image again, the engine's spec too, and the twins go; while the engine
// controller still holds the upgrade, the twins stay.
func TestVolumeLiveUpgradeRollback(t *testing.T) {
	f, old, _ := startLiveUpgrade(t)
	setPhase := func(p lifecycle.EngineUpgradePhase, st longhorn.ConditionStatus) {
		e := f.engine("vol-e-0")
		e.Status.Conditions = longhorn.SetCondition(e.Status.Conditions, longhorn.EngineConditionTypeLiveUpgrade, st, string(p),
			"the new engine exited: listen: address in use", "2026-12-01T00:00:00Z")
		f.updateEngine(e)
	}
	setPhase(lifecycle.UpgradeAborting, longhorn.ConditionStatusTrue)
	f.syncVolume("vol")
	if n := len(f.replicas("vol")); n != 6 || f.volume("vol").Spec.Image != nextImage {
		t.Fatalf("while aborting: %d replicas, spec.image %s", n, f.volume("vol").Spec.Image)
	}
	setPhase(lifecycle.UpgradeFailed, longhorn.ConditionStatusFalse)
	f.syncVolume("vol")
	v, e := f.volume("vol"), f.engine("vol-e-0")
	if v.Spec.Image != "longhorn:test" || v.Status.CurrentImage != "longhorn:test" || e.Spec.Image != "longhorn:test" ||
		len(e.Spec.UpgradedReplicaAddressMap) != 0 {
		t.Fatalf("after the failure: volume %s/%s engine %s %v", v.Spec.Image, v.Status.CurrentImage, e.Spec.Image, e.Spec.UpgradedReplicaAddressMap)
	}
	if left := dirsByName(f.replicas("vol")); !maps.Equal(left, old) {
		t.Fatalf("replicas %v, want the old ones %v", left, old)
	}
	if !hasEvent(f.events(), "Warning FailedEngineUpgrade") {
		t.Fatal("no FailedEngineUpgrade event")
	}
	if v.Status.State != longhorn.VolumeStateAttached || v.Status.Robustness != longhorn.VolumeRobustnessHealthy {
		t.Fatalf("volume %s/%s", v.Status.State, v.Status.Robustness)
	}
}

// An upgrade whose old engine was deleted because it never served again
// (the new engine died after VolumeUpgradeDone): the volume sees its engine
// lost while the engine controller still holds the upgrade and detaches;
// the failure reported then rolls back spec.image, the engine's spec.image
// too although the volume is no longer attached, and removes the twins; the
// volume attaches again with the engine on the old image and the old
// replicas.
func TestVolumeLiveUpgradeOldEngineLost(t *testing.T) {
	f, old, _ := startLiveUpgrade(t)
	e := f.engine("vol-e-0")
	e.Status.Conditions = longhorn.SetCondition(e.Status.Conditions, longhorn.EngineConditionTypeLiveUpgrade, longhorn.ConditionStatusTrue,
		string(lifecycle.UpgradeAborting), "the new engine exited", "2026-12-01T00:00:00Z")
	e.Status.CurrentState, e.Status.IP, e.Status.Port, e.Status.Endpoint = longhorn.InstanceStateError, "", 0, ""
	f.updateEngine(e)
	f.syncVolume("vol")
	if v := f.volume("vol"); v.Status.State != longhorn.VolumeStateDetaching || len(f.replicas("vol")) != 6 {
		t.Fatalf("engine lost while aborting: volume %s, %d replicas", v.Status.State, len(f.replicas("vol")))
	}
	e = f.engine("vol-e-0")
	e.Status.Conditions = longhorn.SetCondition(e.Status.Conditions, longhorn.EngineConditionTypeLiveUpgrade, longhorn.ConditionStatusFalse,
		string(lifecycle.UpgradeFailed), "the new engine exited", "2026-12-01T00:00:31Z")
	f.updateEngine(e)
	f.syncVolume("vol")
	v, e := f.volume("vol"), f.engine("vol-e-0")
	if v.Spec.Image != "longhorn:test" || e.Spec.Image != "longhorn:test" || len(e.Spec.UpgradedReplicaAddressMap) != 0 {
		t.Fatalf("after the failure while detaching: volume spec.image %s, engine spec.image %s upgraded map %v",
			v.Spec.Image, e.Spec.Image, e.Spec.UpgradedReplicaAddressMap)
	}
	if left := dirsByName(f.replicas("vol")); !maps.Equal(left, old) {
		t.Fatalf("replicas %v, want the old ones %v", left, old)
	}
	f.stopAll()
	for range 3 {
		f.syncVolume("vol")
	}
	f.runReplicas("vol")
	f.syncVolume("vol")
	e = f.engine("vol-e-0")
	if e.Spec.DesireState != longhorn.InstanceStateRunning || e.Spec.Image != "longhorn:test" ||
		!slices.Equal(slices.Sorted(maps.Keys(e.Spec.ReplicaAddressMap)), slices.Sorted(maps.Keys(old))) {
		t.Fatalf("engine restarted with %s on %v (desire %s), want the old image on %v", e.Spec.Image, e.Spec.ReplicaAddressMap,
			e.Spec.DesireState, old)
	}
	modes := map[string]longhorn.ReplicaMode{}
	for n := range old {
		modes[n] = longhorn.ReplicaModeRW
	}
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	if v := f.volume("vol"); v.Status.State != longhorn.VolumeStateAttached || v.Status.CurrentImage != "longhorn:test" {
		t.Fatalf("volume back: %s image %s", v.Status.State, v.Status.CurrentImage)
	}
}

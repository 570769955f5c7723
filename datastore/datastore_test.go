package datastore

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
	"github.com/longhorn-go/longhorn/types"
)

const testNS = "longhorn-system"

func meta(name string, lbls map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: lbls, ResourceVersion: "1"}
}

// fixture returns a small cluster's worth of objects across kinds.
func fixture() []runtime.Object {
	return []runtime.Object{
		&longhorn.Volume{ObjectMeta: meta("vol1", map[string]string{"app": "db"}),
			Spec: longhorn.VolumeSpec{Size: 1 << 30, NumberOfReplicas: 3}, Status: longhorn.VolumeStatus{State: longhorn.VolumeStateDetached}},
		&longhorn.Volume{ObjectMeta: meta("vol2", nil), Spec: longhorn.VolumeSpec{Size: 2 << 30}},
		&longhorn.Engine{ObjectMeta: meta("vol1-e-0", types.VolumeLabels("vol1")),
			Spec: longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol1", NodeID: "n1"},
				ReplicaAddressMap: map[string]string{"vol1-r-00000001": "10.0.0.1:10000"}}},
		&longhorn.Replica{ObjectMeta: meta("vol1-r-00000001", nil), Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol1", NodeID: "n1"}}},
		&longhorn.Replica{ObjectMeta: meta("vol1-r-00000002", nil), Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol1", NodeID: "n2"}}},
		&longhorn.Replica{ObjectMeta: meta("vol2-r-00000003", nil), Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol2", NodeID: "n1"}}},
		&longhorn.Node{ObjectMeta: meta("n1", nil), Spec: longhorn.NodeSpec{Disks: map[string]longhorn.DiskSpec{"d": {Path: "/var/lib/longhorn"}}}},
		&longhorn.InstanceManager{ObjectMeta: meta("instance-manager-x", nil), Spec: longhorn.InstanceManagerSpec{NodeID: "n1"}},
		&longhorn.VolumeAttachment{ObjectMeta: meta("vol1", nil), Spec: longhorn.VolumeAttachmentSpec{Volume: "vol1",
			AttachmentTickets: map[string]*longhorn.AttachmentTicket{"t": {ID: "t", NodeID: "n1"}}}},
		&longhorn.Setting{ObjectMeta: meta(string(types.SettingNameStorageOverProvisioningPercentage), nil), Value: "200"},
		&longhorn.Setting{ObjectMeta: meta(string(types.SettingNameDefaultReplicaCount), nil), Value: `{"v1":"2","v2":"4"}`},
		&longhorn.Setting{ObjectMeta: meta(string(types.SettingNameReplicaSoftAntiAffinity), nil), Value: "true"},
	}
}

// startedStore returns a DataStore over a fake clientset holding objs, with
// caches synced.
func startedStore(t *testing.T, objs ...runtime.Object) (*DataStore, *fake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	ds, err := New(testNS, client, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ds.Start(ctx)
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if err := ds.WaitForCacheSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	return ds, client
}

// snapshotCaches deep-copies every object in every informer's indexer.
func snapshotCaches(ds *DataStore) map[string]runtime.Object {
	out := map[string]runtime.Object{}
	for _, inf := range ds.informers() {
		for _, o := range inf.GetIndexer().List() {
			ro := o.(runtime.Object)
			m := o.(metav1.Object)
			out[reflect.TypeOf(o).String()+"/"+m.GetName()] = ro.DeepCopyObject()
		}
	}
	return out
}

// Copies and read-only cache pointers (docs/style.md): getters that return copies never hand out cache
// pointers, and RO getters never change the cache. Mutating everything the
// copy-returning getters return must leave the caches as they were.
func TestGettersDoNotMutateCache(t *testing.T) {
	ds, _ := startedStore(t, fixture()...)
	ctx := context.Background()
	before := snapshotCaches(ds)
	if len(before) != len(fixture()) {
		t.Fatalf("caches hold %d objects, want %d", len(before), len(fixture()))
	}
	runAllGetters(t, ctx, ds)
	after := snapshotCaches(ds)
	for k, b := range before {
		if !equality.Semantic.DeepEqual(b, after[k]) {
			t.Errorf("cache object %s changed by a getter", k)
		}
	}
}

// runAllGetters calls every read method and scribbles on what the
// copy-returning ones give back.
func runAllGetters(t *testing.T, ctx context.Context, ds *DataStore) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	v, err := ds.GetVolume(ctx, "vol1")
	must(err)
	v.Spec.Size, v.Labels["app"], v.Status.State = 1, "changed", longhorn.VolumeStateAttached
	_, err = ds.ListVolumesRO(ctx, labels.SelectorFromSet(labels.Set{"app": "db"}))
	must(err)
	e, err := ds.GetEngine(ctx, "vol1-e-0")
	must(err)
	e.Spec.ReplicaAddressMap["vol1-r-00000001"] = "changed"
	r, err := ds.GetReplica(ctx, "vol1-r-00000001")
	must(err)
	r.Spec.NodeID = "changed"
	va, err := ds.GetVolumeAttachment(ctx, "vol1")
	must(err)
	va.Spec.AttachmentTickets["t"] = &longhorn.AttachmentTicket{ID: "changed"}
	n, err := ds.GetNode(ctx, "n1")
	must(err)
	n.Spec.Disks["d"] = longhorn.DiskSpec{Path: "changed"}
	s, err := ds.GetSetting(ctx, types.SettingNameStorageOverProvisioningPercentage)
	must(err)
	s.Value = "1"
	_, err = ds.GetSettingAsInt(ctx, types.SettingNameStorageOverProvisioningPercentage)
	must(err)
	_, err = ds.GetSettingAsIntByDataEngine(ctx, types.SettingNameDefaultReplicaCount, longhorn.DataEngineTypeV1)
	must(err)
	for _, f := range []func() error{
		func() error { _, err := ds.ListEnginesByNodeRO(ctx, "n1"); return err },
		func() error { _, err := ds.ListReplicasByNodeRO(ctx, "n1"); return err },
		func() error { _, err := ds.ListInstanceManagersByNodeRO(ctx, "n1"); return err },
		func() error { _, err := ds.GetVolumeRO(ctx, "vol2"); return err },
	} {
		must(f())
	}
}

func names[P interface{ GetName() string }](objs []P) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetName()
	}
	sort.Strings(out)
	return out
}

func TestIndexes(t *testing.T) {
	ds, _ := startedStore(t, fixture()...)
	ctx := context.Background()
	check := func(what string, got []string, err error, want ...string) {
		t.Helper()
		if err != nil || (len(got)+len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Errorf("%s = %v, %v; want %v", what, got, err, want)
		}
	}
	rs, err := ds.ListReplicasByVolumeRO(ctx, "vol1")
	check("replicas of vol1", names(rs), err, "vol1-r-00000001", "vol1-r-00000002")
	rs, err = ds.ListReplicasByNodeRO(ctx, "n1")
	check("replicas on n1", names(rs), err, "vol1-r-00000001", "vol2-r-00000003")
	es, err := ds.ListEnginesByVolumeRO(ctx, "vol1")
	check("engines of vol1", names(es), err, "vol1-e-0")
	es, err = ds.ListEnginesByNodeRO(ctx, "n2")
	check("engines on n2", names(es), err)
	ims, err := ds.ListInstanceManagersByNodeRO(ctx, "n1")
	check("IMs on n1", names(ims), err, "instance-manager-x")
	vols, err := ds.ListVolumesRO(ctx, labels.SelectorFromSet(labels.Set{"app": "db"}))
	check("volumes app=db", names(vols), err, "vol1")
	if _, err := ds.GetVolumeRO(ctx, "nope"); !apierrors.IsNotFound(err) {
		t.Errorf("missing volume error = %v, want NotFound", err)
	}
}

func TestSettingGetters(t *testing.T) {
	ds, _ := startedStore(t, fixture()...)
	ctx := context.Background()
	if n, err := ds.GetSettingAsInt(ctx, types.SettingNameStorageOverProvisioningPercentage); err != nil || n != 200 {
		t.Errorf("object value: %d, %v; want 200", n, err)
	}
	// No object: the definition's default.
	if n, err := ds.GetSettingAsInt(ctx, types.SettingNameStorageMinimalAvailablePercentage); err != nil || n != 25 {
		t.Errorf("default: %d, %v; want 25", n, err)
	}
	if b, err := ds.GetSettingAsBool(ctx, types.SettingNameReplicaSoftAntiAffinity); err != nil || !b {
		t.Errorf("bool: %v, %v; want true", b, err)
	}
	if b, err := ds.GetSettingAsBool(ctx, types.SettingNameAutoSalvage); err != nil || !b {
		t.Errorf("bool default: %v, %v; want true", b, err)
	}
	if s, err := ds.settingValueByDataEngine(ctx, types.SettingNameGuaranteedInstanceManagerCPU, longhorn.DataEngineTypeV1); err != nil || s != "12" {
		t.Errorf("default by engine: %q, %v; want 12", s, err)
	}
	if s, err := ds.GetSettingValue(ctx, types.SettingNameDefaultDataPath); err != nil || s != "/var/lib/longhorn" {
		t.Errorf("string default: %q, %v", s, err)
	}
	if n, err := ds.GetSettingAsIntByDataEngine(ctx, types.SettingNameDefaultReplicaCount, longhorn.DataEngineTypeV2); err != nil || n != 4 {
		t.Errorf("per-engine: %d, %v; want 4", n, err)
	}
	if _, err := ds.GetSettingAsInt(ctx, types.SettingNameDefaultReplicaCount); !errors.Is(err, ErrDataEngineSpecific) {
		t.Errorf("plain getter on per-engine JSON: %v, want ErrDataEngineSpecific", err)
	}
	if _, err := ds.GetSettingAsInt(ctx, "no-such-setting"); !errors.Is(err, types.ErrUnknownSetting) {
		t.Errorf("unknown setting: %v", err)
	}
}

// Writes reach the API (here the fake clientset) and the informer sees them;
// setting writes are validated first.
func TestWritesAndValidation(t *testing.T) {
	ds, _ := startedStore(t, fixture()...)
	ctx := context.Background()
	bad := &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: string(types.SettingNameDefaultReplicaCount)}, Value: "21"}
	var verr *types.SettingValueError
	if _, err := ds.CreateSetting(ctx, bad); !errors.As(err, &verr) {
		t.Fatalf("invalid setting create: %v, want *SettingValueError", err)
	}
	created, err := ds.CreateVolume(ctx, &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "vol3"}, Spec: longhorn.VolumeSpec{Size: 1 << 20}})
	if err != nil || created.Namespace != testNS {
		t.Fatalf("create: %v, namespace %q", err, created.Namespace)
	}
	waitFor(t, func() bool { _, err := ds.GetVolumeRO(ctx, "vol3"); return err == nil })
	created.Status.State = longhorn.VolumeStateCreating
	if _, err := ds.UpdateVolumeStatus(ctx, created); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		v, err := ds.GetVolumeRO(ctx, "vol3")
		return err == nil && v.Status.State == longhorn.VolumeStateCreating
	})
	if err := ds.DeleteVolume(ctx, "vol3"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := ds.GetVolumeRO(ctx, "vol3"); return apierrors.IsNotFound(err) })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A Snapshot object is owned by its volume (garbage-collected with it), as
// Longhorn's Snapshot CRs are; one that names no known volume has no owner.
func TestSnapshotOwnedByVolume(t *testing.T) {
	ds, _ := startedStore(t, fixture()...)
	ctx := context.Background()
	s, err := ds.CreateSnapshot(ctx, &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-1"}, Spec: longhorn.SnapshotSpec{Volume: "vol1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Volume" || s.OwnerReferences[0].Name != "vol1" {
		t.Fatalf("owner references %+v, want volume vol1", s.OwnerReferences)
	}
	s, err = ds.CreateSnapshot(ctx, &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-2"}, Spec: longhorn.SnapshotSpec{Volume: "gone"}})
	if err != nil || len(s.OwnerReferences) != 0 {
		t.Fatalf("snapshot of an unknown volume: %v, owners %+v", err, s.OwnerReferences)
	}
}

package controller

import (
	"context"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/longhorn-go/longhorn/datastore"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	lhfake "github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
	"github.com/longhorn-go/longhorn/types"
)

const testNS = "longhorn-system"

// fixture is the sample-controller style test bed: fake clientsets, real
// informers and datastore, controllers whose sync functions the test calls
// one at a time. Assertions read the resulting objects from the fake
// clientset, never the list of API calls.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	lh   *lhfake.Clientset
	kube *kubefake.Clientset
	ds   *datastore.DataStore
	m    *Manager
	api  *fakeAPI
	rec  *record.FakeRecorder
	now  time.Time
}

func newFixture(t *testing.T, lhObjs ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, lh: lhfake.NewSimpleClientset(lhObjs...), kube: kubefake.NewClientset(), now: t0}
	ds, err := datastore.New(testNS, f.lh, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.ds = ds
	f.api = newFakeAPI()
	f.m, err = newManager(Options{NodeName: "n1", Namespace: testNS, EngineImage: "longhorn:test", InstanceManagerImage: "longhorn:test",
		Now: func() time.Time { return f.now }}, f.kube, ds, f.api)
	if err != nil {
		t.Fatal(err)
	}
	f.rec = record.NewFakeRecorder(1000)
	f.m.env.recorder = f.rec
	t.Cleanup(func() {
		for _, c := range f.m.controllers {
			switch c := c.(type) {
			case *EngineController:
				c.monitors.stopAll()
			case *InstanceManagerController:
				c.monitors.stopAll()
			}
		}
	})
	ds.Start(ctx)
	f.m.env.kubeFactory.Start(ctx.Done())
	f.m.env.nsFactory.Start(ctx.Done())
	if err := ds.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	cache.WaitForCacheSync(ctx.Done(), f.m.env.synced...)
	return f
}

// controller returns the controller of the given type.
func fixtureController[T runner](f *fixture) T {
	for _, c := range f.m.controllers {
		if x, ok := c.(T); ok {
			return x
		}
	}
	f.t.Fatalf("no controller of type %T", *new(T))
	var zero T
	return zero
}

// settle waits until the informers have seen every write made so far.
func (f *fixture) settle() {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if f.cacheMatches() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatal("informer caches did not catch up")
}

func (f *fixture) cacheMatches() bool {
	vs, _ := f.lh.LonghornV1beta2().Volumes(testNS).List(f.ctx, metav1.ListOptions{})
	es, _ := f.lh.LonghornV1beta2().Engines(testNS).List(f.ctx, metav1.ListOptions{})
	rs, _ := f.lh.LonghornV1beta2().Replicas(testNS).List(f.ctx, metav1.ListOptions{})
	// The fake tracker does not bump resourceVersion: compare contents.
	for _, v := range vs.Items {
		c, err := f.ds.GetVolumeRO(f.ctx, v.Name)
		if err != nil || !reflect.DeepEqual(c.Spec, v.Spec) || !reflect.DeepEqual(c.Status, v.Status) || !reflect.DeepEqual(c.Finalizers, v.Finalizers) ||
			!sameStrings(c.Annotations, v.Annotations) || !sameStrings(c.Labels, v.Labels) {
			return false
		}
	}
	for _, e := range es.Items {
		c, err := f.ds.GetEngineRO(f.ctx, e.Name)
		if err != nil || !reflect.DeepEqual(c.Spec, e.Spec) || !reflect.DeepEqual(c.Status, e.Status) {
			return false
		}
	}
	for _, r := range rs.Items {
		c, err := f.ds.GetReplicaRO(f.ctx, r.Name)
		if err != nil || !reflect.DeepEqual(c.Spec, r.Spec) || !reflect.DeepEqual(c.Status, r.Status) {
			return false
		}
	}
	ims, _ := f.lh.LonghornV1beta2().InstanceManagers(testNS).List(f.ctx, metav1.ListOptions{})
	for _, im := range ims.Items {
		c, err := f.ds.GetInstanceManagerRO(f.ctx, im.Name)
		if err != nil || !reflect.DeepEqual(c.Status, im.Status) {
			return false
		}
	}
	// Node status (a cordon's Schedulable condition, disk status) is read
	// by the volume controller too.
	ns, _ := f.lh.LonghornV1beta2().Nodes(testNS).List(f.ctx, metav1.ListOptions{})
	for _, n := range ns.Items {
		c, err := f.ds.GetNodeRO(f.ctx, n.Name)
		if err != nil || !reflect.DeepEqual(c.Spec, n.Spec) || !reflect.DeepEqual(c.Status, n.Status) {
			return false
		}
	}
	all, _ := f.ds.ListReplicasRO(f.ctx, nil)
	return len(all) == len(rs.Items)
}

// sameStrings compares annotation or label maps, nil equal to empty (an
// annotation-only update must be in the cache before the next sync too).
func sameStrings(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func (f *fixture) volume(name string) *longhorn.Volume {
	f.t.Helper()
	v, err := f.lh.LonghornV1beta2().Volumes(testNS).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

func (f *fixture) engine(name string) *longhorn.Engine {
	f.t.Helper()
	e, err := f.lh.LonghornV1beta2().Engines(testNS).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *fixture) replicas(volume string) []*longhorn.Replica {
	f.t.Helper()
	list, err := f.lh.LonghornV1beta2().Replicas(testNS).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*longhorn.Replica
	for i := range list.Items {
		if list.Items[i].Spec.VolumeName == volume {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// update writes a changed object (spec and status) through the fake client.
func (f *fixture) updateReplica(r *longhorn.Replica) {
	f.t.Helper()
	if _, err := f.lh.LonghornV1beta2().Replicas(testNS).Update(f.ctx, r, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) updateEngine(e *longhorn.Engine) {
	f.t.Helper()
	if _, err := f.lh.LonghornV1beta2().Engines(testNS).Update(f.ctx, e, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) updateVolume(v *longhorn.Volume) {
	f.t.Helper()
	if _, err := f.lh.LonghornV1beta2().Volumes(testNS).Update(f.ctx, v, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// syncVolume runs one volume sync after the caches settle, checking that the
// sync left every cached object unchanged (RO objects are never mutated).
func (f *fixture) syncVolume(name string) Result {
	f.t.Helper()
	f.settle()
	snap := f.snapshotCache()
	res, err := fixtureController[*VolumeController](f).syncVolume(f.ctx, testNS+"/"+name)
	if err != nil {
		f.t.Logf("syncVolume: %v", err)
		if !apierrors.IsConflict(err) {
			f.t.Fatalf("syncVolume: %v", err)
		}
	}
	f.checkCacheUnchanged(snap)
	return res
}

type cachedCopy struct {
	ptr  runtime.Object
	copy runtime.Object
}

func (f *fixture) snapshotCache() []cachedCopy {
	var out []cachedCopy
	for _, inf := range []cache.SharedIndexInformer{f.ds.VolumeInformer(), f.ds.EngineInformer(), f.ds.ReplicaInformer(), f.ds.NodeInformer(), f.ds.InstanceManagerInformer()} {
		for _, o := range inf.GetIndexer().List() {
			ro := o.(runtime.Object)
			out = append(out, cachedCopy{ptr: ro, copy: ro.DeepCopyObject()})
		}
	}
	return out
}

func (f *fixture) checkCacheUnchanged(snap []cachedCopy) {
	f.t.Helper()
	for _, c := range snap {
		if !reflect.DeepEqual(c.ptr, c.copy) {
			f.t.Fatalf("a sync mutated a cached object: %T", c.ptr)
		}
	}
}

// readyNode is a schedulable node with one 100 GiB disk and a running
// instance manager.
func readyNode(name string) []runtime.Object {
	gib := int64(1) << 30
	cond := func(typ string) longhorn.Condition {
		return longhorn.Condition{Type: typ, Status: longhorn.ConditionStatusTrue}
	}
	n := &longhorn.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: longhorn.NodeSpec{Name: name, AllowScheduling: true,
			Disks: map[string]longhorn.DiskSpec{"disk": {Type: longhorn.DiskTypeFilesystem, Path: "/var/lib/longhorn", AllowScheduling: true}}},
		Status: longhorn.NodeStatus{Conditions: []longhorn.Condition{cond("Ready"), cond("Schedulable")},
			DiskStatus: map[string]*longhorn.DiskStatus{"disk": {DiskUUID: name + "-disk", StorageMaximum: 100 * gib,
				StorageAvailable: 100 * gib, FSType: "ext4", Conditions: []longhorn.Condition{cond("Ready"), cond("Schedulable")}}}},
	}
	im := &longhorn.InstanceManager{
		ObjectMeta: metav1.ObjectMeta{Name: types.InstanceManagerName(name, "longhorn:test", longhorn.DataEngineTypeV1), Namespace: testNS},
		Spec:       longhorn.InstanceManagerSpec{Image: "longhorn:test", NodeID: name, DataEngine: longhorn.DataEngineTypeV1},
		Status:     longhorn.InstanceManagerStatus{CurrentState: longhorn.InstanceManagerStateRunning, IP: "10.0.0." + name[1:]},
	}
	return []runtime.Object{n, im}
}

func newVolume(name string, replicas int) *longhorn.Volume {
	return &longhorn.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Finalizers: []string{FinalizerName}},
		Spec: longhorn.VolumeSpec{Size: 1 << 30, NumberOfReplicas: replicas, Frontend: longhorn.VolumeFrontendNBD,
			Image: "longhorn:test", DataEngine: longhorn.DataEngineTypeV1, DataLocality: longhorn.DataLocalityDisabled,
			StaleReplicaTimeout: 2880},
	}
}

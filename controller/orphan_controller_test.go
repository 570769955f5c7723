package controller

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// orphanBed is node n1 (the fixture's own) with one ready disk in a
// temporary directory holding two replica directories: "vol-owned" (its
// Replica exists) and "vol-gone" (none).
func orphanBed(t *testing.T, extra ...*longhorn.Setting) (*fixture, *longhorn.Node, string) {
	t.Helper()
	path := t.TempDir()
	cfg, err := monitor.EnsureDiskConfig(path, "disk")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"vol-owned", "vol-gone"} {
		if err := os.MkdirAll(filepath.Join(path, monitor.ReplicaDirectory, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	objs := readyNode("n1")
	n := objs[0].(*longhorn.Node)
	n.Spec.Disks["disk"] = longhorn.DiskSpec{Type: longhorn.DiskTypeFilesystem, Path: path, AllowScheduling: true}
	n.Status.DiskStatus["disk"].DiskUUID = cfg.DiskUUID
	r := &longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: "vol-r-owned", Namespace: testNS}}
	r.Spec.NodeID, r.Spec.VolumeName, r.Spec.DiskPath, r.Spec.DataDirectoryName = "n1", "vol", path, "vol-owned"
	objs = append(objs, r)
	for _, s := range extra {
		objs = append(objs, s)
	}
	return newFixture(t, objs...), n, path
}

func (f *fixture) orphans() []longhorn.Orphan {
	f.t.Helper()
	l, err := f.lh.LonghornV1beta2().Orphans(testNS).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return l.Items
}

// The node controller makes one Orphan (type replica, Longhorn's name and
// parameters) for the directory no Replica owns; deleting it removes that
// directory, never the owned one; a rescan then finds nothing to orphan.
func TestOrphanReplicaDataFoundAndDeleted(t *testing.T) {
	f, n, path := orphanBed(t)
	nc := fixtureController[*NodeController](f)
	if err := nc.reconcileOrphans(f.ctx, n); err != nil {
		t.Fatal(err)
	}
	os1 := f.orphans()
	if len(os1) != 1 {
		t.Fatalf("%d orphans, want 1 (vol-gone): %+v", len(os1), os1)
	}
	o := os1[0]
	p := o.Spec.Parameters
	if o.Spec.NodeID != "n1" || o.Spec.Type != longhorn.OrphanTypeReplicaData || p[longhorn.OrphanDataName] != "vol-gone" ||
		p[longhorn.OrphanDiskName] != "disk" || p[longhorn.OrphanDiskPath] != path || p[longhorn.OrphanDiskUUID] != n.Status.DiskStatus["disk"].DiskUUID ||
		o.Name != orphanName("n1", "disk", path, p[longhorn.OrphanDiskUUID], "vol-gone") {
		t.Fatalf("orphan %+v", o)
	}
	// A second scan keeps the same single orphan.
	f.settle()
	if err := nc.reconcileOrphans(f.ctx, n); err != nil || len(f.orphans()) != 1 {
		t.Fatalf("rescan: %v, %d orphans", err, len(f.orphans()))
	}
	// Deleting the Orphan (the API server sets deletionTimestamp and keeps
	// it for the finalizer) removes vol-gone, then the finalizer.
	now := metav1.NewTime(f.now)
	o.DeletionTimestamp = &now
	if _, err := f.lh.LonghornV1beta2().Orphans(testNS).Update(f.ctx, &o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		c, err := f.ds.GetOrphanRO(f.ctx, o.Name)
		return err == nil && c.DeletionTimestamp != nil
	})
	oc := fixtureController[*OrphanController](f)
	if _, err := oc.syncOrphan(f.ctx, testNS+"/"+o.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, monitor.ReplicaDirectory, "vol-gone")); !os.IsNotExist(err) {
		t.Fatalf("orphaned directory still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(path, monitor.ReplicaDirectory, "vol-owned")); err != nil {
		t.Fatalf("owned directory removed: %v", err)
	}
	got, err := f.lh.LonghornV1beta2().Orphans(testNS).Get(f.ctx, o.Name, metav1.GetOptions{})
	if err != nil || len(got.Finalizers) != 0 {
		t.Fatalf("finalizer kept: %+v %v", got, err)
	}
}

// An Orphan whose directory a Replica owns again (or that is gone) is
// deleted by the next scan, and its deletion leaves the data alone.
func TestOrphanOwnedAgainKeepsData(t *testing.T) {
	f, n, path := orphanBed(t)
	nc := fixtureController[*NodeController](f)
	if err := nc.reconcileOrphans(f.ctx, n); err != nil {
		t.Fatal(err)
	}
	r := &longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: "vol-r-back", Namespace: testNS}}
	r.Spec.NodeID, r.Spec.VolumeName, r.Spec.DiskPath, r.Spec.DataDirectoryName = "n1", "vol", path, "vol-gone"
	if _, err := f.lh.LonghornV1beta2().Replicas(testNS).Create(f.ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	o := f.orphans()[0]
	now := metav1.NewTime(f.now)
	o.DeletionTimestamp = &now
	if err := fixtureController[*OrphanController](f).removeOrphanData(f.ctx, &o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, monitor.ReplicaDirectory, "vol-gone")); err != nil {
		t.Fatalf("data of a replica removed: %v", err)
	}
	if err := nc.reconcileOrphans(f.ctx, n); err != nil {
		t.Fatal(err)
	}
	if got := f.orphans(); len(got) != 0 {
		t.Fatalf("orphan kept once a replica owns its directory: %+v", got)
	}
}

// orphan-resource-auto-deletion=replica-data deletes an Orphan once it is
// older than the grace period, and not before; without the setting the
// Orphan stays.
func TestOrphanAutoDeletion(t *testing.T) {
	f, n, _ := orphanBed(t, setting(types.SettingNameOrphanResourceAutoDeletionGracePeriod, "300"))
	nc, oc := fixtureController[*NodeController](f), fixtureController[*OrphanController](f)
	if err := nc.reconcileOrphans(f.ctx, n); err != nil {
		t.Fatal(err)
	}
	o := f.orphans()[0]
	o.CreationTimestamp = metav1.NewTime(f.now)
	if _, err := f.lh.LonghornV1beta2().Orphans(testNS).Update(f.ctx, &o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		c, err := f.ds.GetOrphanRO(f.ctx, o.Name)
		return err == nil && c.CreationTimestamp.Equal(&o.CreationTimestamp)
	})
	key := testNS + "/" + o.Name
	if res, err := oc.syncOrphan(f.ctx, key); err != nil || res.RequeueAfter != 0 || len(f.orphans()) != 1 {
		t.Fatalf("auto-deletion off: %+v %v, %d orphans", res, err, len(f.orphans()))
	}
	f.setSetting(types.SettingNameOrphanResourceAutoDeletion, "replica-data")
	f.settle()
	res, err := oc.syncOrphan(f.ctx, key)
	if err != nil || res.RequeueAfter != 300*time.Second || len(f.orphans()) != 1 {
		t.Fatalf("within the grace period: %+v %v, %d orphans", res, err, len(f.orphans()))
	}
	f.now = f.now.Add(301 * time.Second)
	if _, err := oc.syncOrphan(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	if got := f.orphans(); len(got) != 0 {
		t.Fatalf("orphan kept past the grace period: %+v", got)
	}
}

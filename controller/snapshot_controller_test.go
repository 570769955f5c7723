package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// The engine's snapshot list becomes Snapshot objects; deleting one marks
// the snapshot removed and purges; a snapshot the engine dropped loses its
// object.
func TestSnapshotObjectsFollowEngine(t *testing.T) {
	eng := &longhorn.Engine{ObjectMeta: metav1.ObjectMeta{Name: "v1-e-0", Namespace: testNS},
		Spec: longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "v1", VolumeSize: 1 << 30}},
		Status: longhorn.EngineStatus{InstanceStatus: longhorn.InstanceStatus{OwnerID: "n1", CurrentState: longhorn.InstanceStateRunning, IP: "10.0.0.1", Port: 1},
			Snapshots: map[string]*longhorn.SnapshotInfo{
				"volume-head": {Name: "volume-head", Parent: "s1"},
				"s1":          {Name: "s1", Children: map[string]bool{"volume-head": true}, UserCreated: true, Created: "2026-12-01T00:00:00Z", Size: "4096"},
			}}}
	f := newFixture(t, eng)
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
	if len(fe.removed) != 1 || fe.removed[0] != "s1" || fe.purges != 1 {
		t.Fatalf("engine calls: removed %v, purges %d", fe.removed, fe.purges)
	}
	if _, err := f.lh.LonghornV1beta2().Snapshots(testNS).Get(f.ctx, "s1", metav1.GetOptions{}); err == nil {
		t.Fatal("deleted snapshot object still there")
	}
}

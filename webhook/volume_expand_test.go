package webhook

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Expansion is refused, with the numbers, when a replica's disk cannot
// take the growth under storage-over-provisioning-percentage, as placing a
// replica of that size would be.
func TestCheckExpansion(t *testing.T) {
	const gib = int64(1) << 30
	v := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "vol"}}
	replicas := []*longhorn.Replica{
		{Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol", NodeID: "n1"}, DiskID: "u1"}},
		{Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol", NodeID: "n2"}, DiskID: "u2"}},
		{Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol"}}}, // not placed
	}
	node := func(name, uuid string, scheduled int64) *longhorn.Node {
		return &longhorn.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: longhorn.NodeSpec{Disks: map[string]longhorn.DiskSpec{"d": {StorageReserved: 0}}},
			Status: longhorn.NodeStatus{DiskStatus: map[string]*longhorn.DiskStatus{"d": {DiskUUID: uuid,
				StorageMaximum: 200 * gib, StorageAvailable: 150 * gib, StorageScheduled: scheduled}}}}
	}
	nodes := map[string]*longhorn.Node{"n1": node("n1", "u1", 100*gib), "n2": node("n2", "u2", 250*gib)}
	in, err := expansionDisks(v, replicas, nodes, 150, 25)
	if err != nil || len(in.Disks) != 2 {
		t.Fatalf("disks %v %v", in.Disks, err)
	}
	if err := checkExpansion(in, 50*gib, 100*gib); err != nil {
		t.Fatalf("growth within the limit refused: %v", err) // n2: 250+50 = 300 = limit
	}
	err = checkExpansion(in, 50*gib, 100*gib+1)
	want := "disk n2/d cannot take 53687091201 more bytes: provisioned space: size 53687091201 + scheduled 268435456000 = 322122547201 exceeds the limit 322122547200 (150% of maximum 214748364800 - reserved 0)"
	if err == nil || !strings.HasPrefix(err.Error(), "spec.size: cannot expand from") || !strings.Contains(err.Error(), want) {
		t.Fatalf("over the limit: %v", err)
	}
	if err := checkExpansion(in, 50*gib, 40*gib); err != nil {
		t.Fatalf("no growth: %v", err)
	}
}

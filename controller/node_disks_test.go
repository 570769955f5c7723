package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// A disk added on the filesystem of a disk in use is the one refused, even
// when its name sorts first; the disk holding replicas stays Ready.
func TestSecondDiskOnTheSameFilesystemIsRefused(t *testing.T) {
	const gib = int64(1) << 30
	ready := []longhorn.Condition{{Type: longhorn.DiskConditionTypeReady, Status: longhorn.ConditionStatusTrue}}
	node := &longhorn.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: longhorn.NodeSpec{Disks: map[string]longhorn.DiskSpec{
			"default-disk-1": {Path: "/var/lib/longhorn"}, "a-extra": {Path: "/var/lib/longhorn-extra"}}},
		Status: longhorn.NodeStatus{DiskStatus: map[string]*longhorn.DiskStatus{
			"default-disk-1": {DiskUUID: "u-default", Conditions: ready}}}}
	stat := monitor.DiskStat{FSID: "fs1", FSType: "ext4", StorageMaximum: 100 * gib, StorageAvailable: 90 * gib}
	probes := map[string]diskProbe{
		"default-disk-1": {Config: monitor.DiskConfig{DiskName: "default-disk-1", DiskUUID: "u-default"}, Stat: stat},
		"a-extra":        {Config: monitor.DiskConfig{DiskName: "a-extra", DiskUUID: "u-extra"}, Stat: stat},
	}
	replicas := []*longhorn.Replica{{ObjectMeta: metav1.ObjectMeta{Name: "vol-r-1"},
		Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{NodeID: "n1", VolumeSize: gib}, DiskID: "u-default"}}}
	out := decideDiskStatuses(node, probes, replicas, capacitySettings{OverProvisioningPercentage: 100, MinimalAvailablePercentage: 25}, "now")
	if c := longhorn.GetCondition(out["default-disk-1"].Conditions, longhorn.DiskConditionTypeReady); c.Status != longhorn.ConditionStatusTrue {
		t.Fatalf("the disk in use became %s: %s", c.Status, c.Message)
	}
	c := longhorn.GetCondition(out["a-extra"].Conditions, longhorn.DiskConditionTypeReady)
	if c.Status != longhorn.ConditionStatusFalse || !strings.Contains(c.Message, "same filesystem as disk default-disk-1") {
		t.Fatalf("the new disk: %s %q", c.Status, c.Message)
	}
	if s := longhorn.GetCondition(out["a-extra"].Conditions, longhorn.DiskConditionTypeSchedulable); s.Status != longhorn.ConditionStatusFalse {
		t.Fatalf("the refused disk is schedulable")
	}
}

package controller

import (
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func fanoutNode() *longhorn.Node {
	n := &longhorn.Node{}
	n.Name = "n1"
	n.Spec.AllowScheduling = true
	n.Status.Conditions = []longhorn.Condition{{Type: longhorn.NodeConditionTypeReady, Status: longhorn.ConditionStatusTrue, LastProbeTime: "t0"}}
	n.Status.DiskStatus = map[string]*longhorn.DiskStatus{"d1": {StorageMaximum: 100, StorageAvailable: 90, StorageScheduled: 10,
		ScheduledReplica: map[string]int64{"r1": 10}, DiskUUID: "u1"}}
	return n
}

func TestDecideNodeFanout(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(n *longhorn.Node)
		want   nodeFanout
	}{
		{"probe time only", func(n *longhorn.Node) { n.Status.Conditions[0].LastProbeTime = "t1" }, nodeFanoutNone},
		{"replica scheduled", func(n *longhorn.Node) {
			d := n.Status.DiskStatus["d1"]
			d.StorageScheduled, d.ScheduledReplica = 20, map[string]int64{"r1": 10, "r2": 10}
		}, nodeFanoutCapacity},
		{"space used", func(n *longhorn.Node) { n.Status.DiskStatus["d1"].StorageAvailable = 50 }, nodeFanoutCapacity},
		{"not ready", func(n *longhorn.Node) { n.Status.Conditions[0].Status = longhorn.ConditionStatusFalse }, nodeFanoutAll},
		{"scheduling off", func(n *longhorn.Node) { n.Spec.AllowScheduling = false }, nodeFanoutAll},
		{"disk replaced", func(n *longhorn.Node) { n.Status.DiskStatus["d1"].DiskUUID = "u2" }, nodeFanoutAll},
		{"disk added", func(n *longhorn.Node) { n.Status.DiskStatus["d2"] = &longhorn.DiskStatus{} }, nodeFanoutAll},
		{"label", func(n *longhorn.Node) { n.Labels = map[string]string{"a": "b"} }, nodeFanoutAll},
	} {
		o, n := fanoutNode(), fanoutNode()
		c.change(n)
		if got := decideNodeFanout(o, n); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if decideNodeFanout(nil, fanoutNode()) != nodeFanoutAll {
		t.Error("an added node concerns everything")
	}
}

func TestDecideIMFanout(t *testing.T) {
	mk := func() *longhorn.InstanceManager {
		im := &longhorn.InstanceManager{}
		im.Status.CurrentState, im.Status.IP = longhorn.InstanceManagerStateRunning, "10.0.0.1"
		im.Status.InstanceReplicas = map[string]longhorn.InstanceProcess{"r1": {}, "r2": {}}
		im.Status.InstanceEngines = map[string]longhorn.InstanceProcess{"e1": {}}
		return im
	}
	o, n := mk(), mk()
	n.Status.InstanceReplicas["r3"] = longhorn.InstanceProcess{}
	delete(n.Status.InstanceReplicas, "r2")
	all, engines, replicas := decideIMFanout(o, n)
	if all || len(engines) != 0 || len(replicas) != 2 {
		t.Fatalf("instances changed: all %v engines %v replicas %v, want r2 and r3 only", all, engines, replicas)
	}
	o, n = mk(), mk()
	n.Status.CurrentState = longhorn.InstanceManagerStateUnknown
	if all, _, _ := decideIMFanout(o, n); !all {
		t.Fatal("a state change concerns every dependant")
	}
	o, n = mk(), mk()
	if all, e, r := decideIMFanout(o, n); all || len(e)+len(r) != 0 {
		t.Fatalf("no change: all %v %v %v", all, e, r)
	}
}

func TestWaitsForReplicas(t *testing.T) {
	v := &longhorn.Volume{}
	v.Status.State = longhorn.VolumeStateDetached
	if !waitsForReplicas(v) {
		t.Error("a volume without Scheduled=True waits")
	}
	v.Status.Conditions = []longhorn.Condition{{Type: longhorn.VolumeConditionTypeScheduled, Status: longhorn.ConditionStatusTrue}}
	if waitsForReplicas(v) {
		t.Error("a scheduled healthy detached volume does not wait")
	}
	v.Status.Robustness = longhorn.VolumeRobustnessDegraded
	if !waitsForReplicas(v) {
		t.Error("a degraded volume may replenish")
	}
}

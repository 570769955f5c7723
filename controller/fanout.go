package controller

import (
	"maps"
	"reflect"

	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// A Longhorn node's status changes with every replica scheduled to or
// removed from its disks (storageScheduled, scheduledReplica), and an
// instance manager's with every process that starts or stops. Fanning each
// such update out to every volume, engine and replica made creating N
// volumes cost O(N^2) reconciles (bench-scale part 3: 300 volumes, about 130
// volume reconciles per volume on each manager). The decisions below say
// which dependants an update concerns.

// nodeFanout is what a Longhorn node update concerns.
type nodeFanout int

const (
	// nodeFanoutNone: nothing a dependant reads changed (a condition's
	// probe time).
	nodeFanoutNone nodeFanout = iota
	// nodeFanoutCapacity: only the disks' storage numbers or scheduled
	// replicas changed, which matters to scheduling only.
	nodeFanoutCapacity
	// nodeFanoutAll: spec, conditions, disks or anything else changed.
	nodeFanoutAll
)

// decideNodeFanout compares two versions of a node (pure). A nil side (add,
// delete) concerns every dependant.
func decideNodeFanout(o, n *longhorn.Node) nodeFanout {
	if o == nil || n == nil {
		return nodeFanoutAll
	}
	a, b := nodeWithoutCapacity(o), nodeWithoutCapacity(n)
	if (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || !maps.Equal(o.Labels, n.Labels) ||
		!reflect.DeepEqual(o.Spec, n.Spec) || !reflect.DeepEqual(a, b) {
		return nodeFanoutAll
	}
	if !reflect.DeepEqual(o.Status.DiskStatus, n.Status.DiskStatus) {
		return nodeFanoutCapacity
	}
	return nodeFanoutNone
}

// nodeWithoutCapacity is n's status without the disks' storage numbers and
// scheduled maps and without condition timestamps.
func nodeWithoutCapacity(n *longhorn.Node) longhorn.NodeStatus {
	s := *n.Status.DeepCopy()
	s.Conditions = conditionsWithoutTimes(s.Conditions)
	for _, d := range s.DiskStatus {
		if d == nil {
			continue
		}
		d.StorageAvailable, d.StorageScheduled, d.StorageMaximum = 0, 0, 0
		d.ScheduledReplica, d.ScheduledBackingImage = nil, nil
		d.Conditions = conditionsWithoutTimes(d.Conditions)
	}
	return s
}

func conditionsWithoutTimes(cs []longhorn.Condition) []longhorn.Condition {
	out := make([]longhorn.Condition, len(cs))
	for i, c := range cs {
		c.LastProbeTime, c.LastTransitionTime = "", ""
		out[i] = c
	}
	return out
}

// decideIMFanout compares two versions of an instance manager (pure): all
// when anything but the instance maps changed (state, IP, ownership, spec;
// nil side: add or delete), else the names of the engine and replica
// instances whose entry changed, appeared or went away.
func decideIMFanout(o, n *longhorn.InstanceManager) (all bool, engines, replicas []string) {
	if o == nil || n == nil {
		return true, nil, nil
	}
	a, b := o.Status.DeepCopy(), n.Status.DeepCopy()
	a.InstanceEngines, a.InstanceReplicas, a.InstanceEngineFrontends = nil, nil, nil
	b.InstanceEngines, b.InstanceReplicas, b.InstanceEngineFrontends = nil, nil, nil
	a.Conditions, b.Conditions = conditionsWithoutTimes(a.Conditions), conditionsWithoutTimes(b.Conditions)
	if (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || !reflect.DeepEqual(o.Spec, n.Spec) || !reflect.DeepEqual(a, b) {
		return true, nil, nil
	}
	engines = changedKeys(o.Status.InstanceEngines, n.Status.InstanceEngines)
	engines = append(engines, changedKeys(o.Status.InstanceEngineFrontends, n.Status.InstanceEngineFrontends)...)
	return false, engines, changedKeys(o.Status.InstanceReplicas, n.Status.InstanceReplicas)
}

// changedKeys lists the keys whose value differs between a and b (either
// side missing counts).
func changedKeys(a, b map[string]longhorn.InstanceProcess) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !reflect.DeepEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// onNodeFanout calls fn(node, scope) for a Longhorn node added, deleted or
// updated in a way dependants read (decideNodeFanout not none).
func onNodeFanout(fn func(n *longhorn.Node, scope nodeFanout)) cache.ResourceEventHandlerFuncs {
	whole := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if n, ok := obj.(*longhorn.Node); ok {
			fn(n, nodeFanoutAll)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: whole, DeleteFunc: whole, UpdateFunc: func(oldObj, newObj any) {
		o, ok1 := oldObj.(*longhorn.Node)
		n, ok2 := newObj.(*longhorn.Node)
		if !ok1 || !ok2 {
			return
		}
		if s := decideNodeFanout(o, n); s != nodeFanoutNone {
			fn(n, s)
		}
	}}
}

// onIMFanout calls all(im) for an instance manager added, deleted or
// changed beyond its instance maps, else some(im, engines, replicas) with
// the instances whose entry changed (when any did).
func onIMFanout(all func(im *longhorn.InstanceManager), some func(im *longhorn.InstanceManager, engines, replicas []string)) cache.ResourceEventHandlerFuncs {
	whole := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if im, ok := obj.(*longhorn.InstanceManager); ok {
			all(im)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: whole, DeleteFunc: whole, UpdateFunc: func(oldObj, newObj any) {
		o, ok1 := oldObj.(*longhorn.InstanceManager)
		n, ok2 := newObj.(*longhorn.InstanceManager)
		if !ok1 || !ok2 {
			return
		}
		everything, engines, replicas := decideIMFanout(o, n)
		switch {
		case everything:
			all(n)
		case len(engines)+len(replicas) > 0 && some != nil:
			some(n, engines, replicas)
		}
	}}
}

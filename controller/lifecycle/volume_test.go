package lifecycle

import (
	"slices"
	"testing"
)

func TestNextVolume(t *testing.T) {
	att := VolumeObserved{EngineExists: true, ReplicasCreated: true, DesiredNode: "n1", CurrentNode: "n1", Startable: 3}
	with := func(f func(*VolumeObserved)) VolumeObserved { o := att; f(&o); return o }
	cases := []struct {
		name string
		s    VolumeState
		o    VolumeObserved
		want VolumeState
		acts []VolumeAction
	}{
		{"new volume", "", VolumeObserved{}, VolumeCreating, nil},
		{"children created", VolumeCreating, VolumeObserved{EngineExists: true, ReplicasCreated: true}, VolumeDetached, nil},
		{"replicas missing", VolumeCreating, VolumeObserved{EngineExists: true}, VolumeCreating, nil},
		{"unknown state treated as creating", VolumeState("bogus"), VolumeObserved{}, VolumeCreating, nil},
		{"detached stays", VolumeDetached, with(func(o *VolumeObserved) { o.DesiredNode, o.CurrentNode = "", "" }),
			VolumeDetached, []VolumeAction{ActionStopEngine, ActionStopReplicas}},
		{"attach requested", VolumeDetached, with(func(o *VolumeObserved) { o.CurrentNode = "" }),
			VolumeAttaching, []VolumeAction{ActionSetCurrentNode, ActionStartReplicas}},
		{"attach requested but faulted", VolumeDetached, with(func(o *VolumeObserved) { o.CurrentNode, o.Startable = "", 0 }),
			VolumeDetached, []VolumeAction{ActionStopEngine, ActionStopReplicas}},
		{"replicas starting", VolumeAttaching, with(func(o *VolumeObserved) { o.StartableRunning = 2 }),
			VolumeAttaching, []VolumeAction{ActionStartReplicas}},
		{"replicas up: start engine", VolumeAttaching, with(func(o *VolumeObserved) { o.StartableRunning = 3 }),
			VolumeAttaching, []VolumeAction{ActionStartEngine}},
		{"engine up, endpoint not reported yet", VolumeAttaching, with(func(o *VolumeObserved) {
			o.StartableRunning, o.Engine, o.FrontendPending = 3, InstanceRunning, true
		}), VolumeAttaching, nil},
		{"engine up", VolumeAttaching, with(func(o *VolumeObserved) { o.StartableRunning, o.Engine = 3, InstanceRunning }), VolumeAttached, nil},
		{"every replica failed while attaching: detach for auto-salvage", VolumeAttaching, with(func(o *VolumeObserved) { o.Startable = 0 }),
			VolumeDetaching, []VolumeAction{ActionStopEngine}},
		{"detach while attaching", VolumeAttaching, with(func(o *VolumeObserved) { o.DesiredNode = "" }), VolumeDetaching, []VolumeAction{ActionStopEngine}},
		{"attached steady", VolumeAttached, with(func(o *VolumeObserved) { o.Engine = InstanceRunning }), VolumeAttached, []VolumeAction{ActionStartReplicas}},
		{"detach requested", VolumeAttached, with(func(o *VolumeObserved) { o.Engine, o.DesiredNode = InstanceRunning, "" }),
			VolumeDetaching, []VolumeAction{ActionStopEngine}},
		{"moved to another node", VolumeAttached, with(func(o *VolumeObserved) { o.Engine, o.DesiredNode = InstanceRunning, "n2" }),
			VolumeDetaching, []VolumeAction{ActionStopEngine}},
		{"engine crashed", VolumeAttached, with(func(o *VolumeObserved) { o.Engine = InstanceError }),
			VolumeDetaching, []VolumeAction{ActionStopEngine, ActionDetachedUnexpect}},
		{"engine node down", VolumeAttached, with(func(o *VolumeObserved) { o.Engine = InstanceUnknown }), VolumeAttached, nil},
		{"engine stopping", VolumeDetaching, with(func(o *VolumeObserved) { o.Engine = InstanceStopping }), VolumeDetaching, []VolumeAction{ActionStopEngine}},
		{"engine stopped, replicas running", VolumeDetaching, with(func(o *VolumeObserved) { o.Engine = InstanceStopped }),
			VolumeDetaching, []VolumeAction{ActionStopEngine, ActionStopReplicas}},
		{"all stopped", VolumeDetaching, with(func(o *VolumeObserved) { o.Engine, o.ReplicasStopped = InstanceStopped, true }),
			VolumeDetached, []VolumeAction{ActionStopEngine, ActionStopReplicas, ActionClearCurrentNode}},
		{"delete requested", VolumeAttached, with(func(o *VolumeObserved) { o.Deleting = true }),
			VolumeDeleting, []VolumeAction{ActionStopEngine, ActionStopReplicas, ActionClearCurrentNode}},
		{"deleting children", VolumeDeleting, with(func(o *VolumeObserved) { o.Deleting = true }),
			VolumeDeleting, []VolumeAction{ActionStopEngine, ActionStopReplicas, ActionDeleteChildren}},
		{"children gone", VolumeDeleting, VolumeObserved{Deleting: true, ChildrenGone: true}, VolumeDeleting, []VolumeAction{ActionRemoveFinalizer}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, acts := NextVolume(tc.s, tc.o)
			if got != tc.want || !slices.Equal(acts, tc.acts) {
				t.Fatalf("NextVolume(%q, %+v) = %q %v, want %q %v", tc.s, tc.o, got, acts, tc.want, tc.acts)
			}
		})
	}
}

func TestNextRobustness(t *testing.T) {
	attached := func(eng InstanceState, rw int) RobustnessObserved {
		return RobustnessObserved{State: VolumeAttached, Engine: eng, HealthyRW: rw, Usable: 3, Total: 3, Want: 3}
	}
	cases := []struct {
		name string
		cur  Robustness
		o    RobustnessObserved
		want Robustness
		acts []RobustnessAction
	}{
		{"all healthy", RobustnessUnknown, attached(InstanceRunning, 3), RobustnessHealthy, nil},
		{"more than wanted", RobustnessHealthy, attached(InstanceRunning, 4), RobustnessHealthy, nil},
		{"one lost", RobustnessHealthy, attached(InstanceRunning, 2), RobustnessDegraded, []RobustnessAction{ActionRecordDegraded}},
		{"still degraded", RobustnessDegraded, attached(InstanceRunning, 2), RobustnessDegraded, nil},
		{"rebuilt", RobustnessDegraded, attached(InstanceRunning, 3), RobustnessHealthy, []RobustnessAction{ActionClearDegraded}},
		{"all lost", RobustnessDegraded, attached(InstanceRunning, 0), RobustnessFaulted, []RobustnessAction{ActionEventFaulted, ActionConsiderSalvage}},
		{"still faulted", RobustnessFaulted, attached(InstanceRunning, 0), RobustnessFaulted, []RobustnessAction{ActionConsiderSalvage}},
		{"first attach, replicas not reported yet", RobustnessUnknown,
			RobustnessObserved{State: VolumeAttached, Engine: InstanceRunning, Usable: 3, Total: 0, Want: 3}, RobustnessUnknown, nil},
		{"engine node down", RobustnessHealthy, attached(InstanceUnknown, 3), RobustnessUnknown, nil},
		{"detached with usable replicas", RobustnessHealthy, RobustnessObserved{State: VolumeDetached, Usable: 3, Total: 3, Want: 3}, RobustnessUnknown, nil},
		{"detached, all failed", RobustnessUnknown, RobustnessObserved{State: VolumeDetached, Usable: 0, Total: 3, Want: 3},
			RobustnessFaulted, []RobustnessAction{ActionEventFaulted, ActionConsiderSalvage}},
		{"creating without replicas", "", RobustnessObserved{State: VolumeCreating, Want: 3}, RobustnessUnknown, nil},
		{"attaching counts as not attached", RobustnessUnknown, RobustnessObserved{State: VolumeAttaching, Engine: InstanceRunning, HealthyRW: 3, Usable: 3, Total: 3, Want: 3},
			RobustnessUnknown, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, acts := NextRobustness(tc.cur, tc.o)
			if got != tc.want || !slices.Equal(acts, tc.acts) {
				t.Fatalf("NextRobustness(%q, %+v) = %q %v, want %q %v", tc.cur, tc.o, got, acts, tc.want, tc.acts)
			}
		})
	}
}

package lifecycle

import (
	"slices"
	"testing"
)

func TestNextInstance(t *testing.T) {
	run := func(im IMState, proc InstanceState, started bool) InstanceObserved {
		return InstanceObserved{Desired: InstanceRunning, IM: im, Process: proc, Started: started}
	}
	stop := func(im IMState, proc InstanceState) InstanceObserved {
		return InstanceObserved{Desired: InstanceStopped, IM: im, Process: proc, Started: true}
	}
	cases := []struct {
		name        string
		cur         InstanceState
		obs         InstanceObserved
		want        InstanceState
		wantStarted bool
		wantActions []InstanceAction
	}{
		{"running process", InstanceStarting, run(IMRunning, InstanceRunning, false), InstanceRunning, true, []InstanceAction{ActionCopyAddress}},
		{"starting process", InstanceStopped, run(IMRunning, InstanceStarting, false), InstanceStarting, false, []InstanceAction{ActionClearAddress}},
		{"absent, never started: create", InstanceStopped, run(IMRunning, "", false), InstanceStopped, false, []InstanceAction{ActionClearAddress, ActionCreateInstance}},
		{"absent after start: crashed", InstanceRunning, run(IMRunning, "", true), InstanceError, true, []InstanceAction{ActionClearAddress}},
		{"stopped after start", InstanceRunning, run(IMRunning, InstanceStopped, true), InstanceError, true, []InstanceAction{ActionClearAddress}},
		{"stopping before start", InstanceStarting, run(IMRunning, InstanceStopping, false), InstanceStopping, false, []InstanceAction{ActionClearAddress}},
		{"process error", InstanceRunning, run(IMRunning, InstanceError, true), InstanceError, true, []InstanceAction{ActionClearAddress}},
		{"IM unknown after start", InstanceRunning, run(IMUnknown, InstanceRunning, true), InstanceUnknown, true, nil},
		{"IM unknown before start", InstanceStopped, run(IMUnknown, "", false), InstanceStopped, false, []InstanceAction{ActionClearAddress}},
		{"IM starting before start", InstanceStopped, run(IMStarting, "", false), InstanceStopped, false, nil},
		{"IM starting after start", InstanceRunning, run(IMStarting, "", true), InstanceError, true, []InstanceAction{ActionClearAddress}},
		{"IM stopped after start", InstanceRunning, run(IMStopped, "", true), InstanceError, true, []InstanceAction{ActionClearAddress}},
		{"IM error before start", InstanceStopped, run(IMError, "", false), InstanceStopped, false, []InstanceAction{ActionClearAddress}},
		{"no IM", "", run("", "", false), InstanceStopped, false, []InstanceAction{ActionClearAddress}},
		{"IM deleting", InstanceRunning, InstanceObserved{Desired: InstanceRunning, IM: IMRunning, IMDeleting: true, Process: InstanceRunning, Started: true},
			InstanceError, true, []InstanceAction{ActionClearAddress}},
		{"stop a running process", InstanceRunning, stop(IMRunning, InstanceRunning), InstanceRunning, false, []InstanceAction{ActionDeleteInstance}},
		{"stop a stopping process", InstanceRunning, stop(IMRunning, InstanceStopping), InstanceStopping, false, []InstanceAction{ActionDeleteInstance, ActionClearAddress}},
		{"stop an errored process", InstanceError, stop(IMRunning, InstanceError), InstanceError, false, []InstanceAction{ActionDeleteInstance, ActionClearAddress}},
		{"stopped and gone", InstanceStopping, stop(IMRunning, ""), InstanceStopped, false, []InstanceAction{ActionClearAddress}},
		{"stop on a down node", InstanceUnknown, stop(IMUnknown, InstanceRunning), InstanceStopped, false, []InstanceAction{ActionClearAddress}},
		{"stop without IM", InstanceRunning, stop("", ""), InstanceStopped, false, []InstanceAction{ActionClearAddress}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NextInstance(tc.cur, tc.obs)
			if got.State != tc.want || got.Started != tc.wantStarted || !slices.Equal(got.Actions, tc.wantActions) {
				t.Fatalf("NextInstance(%q, %+v) = %+v, want state %q started %v actions %v",
					tc.cur, tc.obs, got, tc.want, tc.wantStarted, tc.wantActions)
			}
		})
	}
}

// TestInstanceLifecycle walks one replica through start, crash and stop.
func TestInstanceLifecycle(t *testing.T) {
	cur, started := InstanceStopped, false
	steps := []struct {
		desired InstanceState
		proc    InstanceState
		want    InstanceState
	}{
		{InstanceRunning, "", InstanceStopped},                // create requested
		{InstanceRunning, InstanceStarting, InstanceStarting}, // IM reports starting
		{InstanceRunning, InstanceRunning, InstanceRunning},   // up
		{InstanceRunning, "", InstanceError},                  // crashed and gone
		{InstanceStopped, "", InstanceStopped},                // volume controller stops it
		{InstanceRunning, "", InstanceStopped},                // restarted later: create again
	}
	for i, s := range steps {
		step := NextInstance(cur, InstanceObserved{Desired: s.desired, IM: IMRunning, Process: s.proc, Started: started})
		if step.State != s.want {
			t.Fatalf("step %d: state %q, want %q", i, step.State, s.want)
		}
		cur, started = step.State, step.Started
	}
}

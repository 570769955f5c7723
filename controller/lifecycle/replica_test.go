package lifecycle

import (
	"slices"
	"testing"
	"time"
)

func TestNextReplicaMode(t *testing.T) {
	cases := []struct {
		prev, obs, want ReplicaMode
		acts            []ReplicaModeAction
	}{
		{ModeNone, ModeNone, ModeNone, nil},
		{ModeNone, ModeWO, ModeWO, []ReplicaModeAction{ActionRebuildStarted}},
		{ModeERR, ModeWO, ModeWO, []ReplicaModeAction{ActionRebuildStarted}},
		{ModeNone, ModeRW, ModeRW, []ReplicaModeAction{ActionMarkHealthy}},
		{ModeWO, ModeRW, ModeRW, []ReplicaModeAction{ActionMarkHealthy}},
		{ModeWO, ModeWO, ModeWO, nil},
		{ModeRW, ModeRW, ModeRW, nil},
		{ModeRW, ModeERR, ModeERR, []ReplicaModeAction{ActionMarkFailed}},
		{ModeWO, ModeERR, ModeERR, []ReplicaModeAction{ActionMarkFailed}},
		{ModeNone, ModeERR, ModeERR, []ReplicaModeAction{ActionMarkFailed}},
		{ModeERR, ModeERR, ModeERR, nil},
		{ModeRW, ModeNone, ModeERR, []ReplicaModeAction{ActionMarkFailed}},
		{ModeWO, ModeNone, ModeERR, []ReplicaModeAction{ActionMarkFailed}},
		{ModeERR, ModeNone, ModeERR, nil},
		{ModeERR, ModeRW, ModeRW, []ReplicaModeAction{ActionMarkHealthy}},
		{ModeRW, ReplicaMode("bogus"), ModeRW, nil},
	}
	for _, tc := range cases {
		got, acts := NextReplicaMode(tc.prev, tc.obs)
		if got != tc.want || !slices.Equal(acts, tc.acts) {
			t.Errorf("NextReplicaMode(%q, %q) = %q %v, want %q %v", tc.prev, tc.obs, got, acts, tc.want, tc.acts)
		}
	}
}

func TestNextRebuild(t *testing.T) {
	ready := RebuildObserved{ReplicaRunning: true, Allowed: true, Timeout: time.Minute}
	with := func(f func(*RebuildObserved)) RebuildObserved { o := ready; f(&o); return o }
	cases := []struct {
		name string
		s    RebuildState
		o    RebuildObserved
		want RebuildState
		acts []RebuildAction
	}{
		{"start when running and allowed", RebuildIdle, ready, RebuildRequested, []RebuildAction{ActionAddReplica}},
		{"wait for the limit", RebuildIdle, with(func(o *RebuildObserved) { o.Allowed = false }), RebuildIdle, nil},
		{"wait for the process", RebuildIdle, with(func(o *RebuildObserved) { o.ReplicaRunning = false }), RebuildIdle, nil},
		{"already RW at engine start", RebuildIdle, with(func(o *RebuildObserved) { o.InEngine, o.Mode = true, ModeRW }), RebuildCompleted, nil},
		{"WO seen", RebuildRequested, with(func(o *RebuildObserved) { o.InEngine, o.Mode = true, ModeWO }), RebuildInProgress, nil},
		{"status rebuilding", RebuildRequested, with(func(o *RebuildObserved) { o.StatusRebuilding = true }), RebuildInProgress, nil},
		{"request pending", RebuildRequested, with(func(o *RebuildObserved) { o.SinceRequested = 30 * time.Second }), RebuildRequested, nil},
		{"request timed out", RebuildRequested, with(func(o *RebuildObserved) { o.SinceRequested = 61 * time.Second }), RebuildFailed, []RebuildAction{ActionRebuildFailed}},
		{"request at exactly the timeout", RebuildRequested, with(func(o *RebuildObserved) { o.SinceRequested = time.Minute }), RebuildRequested, nil},
		{"finished", RebuildInProgress, with(func(o *RebuildObserved) { o.InEngine, o.Mode = true, ModeRW }), RebuildCompleted, []RebuildAction{ActionRebuildDone}},
		{"finished before WO seen", RebuildRequested, with(func(o *RebuildObserved) { o.InEngine, o.Mode = true, ModeRW }), RebuildCompleted, []RebuildAction{ActionRebuildDone}},
		{"ERR", RebuildInProgress, with(func(o *RebuildObserved) { o.InEngine, o.Mode = true, ModeERR }), RebuildFailed, []RebuildAction{ActionRebuildFailed}},
		{"engine error", RebuildInProgress, with(func(o *RebuildObserved) { o.InEngine, o.Mode, o.StatusError = true, ModeWO, "sync failed" }), RebuildFailed, []RebuildAction{ActionRebuildFailed}},
		{"still WO", RebuildInProgress, with(func(o *RebuildObserved) { o.InEngine, o.Mode = true, ModeWO }), RebuildInProgress, nil},
		{"dropped while rebuilding", RebuildInProgress, ready, RebuildFailed, []RebuildAction{ActionRebuildFailed}},
		{"completed and still in", RebuildCompleted, with(func(o *RebuildObserved) { o.InEngine, o.Mode = true, ModeRW }), RebuildCompleted, nil},
		{"completed and removed (added by the next step)", RebuildCompleted, ready, RebuildIdle, nil},
		{"failed is terminal", RebuildFailed, ready, RebuildFailed, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, acts := NextRebuild(tc.s, tc.o)
			if got != tc.want || !slices.Equal(acts, tc.acts) {
				t.Fatalf("NextRebuild(%q) = %q %v, want %q %v", tc.s, got, acts, tc.want, tc.acts)
			}
		})
	}
}

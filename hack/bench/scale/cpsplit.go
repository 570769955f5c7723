package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Attach milestones, in the order an attach passes them: the attachment
// controller sets spec.nodeID, the volume controller moves the volume to
// attaching and asks for the replicas, the replica controllers start them
// (the instance managers' status lists their processes running, then the
// Replicas say running), the volume controller asks for the engine, the
// engine controller starts it (likewise), the engine monitor reads its
// endpoint, the volume becomes attached.
var splitMarks = []string{"spec.nodeID", "attaching", "replicas wanted", "replica procs running (IM)", "replicas running",
	"engine wanted", "engine starting", "engine proc running (IM)", "engine running", "endpoint", "attached"}

// splitConds are the milestones' conditions on a volume's view, in
// splitMarks' order.
var splitConds = []func(vv volView, node string) bool{
	func(vv volView, node string) bool { return vv.V != nil && vv.V.Spec.NodeID == node },
	func(vv volView, _ string) bool {
		return vv.V != nil && (vv.V.Status.State == longhorn.VolumeStateAttaching || vv.V.Status.State == longhorn.VolumeStateAttached)
	},
	func(vv volView, _ string) bool {
		return replicasAll(vv, func(r *longhorn.Replica) bool { return r.Spec.DesireState == longhorn.InstanceStateRunning })
	},
	func(vv volView, _ string) bool {
		return replicasAll(vv, func(r *longhorn.Replica) bool { return vv.Procs[r.Name] == longhorn.InstanceStateRunning })
	},
	func(vv volView, _ string) bool { return replicasAll(vv, running) },
	func(vv volView, node string) bool {
		return vv.Eng != nil && vv.Eng.Spec.NodeID == node && vv.Eng.Spec.DesireState == longhorn.InstanceStateRunning
	},
	func(vv volView, _ string) bool {
		return vv.Eng != nil && (vv.Eng.Status.CurrentState == longhorn.InstanceStateStarting || vv.Eng.Status.CurrentState == longhorn.InstanceStateRunning)
	},
	func(vv volView, _ string) bool {
		return vv.Eng != nil && vv.Procs[vv.Eng.Name] == longhorn.InstanceStateRunning
	},
	func(vv volView, _ string) bool {
		return vv.Eng != nil && vv.Eng.Status.CurrentState == longhorn.InstanceStateRunning
	},
	func(vv volView, _ string) bool { return vv.Endpoint != "" },
	func(vv volView, _ string) bool {
		return vv.V != nil && vv.V.Status.State == longhorn.VolumeStateAttached
	},
}

func running(r *longhorn.Replica) bool { return r.Status.CurrentState == longhorn.InstanceStateRunning }

// replicasAll: the volume has replicas and every one satisfies ok.
func replicasAll(vv volView, ok func(*longhorn.Replica) bool) bool {
	if len(vv.Reps) == 0 {
		return false
	}
	for _, r := range vv.Reps {
		if !ok(r) {
			return false
		}
	}
	return true
}

// AttachSplit is one attach's milestones: seconds from the ticket update
// to the first watch event at which each held (-1: not seen).
type AttachSplit struct {
	Volume string    `json:"volume"`
	Node   string    `json:"node"`
	Total  float64   `json:"total_s"`
	Marks  []float64 `json:"marks_s"` // in splitMarks' order
}

// splitRecorder stamps each armed volume's milestones; guarded by the
// tracker's mutex.
type splitRecorder struct {
	armed map[string]*splitArm
}

type splitArm struct {
	node  string
	t0    time.Time
	marks []time.Time
}

// arm starts recording name's attach to node from t0; t.mu not held.
func (t *tracker) arm(name, node string, t0 time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.split.armed == nil {
		t.split.armed = map[string]*splitArm{}
	}
	t.split.armed[name] = &splitArm{node: node, t0: t0, marks: make([]time.Time, len(splitMarks))}
	t.stamp(name, t.view(name), time.Now())
}

// stamp records the milestones that hold now for name; t.mu held.
func (t *tracker) stamp(name string, vv *volView, now time.Time) {
	a := t.split.armed[name]
	if a == nil {
		return
	}
	for i, cond := range splitConds {
		if a.marks[i].IsZero() && cond(*vv, a.node) {
			a.marks[i] = now
		}
	}
}

// disarm returns name's split with the attach's total latency.
func (t *tracker) disarm(name string, total time.Duration) AttachSplit {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.split.armed[name]
	delete(t.split.armed, name)
	s := AttachSplit{Volume: name, Total: total.Seconds()}
	if a == nil {
		return s
	}
	s.Node = a.node
	for _, m := range a.marks {
		d := -1.0
		if !m.IsZero() {
			d = m.Sub(a.t0).Seconds()
		}
		s.Marks = append(s.Marks, d)
	}
	return s
}

// printAttachSplit prints the median of each milestone and the slowest
// attaches in full.
func printAttachSplit(w io.Writer, splits []AttachSplit, slowest int) {
	if len(splits) == 0 {
		return
	}
	fmt.Fprintf(w, "Attach split (s from the ticket to the first watch event with each milestone): %s\n", strings.Join(splitMarks, " | "))
	med := make([]string, len(splitMarks))
	for i := range splitMarks {
		var xs []float64
		for _, s := range splits {
			if i < len(s.Marks) && s.Marks[i] >= 0 {
				xs = append(xs, s.Marks[i])
			}
		}
		slices.Sort(xs)
		med[i] = "-"
		if len(xs) > 0 {
			med[i] = fmt.Sprintf("%.2f", percentile(xs, 0.5))
		}
	}
	fmt.Fprintf(w, "  p50 of each: %s\n", strings.Join(med, " | "))
	byTotal := slices.Clone(splits)
	slices.SortFunc(byTotal, func(a, b AttachSplit) int { return cmp.Compare(b.Total, a.Total) })
	for _, s := range byTotal[:min(slowest, len(byTotal))] {
		cells := make([]string, len(s.Marks))
		for i, m := range s.Marks {
			cells[i] = fmt.Sprintf("%.2f", m)
		}
		fmt.Fprintf(w, "  %s on %s total %.2f: %s\n", s.Volume, s.Node, s.Total, strings.Join(cells, " | "))
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestAttachSplit feeds one attach's objects to the tracker's handlers in
// the order the controllers write them and checks each milestone is
// stamped at the event that first satisfies it, and none before.
func TestAttachSplit(t *testing.T) {
	if len(splitConds) != len(splitMarks) {
		t.Fatalf("%d conditions for %d milestones", len(splitConds), len(splitMarks))
	}
	tr := &tracker{vols: map[string]*volView{}, waiters: map[string][]*waiter{},
		imProcs: map[string]map[string]longhorn.InstanceState{}, procs: map[string]longhorn.InstanceState{}}
	vol := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v"}}
	vol.Status.State = longhorn.VolumeStateDetached
	rep := &longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: "v-r-1"}}
	rep.Spec.VolumeName = "v"
	eng := &longhorn.Engine{ObjectMeta: metav1.ObjectMeta{Name: "v-e-0"}}
	eng.Spec.VolumeName = "v"
	im := &longhorn.InstanceManager{ObjectMeta: metav1.ObjectMeta{Name: "im-1"}}
	tr.volume(vol, false)
	tr.replica(rep, false)
	tr.engine(eng, false)
	t0 := time.Now()
	tr.arm("v", "n1", t0)

	// Each step changes a copy and hands it to its handler.
	steps := []func(){
		func() { vol = vol.DeepCopy(); vol.Spec.NodeID = "n1"; tr.volume(vol, false) },
		func() { vol = vol.DeepCopy(); vol.Status.State = longhorn.VolumeStateAttaching; tr.volume(vol, false) },
		func() {
			rep = rep.DeepCopy()
			rep.Spec.DesireState = longhorn.InstanceStateRunning
			tr.replica(rep, false)
		},
		func() {
			im = im.DeepCopy()
			im.Status.InstanceReplicas = map[string]longhorn.InstanceProcess{rep.Name: {Status: longhorn.InstanceProcessStatus{State: longhorn.InstanceStateRunning}}}
			tr.instanceManager(im, false)
		},
		func() {
			rep = rep.DeepCopy()
			rep.Status.CurrentState = longhorn.InstanceStateRunning
			tr.replica(rep, false)
		},
		func() {
			eng = eng.DeepCopy()
			eng.Spec.NodeID, eng.Spec.DesireState = "n1", longhorn.InstanceStateRunning
			tr.engine(eng, false)
		},
		func() {
			eng = eng.DeepCopy()
			eng.Status.CurrentState = longhorn.InstanceStateStarting
			tr.engine(eng, false)
		},
		func() {
			im = im.DeepCopy()
			im.Status.InstanceEngines = map[string]longhorn.InstanceProcess{eng.Name: {Status: longhorn.InstanceProcessStatus{State: longhorn.InstanceStateRunning}}}
			tr.instanceManager(im, false)
		},
		func() {
			eng = eng.DeepCopy()
			eng.Status.CurrentState = longhorn.InstanceStateRunning
			tr.engine(eng, false)
		},
		func() { eng = eng.DeepCopy(); eng.Status.Endpoint = "/dev/longhorn/v"; tr.engine(eng, false) },
		func() { vol = vol.DeepCopy(); vol.Status.State = longhorn.VolumeStateAttached; tr.volume(vol, false) },
	}
	if len(steps) != len(splitMarks) {
		t.Fatalf("%d steps for %d milestones", len(steps), len(splitMarks))
	}
	for i, step := range steps {
		step()
		tr.mu.Lock()
		marks := tr.split.armed["v"].marks
		for j, m := range marks {
			if (j <= i) == m.IsZero() {
				t.Fatalf("after step %d (%s): milestone %d (%s) stamped=%v", i, splitMarks[i], j, splitMarks[j], !m.IsZero())
			}
		}
		tr.mu.Unlock()
	}
	s := tr.disarm("v", 2*time.Second)
	if s.Node != "n1" || s.Total != 2 || len(s.Marks) != len(splitMarks) {
		t.Fatalf("split %+v", s)
	}
	for i, m := range s.Marks {
		if m < 0 || (i > 0 && m < s.Marks[i-1]) {
			t.Fatalf("marks out of order: %v", s.Marks)
		}
	}
	var out bytes.Buffer
	printAttachSplit(&out, []AttachSplit{s, {Volume: "w", Node: "n2", Total: 3, Marks: []float64{-1}}}, 1)
	if got := out.String(); !strings.Contains(got, "w on n2 total 3.00: -1.00") || strings.Contains(got, "v on n1") {
		t.Fatalf("print: the slowest attach only, got\n%s", got)
	}
}

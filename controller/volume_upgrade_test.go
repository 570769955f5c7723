package controller

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/record"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestEngineUpgradeOffline: a detached volume's engine and replicas take the
// new image and status.currentImage follows; one whose processes still run
// keeps its current image (the live path of an attached volume is
// TestVolumeLiveUpgrade's).
func TestEngineUpgradeOffline(t *testing.T) {
	mk := func(state longhorn.VolumeState, inst longhorn.InstanceState) *volumeSnapshot {
		v := &longhorn.Volume{}
		v.Spec.Image, v.Status.CurrentImage, v.Status.State = "new", "old", state
		e := &longhorn.Engine{}
		e.Spec.Image, e.Status.CurrentState = "old", inst
		r := &longhorn.Replica{}
		r.Name, r.Spec.Active = "r", true
		r.Spec.Image, r.Status.CurrentState = "old", inst
		return &volumeSnapshot{vol: v, engRO: e.DeepCopy(), eng: e, reps: map[string]*longhorn.Replica{"r": r},
			fresh: map[string]bool{}, gone: map[string]bool{}}
	}
	c := &VolumeController{env: &env{recorder: record.NewFakeRecorder(10)}}
	cases := []struct {
		name  string
		s     *volumeSnapshot
		moved bool
	}{
		{"detached", mk(longhorn.VolumeStateDetached, longhorn.InstanceStateStopped), true},
		{"detached, engine still stopping", mk(longhorn.VolumeStateDetached, longhorn.InstanceStateStopping), false},
	}
	for _, tc := range cases {
		if err := c.reconcileEngineUpgrade(context.Background(), tc.s); err != nil {
			t.Fatal(err)
		}
		want := "old"
		if tc.moved {
			want = "new"
		}
		if tc.s.vol.Status.CurrentImage != want || tc.s.eng.Spec.Image != want || tc.s.reps["r"].Spec.Image != want {
			t.Errorf("%s: currentImage %q engine %q replica %q, want %q", tc.name, tc.s.vol.Status.CurrentImage,
				tc.s.eng.Spec.Image, tc.s.reps["r"].Spec.Image, want)
		}
	}
	fresh := mk(longhorn.VolumeStateCreating, "")
	fresh.vol.Status.CurrentImage = ""
	_ = c.reconcileEngineUpgrade(context.Background(), fresh)
	if fresh.vol.Status.CurrentImage != "new" {
		t.Errorf("new volume: currentImage %q, want new", fresh.vol.Status.CurrentImage)
	}
}

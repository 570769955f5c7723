package webhook

import (
	"context"
	"strings"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestImageChange: admission decides a spec.image change with
// lifecycle.CheckEngineUpgrade (its table is in controller/lifecycle): a
// detached volume moves unless restoring or expanding, a healthy attached
// nbd volume moves live, other frontends and unhealthy volumes are refused
// naming spec.image, and a rollback to status.currentImage passes.
func TestImageChange(t *testing.T) {
	attached := func(s *longhorn.VolumeStatus) {
		s.State, s.Robustness = longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy
	}
	cases := []struct {
		name      string
		frontend  longhorn.VolumeFrontend
		status    func(s *longhorn.VolumeStatus)
		wantField string
		wantMsg   string
	}{
		{"detached", longhorn.VolumeFrontendBlockDev, func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateDetached }, "", ""},
		{"creating", longhorn.VolumeFrontendBlockDev, func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateCreating }, "", ""},
		{"attached nbd", longhorn.VolumeFrontendNBD, attached, "", ""},
		{"attached blockdev", longhorn.VolumeFrontendBlockDev, attached, "spec.image", "not supported yet for frontend blockdev"},
		{"attached degraded", longhorn.VolumeFrontendNBD, func(s *longhorn.VolumeStatus) {
			attached(s)
			s.Robustness = longhorn.VolumeRobustnessDegraded
		}, "spec.image", "cannot do live upgrade for a unhealthy volume"},
		{"attaching", longhorn.VolumeFrontendNBD, func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateAttaching }, "spec.image", "attaching"},
		{"restoring", longhorn.VolumeFrontendNBD, func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateDetached; s.RestoreRequired = true }, "spec.image", "restoring"},
		{"expanding", longhorn.VolumeFrontendNBD, func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateDetached; s.ExpansionRequired = true }, "spec.image", "expanding"},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validVolume()
			old.Spec.Image, old.Spec.Frontend, old.Status.CurrentImage = "longhorn:a", tc.frontend, "longhorn:a"
			tc.status(&old.Status)
			v := old.DeepCopy()
			v.Spec.Image = "longhorn:b"
			err := checkImageChange(ctx, stubVolumeStore{}, old, v)
			checkField(t, err, tc.wantField)
			if err != nil && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("error %v does not say %q", err, tc.wantMsg)
			}
			if err := checkImageChange(ctx, stubVolumeStore{}, old, old.DeepCopy()); err != nil {
				t.Fatalf("unchanged image refused: %v", err)
			}
			// During an upgrade (spec.image ahead of currentImage), going back
			// is a rollback and passes; a third image is refused.
			up := old.DeepCopy()
			up.Spec.Image = "longhorn:b"
			back := up.DeepCopy()
			back.Spec.Image = "longhorn:a"
			if err := checkImageChange(ctx, stubVolumeStore{}, up, back); err != nil {
				t.Fatalf("rollback refused: %v", err)
			}
			third := up.DeepCopy()
			third.Spec.Image = "longhorn:c"
			if err := checkImageChange(ctx, stubVolumeStore{}, up, third); err == nil || !strings.Contains(err.Error(), "upgrading in process") {
				t.Fatalf("third image during an upgrade: %v", err)
			}
		})
	}
}

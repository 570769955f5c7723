package webhook

import (
	"strings"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestImageChange: spec.image changes only on a detached volume that is not
// restoring or expanding; an attached one is refused as not supported yet.
func TestImageChange(t *testing.T) {
	cases := []struct {
		name      string
		status    func(s *longhorn.VolumeStatus)
		wantField string
		wantMsg   string
	}{
		{"detached", func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateDetached }, "", ""},
		{"creating", func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateCreating }, "", ""},
		{"attached", func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateAttached }, "spec.image", "not supported yet"},
		{"attaching", func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateAttaching }, "spec.image", "not supported yet"},
		{"restoring", func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateDetached; s.RestoreRequired = true }, "spec.image", "restoring"},
		{"expanding", func(s *longhorn.VolumeStatus) { s.State = longhorn.VolumeStateDetached; s.ExpansionRequired = true }, "spec.image", "expanding"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validVolume()
			old.Spec.Image = "longhorn:a"
			tc.status(&old.Status)
			v := old.DeepCopy()
			v.Spec.Image = "longhorn:b"
			err := checkImageChange(old, v)
			checkField(t, err, tc.wantField)
			if err != nil && !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("error %v does not say %q", err, tc.wantMsg)
			}
			if err := checkImageChange(old, old.DeepCopy()); err != nil {
				t.Fatalf("unchanged image refused: %v", err)
			}
		})
	}
}

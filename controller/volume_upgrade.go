package controller

import (
	"context"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// reconcileEngineUpgrade is Longhorn's offline engine upgrade: a volume
// whose spec.image differs from status.currentImage moves to the new image
// while it is detached (its engine and replicas get spec.image, and the
// processes start from it at the next attach); status.currentImage then
// follows. An attached volume keeps its current image: live engine upgrade
// is not supported yet and the admission webhook refuses the change while
// the volume is attached. A new volume takes spec.image at once.
func (c *VolumeController) reconcileEngineUpgrade(_ context.Context, s *volumeSnapshot) error {
	v := s.vol
	if v.Status.CurrentImage == v.Spec.Image {
		return nil
	}
	if v.Status.CurrentImage != "" && !offlineUpgradable(s) {
		return nil
	}
	if s.eng != nil {
		s.eng.Spec.Image = v.Spec.Image
	}
	for _, r := range s.reps {
		r.Spec.Image = v.Spec.Image
	}
	v.Status.CurrentImage = v.Spec.Image
	return nil
}

// offlineUpgradable: the volume is detached and neither its engine nor any
// replica process runs (their images may change only while stopped).
func offlineUpgradable(s *volumeSnapshot) bool {
	if s.vol.Status.State != longhorn.VolumeStateDetached {
		return false
	}
	if s.eng != nil && !stoppedOrNew(s.eng.Status.CurrentState) {
		return false
	}
	for _, r := range s.reps {
		if !stoppedOrNew(r.Status.CurrentState) {
			return false
		}
	}
	return true
}

// stoppedOrNew: an instance that is stopped or has never been started.
func stoppedOrNew(st longhorn.InstanceState) bool {
	return st == longhorn.InstanceStateStopped || st == ""
}

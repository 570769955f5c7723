package api

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// EngineUpgradeInput is the body of the engineUpgrade action (Longhorn's
// EngineUpgradeInput).
type EngineUpgradeInput struct {
	Image string `json:"image"`
}

// liveUpgradeMissing is why engineUpgrade answers 501 on a volume that is
// not detached.
const liveUpgradeMissing = "live engine upgrade of an attached volume (detach the volume to upgrade its engine image)"

// engineUpgrade sets spec.image of a detached volume to a deployed engine
// image (Longhorn's offline engine upgrade); the volume controller moves the
// engine and replicas to it. The webhook refuses it while the volume is
// restoring or expanding.
func (s *Server) engineUpgrade(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in EngineUpgradeInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Image == "" {
		return 0, nil, invalidInput("image", "is required: the engine image to upgrade to")
	}
	ei, err := s.ds.GetEngineImageRO(ctx, types.EngineImageName(in.Image))
	if apierrors.IsNotFound(err) {
		return 0, nil, invalidInput("image", "%q is not an engine image of this system", in.Image)
	} else if err != nil {
		return 0, nil, err
	}
	if ei.Status.State != longhorn.EngineImageStateDeployed {
		return 0, nil, invalidInput("image", "engine image %q is %s, not deployed", in.Image, orUnknown(string(ei.Status.State)))
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { sp.Image = in.Image; return nil })
}

package api

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// EngineUpgradeInput is the body of the engineUpgrade action (Longhorn's
// EngineUpgradeInput).
type EngineUpgradeInput struct {
	Image string `json:"image"`
}

// engineUpgrade sets spec.image to a deployed engine image; the volume
// controller moves a detached volume's engine and replicas to it (offline
// upgrade) and an attached volume's engine live. What
// lifecycle.CheckEngineUpgrade refuses (restoring, expanding, rebuilding,
// degraded, a frontend the live upgrade does not support yet, ...) is a 409
// with its message, as the admission webhook decides.
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
	check, err := s.ds.EngineUpgradeCheck(ctx, v, in.Image)
	if err != nil {
		return 0, nil, err
	}
	if err := lifecycle.CheckEngineUpgrade(check); err != nil {
		return 0, nil, invalidState("%v", err)
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { sp.Image = in.Image; return nil })
}

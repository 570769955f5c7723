package webhook

import (
	"context"
	"slices"

	admissionregv1 "k8s.io/api/admissionregistration/v1"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// EngineImageStore answers what deleting an engine image depends on.
type EngineImageStore interface {
	// DefaultEngineImages returns setting default-engine-image and the
	// manager's own --engine-image (either may be "").
	DefaultEngineImages(ctx context.Context) ([]string, error)
}

// EngineImageKind is the admission registration for engine images: a
// delete of the default engine image (field spec.image) or of one still in
// use (field status.refCount) is refused with
// lifecycle.CheckEngineImageDelete's message, as Longhorn's engine image
// validator does. The manager's automatic clean-up of an unused image
// passes the same check.
func EngineImageKind(store EngineImageStore) Kind[*longhorn.EngineImage] {
	return Kind[*longhorn.EngineImage]{
		Resource:   "engineimages",
		New:        func() *longhorn.EngineImage { return &longhorn.EngineImage{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Delete},
		Validate: func(ctx context.Context, req Request[*longhorn.EngineImage]) error {
			if !req.HasOld {
				return nil
			}
			defaults, err := store.DefaultEngineImages(ctx)
			if err != nil {
				return err
			}
			ei := req.Old
			if err := lifecycle.CheckEngineImageDelete(ei.Spec.Image, ei.Status.RefCount, defaults...); err != nil {
				field := "status.refCount"
				if slices.Contains(defaults, ei.Spec.Image) {
					field = "spec.image"
				}
				return Invalid(field, "%s", err.Error())
			}
			return nil
		},
	}
}

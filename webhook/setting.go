package webhook

import (
	"context"
	"errors"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// SettingStore answers the questions setting admission asks.
type SettingStore interface {
	// AnyVolumeAttached reports whether some volume is not detached; settings
	// that restart instance managers (storage-network) only change then.
	AnyVolumeAttached(ctx context.Context) (bool, error)
}

// restartingSettings change the instance-manager pods, so they may only
// change while every volume is detached (Longhorn's rule for the danger-zone
// settings that recreate system pods).
var restartingSettings = map[types.SettingName]bool{
	types.SettingNameStorageNetwork: true,
}

// SettingKind is the admission registration for settings: the name must be
// a known setting and the value must pass types.ValidateSetting (type,
// range, choices, per-data-engine JSON). Mutation stores a valid value of a
// per-data-engine setting as Longhorn does, a JSON object keyed by data
// engine ("3" -> {"v1":"3","v2":"3"}).
func SettingKind(store SettingStore) Kind[*longhorn.Setting] {
	return Kind[*longhorn.Setting]{
		Resource:   "settings",
		New:        func() *longhorn.Setting { return &longhorn.Setting{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Mutate: func(_ context.Context, req Request[*longhorn.Setting]) ([]PatchOp, error) {
			return normalizeSetting(req.Object), nil
		},
		Validate: func(ctx context.Context, req Request[*longhorn.Setting]) error {
			s := req.Object
			if err := types.ValidateSetting(s.Name, s.Value); err != nil {
				var ve *types.SettingValueError
				if errors.As(err, &ve) {
					return Invalid("value", "%s", ve.Error())
				}
				if errors.Is(err, types.ErrUnknownSetting) {
					return Invalid("metadata.name", "%q is not a Longhorn setting", s.Name)
				}
				return err
			}
			if req.Operation == admissionv1.Update && req.Old.Value != s.Value && restartingSettings[types.SettingName(s.Name)] {
				attached, err := store.AnyVolumeAttached(ctx)
				if err != nil {
					return err
				}
				if attached {
					return Invalid("value", "setting %s can only change while all volumes are detached", s.Name)
				}
			}
			return nil
		},
	}
}

// normalizeSetting patches a valid value into its stored form
// (types.NormalizeSettingValue); invalid values are left for validation
// to refuse with the value the user gave.
func normalizeSetting(s *longhorn.Setting) []PatchOp {
	if types.ValidateSetting(s.Name, s.Value) != nil {
		return nil
	}
	v, err := types.NormalizeSettingValue(types.SettingName(s.Name), s.Value)
	if err != nil || v == s.Value {
		return nil
	}
	return []PatchOp{{Op: "replace", Path: "/value", Value: v}}
}

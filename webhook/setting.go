package webhook

import (
	"context"
	"errors"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// SettingStore answers the questions setting admission asks.
type SettingStore interface {
	// AttachedVolumes lists, sorted, the volumes that are not detached;
	// settings that restart instance managers (storage-network) only change
	// while it is empty.
	AttachedVolumes(ctx context.Context) ([]string, error)
	// NetworkAttachmentDefinitionExists reports whether the Multus
	// NetworkAttachmentDefinition namespace/name exists (false, nil also when
	// the k8s.cni.cncf.io CRD is not installed).
	NetworkAttachmentDefinitionExists(ctx context.Context, namespace, name string) (bool, error)
}

// restartingSettings change the instance-manager pods, so they may only
// change while every volume is detached (Longhorn's rule for the danger-zone
// settings that recreate system pods).
var restartingSettings = map[types.SettingName]bool{
	types.SettingNameStorageNetwork: true,
}

// networkSettings name a Multus NetworkAttachmentDefinition, which must exist.
var networkSettings = map[types.SettingName]bool{
	types.SettingNameStorageNetwork: true,
}

// maxListedVolumes bounds the attached volumes a refusal names.
const maxListedVolumes = 20

// SettingKind is the admission registration for settings: the name must be
// a known setting and the value must pass types.ValidateSetting (type,
// range, choices, per-data-engine JSON); a changed value of a setting the
// product does not act on yet must be its default or an inert value
// (types.ValidateSettingSupported: "not supported yet"). storage-network must name an
// existing NetworkAttachmentDefinition, and changes only while every
// volume is detached (the refusal lists the attached ones). Mutation stores
// a valid value of a per-data-engine setting as Longhorn does, a JSON object
// keyed by data engine ("3" -> {"v1":"3","v2":"3"}).
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
			changed := req.Operation != admissionv1.Update || req.Old.Value != s.Value
			if !changed {
				return nil
			}
			name := types.SettingName(s.Name)
			if err := types.ValidateSettingSupported(name, s.Value); err != nil {
				return Invalid("value", "%s", err.Error())
			}
			if networkSettings[name] && s.Value != "" {
				if err := checkNetworkExists(ctx, store, s.Value); err != nil {
					return err
				}
			}
			if req.Operation == admissionv1.Update && restartingSettings[name] {
				return checkAllDetached(ctx, store, s.Name)
			}
			return nil
		},
	}
}

// checkNetworkExists refuses a "<namespace>/<name>" (already
// format-checked) whose NetworkAttachmentDefinition is missing.
func checkNetworkExists(ctx context.Context, store SettingStore, ref string) error {
	ns, name, _ := strings.Cut(ref, "/")
	ok, err := store.NetworkAttachmentDefinitionExists(ctx, ns, name)
	if err != nil {
		return err
	}
	if !ok {
		return Invalid("value", "NetworkAttachmentDefinition %s not found (k8s.cni.cncf.io/v1 network-attachment-definitions in namespace %s); create it before setting %s",
			ref, ns, types.SettingNameStorageNetwork)
	}
	return nil
}

// checkAllDetached refuses a change of setting while volumes are attached
// and names them.
func checkAllDetached(ctx context.Context, store SettingStore, setting string) error {
	vols, err := store.AttachedVolumes(ctx)
	if err != nil {
		return err
	}
	if len(vols) == 0 {
		return nil
	}
	list := vols
	if len(list) > maxListedVolumes {
		list = list[:maxListedVolumes]
	}
	more := ""
	if n := len(vols) - len(list); n > 0 {
		more = " and " + strconv.Itoa(n) + " more"
	}
	return Invalid("value", "setting %s can only change while all volumes are detached; %d attached: %s%s (detach them first)",
		setting, len(vols), strings.Join(list, ", "), more)
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

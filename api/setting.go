package api

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Setting is a setting resource: the value in force (the Setting object's,
// or the definition default when the object does not exist yet) and its
// definition (Longhorn's api/model.go Setting, plus applied).
type Setting struct {
	Resource
	Name       string                  `json:"name"`
	Value      string                  `json:"value"`
	Applied    bool                    `json:"applied"`
	Definition types.SettingDefinition `json:"definition"`
}

func (u urls) setting(def types.SettingDefinition, s *longhorn.Setting) Setting {
	out := Setting{Resource: u.newResource("setting", "settings", string(def.Name)),
		Name: string(def.Name), Value: def.Default, Definition: def}
	if s != nil {
		out.Value, out.Applied = s.Value, s.Status.Applied
	}
	return out
}

func (s *Server) listSettings(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListSettingsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	byName := make(map[string]*longhorn.Setting, len(objs))
	for _, o := range objs {
		byName[o.Name] = o
	}
	var out []Setting
	for _, def := range types.SettingDefinitions() {
		out = append(out, u.setting(def, byName[string(def.Name)]))
	}
	return http.StatusOK, u.newCollection("setting", "settings", out), nil
}

// settingDefinition returns the definition of the {name} path value, 404 if
// there is none.
func settingDefinition(r *http.Request) (types.SettingDefinition, error) {
	name := r.PathValue("name")
	def, ok := types.GetSettingDefinition(types.SettingName(name))
	if !ok {
		return def, newError(http.StatusNotFound, CodeNotFound, "setting %q not found", name)
	}
	return def, nil
}

func (s *Server) getSetting(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	def, err := settingDefinition(r)
	if err != nil {
		return 0, nil, err
	}
	obj, err := s.ds.GetSettingRO(ctx, def.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	if apierrors.IsNotFound(err) {
		obj = nil
	}
	return http.StatusOK, u.setting(def, obj), nil
}

// SettingInput is the body of PUT /v1/settings/{name}.
type SettingInput struct {
	Value string `json:"value"`
}

// updateSetting validates the value against the definition (422 naming the
// limit, in Longhorn's words), refuses read-only settings (403) and
// non-default values of settings not supported yet (422), stores a
// per-data-engine value as a JSON object keyed by data engine
// ({"v1":"3","v2":"3"}) as Longhorn does, and creates the Setting object
// when it does not exist yet.
func (s *Server) updateSetting(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	def, err := settingDefinition(r)
	if err != nil {
		return 0, nil, err
	}
	var in SettingInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if def.ReadOnly {
		return 0, nil, newError(http.StatusForbidden, CodeForbidden, "setting %s is read-only", def.Name)
	}
	if err := types.ValidateSetting(string(def.Name), in.Value); err != nil {
		return 0, nil, err
	}
	if err := types.ValidateSettingSupported(def.Name, in.Value); err != nil {
		return 0, nil, err
	}
	value, err := types.NormalizeSettingValue(def.Name, in.Value)
	if err != nil {
		return 0, nil, err
	}
	var obj *longhorn.Setting
	err = retry.RetryOnConflict(writeBackoff, func() error {
		cur, err := s.ds.GetSetting(ctx, def.Name)
		switch {
		case apierrors.IsNotFound(err):
			obj, err = s.ds.CreateSetting(ctx, &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: string(def.Name)}, Value: value})
			if apierrors.IsAlreadyExists(err) { // created meanwhile; the cache will show it
				return apierrors.NewConflict(longhorn.Resource("settings"), string(def.Name), err)
			}
		case err == nil:
			cur.Value = value
			obj, err = s.ds.UpdateSetting(ctx, cur)
		}
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.setting(def, obj), nil
}

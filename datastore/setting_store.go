package datastore

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// ErrDataEngineSpecific is returned by the plain typed getters for a
// data-engine-specific setting whose value is per-engine JSON; use the
// ...ByDataEngine getters for those.
var ErrDataEngineSpecific = errors.New("setting has one value per data engine")

// SettingInformer returns the shared informer of Setting objects.
func (ds *DataStore) SettingInformer() cache.SharedIndexInformer { return ds.settings.informer }

// GetSetting returns a deep copy of the cached Setting name.
func (ds *DataStore) GetSetting(_ context.Context, name types.SettingName) (*longhorn.Setting, error) {
	return ds.settings.get(string(name))
}

// GetSettingRO returns the cached Setting name itself; read-only.
func (ds *DataStore) GetSettingRO(_ context.Context, name types.SettingName) (*longhorn.Setting, error) {
	return ds.settings.getRO(string(name))
}

// ListSettingsRO returns the cached Settings matching selector; read-only.
func (ds *DataStore) ListSettingsRO(_ context.Context, selector labels.Selector) ([]*longhorn.Setting, error) {
	return ds.settings.listRO(selector)
}

// CreateSetting validates obj.Value against the definition table and creates
// the Setting. Errors: types.ErrUnknownSetting, *types.SettingValueError, or
// the API server's.
func (ds *DataStore) CreateSetting(ctx context.Context, obj *longhorn.Setting) (*longhorn.Setting, error) {
	if err := types.ValidateSetting(obj.Name, obj.Value); err != nil {
		return nil, err
	}
	return ds.settings.create(ctx, obj)
}

// UpdateSetting validates obj.Value and writes it.
func (ds *DataStore) UpdateSetting(ctx context.Context, obj *longhorn.Setting) (*longhorn.Setting, error) {
	if err := types.ValidateSetting(obj.Name, obj.Value); err != nil {
		return nil, err
	}
	return ds.settings.update(ctx, obj)
}

// UpdateSettingStatus writes obj's status (applied).
func (ds *DataStore) UpdateSettingStatus(ctx context.Context, obj *longhorn.Setting) (*longhorn.Setting, error) {
	return ds.settings.updateStatus(ctx, obj)
}

// GetSettingValue returns the value of setting name: the Setting object's
// value, or the definition's default when the object does not exist.
// Errors: types.ErrUnknownSetting for a name not in the table.
func (ds *DataStore) GetSettingValue(_ context.Context, name types.SettingName) (string, error) {
	def, ok := types.GetSettingDefinition(name)
	if !ok {
		return "", fmt.Errorf("%w: %q", types.ErrUnknownSetting, name)
	}
	s, err := ds.settings.getRO(string(name))
	switch {
	case apierrors.IsNotFound(err):
		return def.Default, nil
	case err != nil:
		return "", err
	}
	return s.Value, nil
}

// plainSettingValue returns the value of a setting that must have a single
// value (not per-engine JSON).
func (ds *DataStore) plainSettingValue(ctx context.Context, name types.SettingName) (string, error) {
	v, err := ds.GetSettingValue(ctx, name)
	if err != nil {
		return "", err
	}
	if def, _ := types.GetSettingDefinition(name); def.DataEngineSpecific && len(v) > 0 && v[0] == '{' {
		return "", fmt.Errorf("setting %s: %w; ask for one data engine", name, ErrDataEngineSpecific)
	}
	return v, nil
}

// GetSettingAsInt returns an int setting (default when the object is missing).
func (ds *DataStore) GetSettingAsInt(ctx context.Context, name types.SettingName) (int64, error) {
	v, err := ds.plainSettingValue(ctx, name)
	if err != nil {
		return 0, err
	}
	return types.ParseSettingInt(name, v)
}

// GetSettingAsBool returns a bool setting (default when the object is missing).
func (ds *DataStore) GetSettingAsBool(ctx context.Context, name types.SettingName) (bool, error) {
	v, err := ds.plainSettingValue(ctx, name)
	if err != nil {
		return false, err
	}
	return types.ParseSettingBool(name, v)
}

// settingValueByDataEngine returns a setting's plain value for one data
// engine (see types.SettingValueForDataEngine); works for every setting.
func (ds *DataStore) settingValueByDataEngine(ctx context.Context, name types.SettingName, engine longhorn.DataEngineType) (string, error) {
	v, err := ds.GetSettingValue(ctx, name)
	if err != nil {
		return "", err
	}
	return types.SettingValueForDataEngine(name, v, engine)
}

// GetSettingAsIntByDataEngine returns an int setting for one data engine.
func (ds *DataStore) GetSettingAsIntByDataEngine(ctx context.Context, name types.SettingName, engine longhorn.DataEngineType) (int64, error) {
	v, err := ds.settingValueByDataEngine(ctx, name, engine)
	if err != nil {
		return 0, err
	}
	return types.ParseSettingInt(name, v)
}

// GetSettingAsBoolByDataEngine returns a bool setting for one data engine.
func (ds *DataStore) GetSettingAsBoolByDataEngine(ctx context.Context, name types.SettingName, engine longhorn.DataEngineType) (bool, error) {
	v, err := ds.settingValueByDataEngine(ctx, name, engine)
	if err != nil {
		return false, err
	}
	return types.ParseSettingBool(name, v)
}

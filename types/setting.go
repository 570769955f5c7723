// Package types holds the manager's shared vocabulary that is not part of the
// CRD schema: the setting definitions (one table, setting_table.go) and their
// validation, object-name helpers and label keys. It imports only the API
// types, so every layer (datastore, controllers, webhook, REST API) can use it.
package types

import (
	"strings"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// SettingName is the name of a Setting object, e.g. "default-replica-count".
type SettingName string

// SettingCategory groups settings in the UI (Longhorn's category strings).
type SettingCategory string

// Setting categories.
const (
	SettingCategoryGeneral    SettingCategory = "general"
	SettingCategoryBackup     SettingCategory = "backup"
	SettingCategoryOrphan     SettingCategory = "orphan"
	SettingCategoryScheduling SettingCategory = "scheduling"
	SettingCategoryDangerZone SettingCategory = "danger Zone"
	SettingCategorySnapshot   SettingCategory = "snapshot"
	SettingCategorySystemInfo SettingCategory = "system info"
)

// SettingType is the value type of a setting.
type SettingType string

// Setting value types. Deprecated settings keep their object but take any string.
const (
	SettingTypeString     SettingType = "string"
	SettingTypeInt        SettingType = "int"
	SettingTypeFloat      SettingType = "float"
	SettingTypeBool       SettingType = "bool"
	SettingTypeDeprecated SettingType = "deprecated"
)

// IntRange bounds an int setting; a nil bound is open.
type IntRange struct {
	Minimum *int64 `json:"minimum,omitempty"`
	Maximum *int64 `json:"maximum,omitempty"`
}

// FloatRange bounds a float setting (inclusive).
type FloatRange struct {
	Minimum float64 `json:"minimum"`
	Maximum float64 `json:"maximum"`
}

// SettingDefinition describes one setting; JSON names follow Longhorn's
// definition objects (displayName, category, type, default, options, range...).
type SettingDefinition struct {
	Name        SettingName     `json:"-"`
	DisplayName string          `json:"displayName"`
	Description string          `json:"description"`
	Category    SettingCategory `json:"category"`
	Type        SettingType     `json:"type"`
	Required    bool            `json:"required"`
	ReadOnly    bool            `json:"readOnly"`
	// Default is the value used when no Setting object exists. For
	// data-engine-specific settings it is a JSON object keyed by data engine,
	// e.g. {"v1":"3","v2":"3"}; its keys are the engines the setting covers.
	Default string `json:"default"`
	// Options lists the allowed values (string and some int settings).
	Options    []string    `json:"options,omitempty"`
	Range      *IntRange   `json:"range,omitempty"`
	FloatRange *FloatRange `json:"floatRange,omitempty"`
	// DataEngineSpecific settings hold one value per data engine.
	DataEngineSpecific bool `json:"dataEngineSpecific"`
	// ExtraEngines are data engines this product applies a
	// data-engine-specific setting to beyond the keys of Longhorn's Default,
	// each with its default value: Default stays Longhorn's (the Setting
	// object, chart and UI show it), a value may also name these engines,
	// and an engine a value leaves out takes the default here.
	ExtraEngines map[longhorn.DataEngineType]string `json:"-"`
}

func intRange(lo, hi int64) *IntRange { return &IntRange{Minimum: &lo, Maximum: &hi} }
func intMin(lo int64) *IntRange       { return &IntRange{Minimum: &lo} }

func floatRange(lo, hi float64) *FloatRange { return &FloatRange{Minimum: lo, Maximum: hi} }

var settingDefinitions = buildSettingIndex(settingDefinitionList)

// buildSettingIndex fills the derived fields (display name, required) and
// indexes the table by name. Called once at package initialisation.
func buildSettingIndex(list []SettingDefinition) map[SettingName]SettingDefinition {
	idx := make(map[SettingName]SettingDefinition, len(list))
	for i := range list {
		d := &list[i]
		d.DisplayName = displayName(d.Name)
		d.Required = d.Type == SettingTypeInt || d.Type == SettingTypeFloat ||
			d.Type == SettingTypeBool || len(d.Options) > 0
		idx[d.Name] = *d
	}
	return idx
}

// displayName turns "default-replica-count" into "Default Replica Count".
func displayName(n SettingName) string {
	parts := strings.Split(string(n), "-")
	for i, p := range parts {
		if up, ok := displayInitialisms[p]; ok {
			parts[i] = up
			continue
		}
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return strings.Join(parts, " ")
}

var displayInitialisms = map[string]string{
	"url": "URL", "api": "API", "cpu": "CPU", "csi": "CSI", "crd": "CRD", "rwx": "RWX",
	"grpc": "gRPC", "ttl": "TTL", "http": "HTTP", "nvme": "NVMe", "tcp": "TCP", "io": "IO",
	"v1": "V1", "v2": "V2",
}

// GetSettingDefinition returns the definition of name and whether it exists.
func GetSettingDefinition(name SettingName) (SettingDefinition, bool) {
	d, ok := settingDefinitions[name]
	return d, ok
}

// SettingNameList returns every setting name in Longhorn's order.
func SettingNameList() []SettingName {
	out := make([]SettingName, len(settingDefinitionList))
	for i, d := range settingDefinitionList {
		out[i] = d.Name
	}
	return out
}

// SettingDefinitions returns a copy of the whole table in Longhorn's order.
func SettingDefinitions() []SettingDefinition {
	out := make([]SettingDefinition, len(settingDefinitionList))
	copy(out, settingDefinitionList)
	return out
}

// DataEngines returns the data engines a data-engine-specific setting covers
// (the keys of its JSON default and ExtraEngines), sorted; nil for other
// settings.
func (d SettingDefinition) DataEngines() []longhorn.DataEngineType {
	m, err := d.engineDefaults()
	if err != nil {
		return nil
	}
	return sortedEngines(m)
}

// engineDefaults returns the default value per data engine of a
// data-engine-specific setting: its JSON default and ExtraEngines; nil for
// other settings.
func (d SettingDefinition) engineDefaults() (map[longhorn.DataEngineType]string, error) {
	if !d.DataEngineSpecific {
		return nil, nil
	}
	m, err := parseEngineJSON(d.Default)
	if err != nil {
		return nil, err
	}
	for e, v := range d.ExtraEngines {
		if _, ok := m[e]; !ok {
			m[e] = v
		}
	}
	return m, nil
}

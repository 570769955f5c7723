package types

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Orphan resource kinds in the orphan-resource-auto-deletion setting.
const (
	OrphanResourceTypeReplicaData = "replica-data"
	OrphanResourceTypeInstance    = "instance"
)

// SettingValueForDataEngine returns the plain value of a setting for one data
// engine. For a data-engine-specific setting, value may be a JSON object (the
// engine's entry is used, or the definition default's entry when the object
// lacks it) or a plain value (used for every engine). Other settings return
// value unchanged. An empty value means "use the default". Errors: the
// setting is unknown, or the JSON is malformed.
func SettingValueForDataEngine(name SettingName, value string, engine longhorn.DataEngineType) (string, error) {
	def, ok := GetSettingDefinition(name)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownSetting, name)
	}
	if value == "" {
		value = def.Default
	}
	if !def.DataEngineSpecific {
		return value, nil
	}
	if !isJSONObject(value) {
		return value, nil
	}
	m, err := parseEngineJSON(value)
	if err != nil {
		return "", &SettingValueError{Name: name, Value: value, Reason: "malformed data engine JSON: " + err.Error()}
	}
	if v, ok := m[engine]; ok {
		return v, nil
	}
	defaults, err := def.engineDefaults()
	if err != nil {
		return "", fmt.Errorf("setting %s: malformed default %q: %w", name, def.Default, err)
	}
	v, ok := defaults[engine]
	if !ok {
		return "", &SettingValueError{Name: name, Value: value,
			Reason: fmt.Sprintf("setting does not apply to data engine %q", engine)}
	}
	return v, nil
}

// NormalizeSettingValue returns the value Longhorn stores for a valid value
// of setting name: a plain value of a data-engine-specific setting becomes
// the JSON object that gives it to every data engine the setting covers
// ("3" -> {"v1":"3","v2":"3"}), and a JSON object is re-encoded compactly
// with sorted keys; other values are returned unchanged. Call it after
// ValidateSetting. Errors: the setting is unknown, or the JSON is malformed.
func NormalizeSettingValue(name SettingName, value string) (string, error) {
	def, ok := GetSettingDefinition(name)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownSetting, name)
	}
	if !def.DataEngineSpecific {
		return value, nil
	}
	m := map[longhorn.DataEngineType]string{}
	if isJSONObject(value) {
		var err error
		if m, err = parseEngineJSON(value); err != nil {
			return "", &SettingValueError{Name: name, Value: value, Reason: "malformed data engine JSON: " + err.Error()}
		}
	} else {
		for _, engine := range def.DataEngines() {
			m[engine] = value
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// ParseSettingBool parses a bool setting value ("true" or "false").
func ParseSettingBool(name SettingName, v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &SettingValueError{Name: name, Value: v, Reason: "must be true or false"}
}

// ParseSettingInt parses an int setting value (base 10, 64-bit).
func ParseSettingInt(name SettingName, v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, &SettingValueError{Name: name, Value: v, Reason: "must be an integer"}
	}
	return n, nil
}

// ParseSettingFloat parses a float setting value.
func ParseSettingFloat(name SettingName, v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, &SettingValueError{Name: name, Value: v, Reason: "must be a number"}
	}
	return f, nil
}

// ParseTolerations parses the taint-toleration setting:
// "key1=value1:NoSchedule;key2:NoExecute;..." (value optional: Exists when
// absent; effect NoSchedule, PreferNoSchedule, NoExecute or empty for all).
// "" gives no tolerations.
func ParseTolerations(v string) ([]corev1.Toleration, error) {
	var out []corev1.Toleration
	for _, item := range strings.Split(v, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		kv, effect, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("toleration %q: want key[=value]:effect", item)
		}
		t := corev1.Toleration{Effect: corev1.TaintEffect(strings.TrimSpace(effect)), Operator: corev1.TolerationOpExists}
		key, value, hasValue := strings.Cut(kv, "=")
		t.Key = strings.TrimSpace(key)
		if hasValue {
			t.Operator, t.Value = corev1.TolerationOpEqual, strings.TrimSpace(value)
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("toleration %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", item, t.Effect)
		}
		if t.Key == "" && hasValue {
			return nil, fmt.Errorf("toleration %q: a value needs a key", item)
		}
		out = append(out, t)
	}
	return out, nil
}

// ParseNodeSelector parses "key1:value1;key2:value2" into a map; "" gives an
// empty map. Errors name the malformed item.
func ParseNodeSelector(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(v, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, ok := strings.Cut(item, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("node selector %q: want key:value", item)
		}
		out[key] = strings.TrimSpace(value)
	}
	return out, nil
}

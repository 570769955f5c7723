package types

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// ErrUnknownSetting is returned for a name that is not in the definition table.
var ErrUnknownSetting = errors.New("unknown setting")

// ErrInvalidSettingValue is wrapped by every *SettingValueError.
var ErrInvalidSettingValue = errors.New("invalid setting value")

// SettingValueError reports a value a setting does not accept. Its message
// has Longhorn's wording (datastore ValidateSetting, which Longhorn's tests
// match) and names the setting, the value and the limit, e.g.
// `failed to set the setting default-replica-count with invalid value 21: must be at most 20`.
type SettingValueError struct {
	Name   SettingName
	Value  string
	Reason string
}

func (e *SettingValueError) Error() string {
	return fmt.Sprintf("failed to set the setting %s with invalid value %s: %s", e.Name, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidSettingValue) true.
func (e *SettingValueError) Unwrap() error { return ErrInvalidSettingValue }

// ValidateSetting checks value against the definition of the setting name.
// A data-engine-specific setting takes either a plain value (applied to every
// engine it covers) or a JSON object with some of those engines as keys, each
// value checked alone. Errors: ErrUnknownSetting (wrapped, names the setting)
// or *SettingValueError. Read-only is not checked here: it limits who may
// write, not what is valid.
func ValidateSetting(name, value string) error {
	def, ok := GetSettingDefinition(SettingName(name))
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownSetting, name)
	}
	if def.DataEngineSpecific && isJSONObject(value) {
		return validateEngineValues(def, value)
	}
	return validateScalar(def, value, value)
}

// validateEngineValues checks a JSON per-engine value.
func validateEngineValues(def SettingDefinition, value string) error {
	m, err := parseEngineJSON(value)
	if err != nil {
		return &SettingValueError{Name: def.Name, Value: value, Reason: "must be a plain value or a JSON object of strings keyed by data engine: " + err.Error()}
	}
	allowed := def.DataEngines()
	if len(m) == 0 {
		return &SettingValueError{Name: def.Name, Value: value,
			Reason: fmt.Sprintf("the JSON object must give a value for at least one data engine of %v", allowed)}
	}
	for engine, v := range m {
		if !slices.Contains(allowed, engine) {
			return &SettingValueError{Name: def.Name, Value: value,
				Reason: fmt.Sprintf("data engine %q is not one of %v", engine, allowed)}
		}
		if err := validateScalar(def, v, value); err != nil {
			return err
		}
	}
	return nil
}

// validateScalar checks one plain value v; whole is the full value for messages.
func validateScalar(def SettingDefinition, v, whole string) error {
	fail := func(format string, args ...any) error {
		return &SettingValueError{Name: def.Name, Value: whole, Reason: fmt.Sprintf(format, args...)}
	}
	switch def.Type {
	case SettingTypeBool:
		if v != "true" && v != "false" {
			return fail("must be true or false")
		}
	case SettingTypeInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fail("must be an integer")
		}
		if r := def.Range; r != nil && r.Minimum != nil && n < *r.Minimum {
			return fail("must be at least %d", *r.Minimum)
		}
		if r := def.Range; r != nil && r.Maximum != nil && n > *r.Maximum {
			return fail("must be at most %d", *r.Maximum)
		}
	case SettingTypeFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fail("must be a number")
		}
		if r := def.FloatRange; r != nil && (f < r.Minimum || f > r.Maximum) {
			return fail("must be between %g and %g", r.Minimum, r.Maximum)
		}
	case SettingTypeDeprecated:
		return nil
	}
	if len(def.Options) > 0 && !slices.Contains(def.Options, v) {
		return fail("must be one of %s", strings.Join(def.Options, ", "))
	}
	if check := stringValidators[def.Name]; check != nil {
		if reason := check(v); reason != "" {
			return fail("%s", reason)
		}
	}
	return nil
}

// stringValidators check the format of string settings that have one; they
// return "" when v is valid, else the reason.
var stringValidators = map[SettingName]func(v string) string{
	SettingNameStorageNetwork:                           validateNetworkRef,
	SettingNameEndpointNetworkForRWXVolume:              validateNetworkRef,
	SettingNameOrphanResourceAutoDeletion:               validateOrphanKinds,
	SettingNameTaintToleration:                          validateTolerations,
	SettingNameSystemManagedComponentsNodeSelector:      validateNodeSelector,
	SettingNameSnapshotDataIntegrityCronjob:             validateCron,
	SettingNameUpgradeResponderURL:                      validateURL,
	SettingNameManagerURL:                               validateURL,
	SettingNameSystemManagedCSIComponentsResourceLimits: validateJSONOrEmpty,
}

// validateNetworkRef accepts "" or a Multus NetworkAttachmentDefinition "<namespace>/<name>".
func validateNetworkRef(v string) string {
	if v == "" {
		return ""
	}
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "must be empty or <namespace>/<network-attachment-definition>"
	}
	return ""
}

// validateOrphanKinds accepts a ;-separated list of replica-data and
// instance; instance is refused as not supported yet (no instance Orphans
// are made).
func validateOrphanKinds(v string) string {
	for _, kind := range strings.Split(v, ";") {
		kind = strings.TrimSpace(kind)
		if kind == OrphanResourceTypeInstance {
			return fmt.Sprintf("%q is not supported yet: only %s orphans are made", kind, OrphanResourceTypeReplicaData)
		}
		if kind != "" && kind != OrphanResourceTypeReplicaData {
			return fmt.Sprintf("%q is not one of %s, %s", kind, OrphanResourceTypeReplicaData, OrphanResourceTypeInstance)
		}
	}
	return ""
}

// validateTolerations accepts "key[=value]:effect;..." or "".
func validateTolerations(v string) string {
	if _, err := ParseTolerations(v); err != nil {
		return err.Error()
	}
	return ""
}

// validateNodeSelector accepts "key:value;..." or "".
func validateNodeSelector(v string) string {
	if _, err := ParseNodeSelector(v); err != nil {
		return err.Error()
	}
	return ""
}

// validateCron accepts a standard 5-field cron expression.
func validateCron(v string) string {
	if len(strings.Fields(v)) != 5 {
		return "must be a cron expression with 5 fields"
	}
	return ""
}

// validateURL accepts "" or an absolute http(s) URL.
func validateURL(v string) string {
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "must be empty or an http(s) URL"
	}
	return ""
}

// validateJSONOrEmpty accepts "" or any JSON document.
func validateJSONOrEmpty(v string) string {
	if v == "" || json.Valid([]byte(v)) {
		return ""
	}
	return "must be empty or JSON"
}

// isJSONObject reports whether v looks like a JSON object.
func isJSONObject(v string) bool {
	return strings.HasPrefix(strings.TrimSpace(v), "{")
}

// parseEngineJSON parses {"v1":"3","v2":"3"} into a map.
func parseEngineJSON(v string) (map[longhorn.DataEngineType]string, error) {
	var m map[longhorn.DataEngineType]string
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, err
	}
	return m, nil
}

func sortedEngines(m map[longhorn.DataEngineType]string) []longhorn.DataEngineType {
	out := make([]longhorn.DataEngineType, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/longhorn-go/longhorn/types"
)

const (
	chartDir     = "../../chart"
	manifestPath = "../../deploy/longhorn.yaml"
)

// valuesDefaultSettings returns the defaultSettings keys of chart/values.yaml.
func valuesDefaultSettings(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		DefaultSettings map[string]any `json:"defaultSettings"`
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	return v.DefaultSettings
}

func TestDefaultSettingsKeysMapToSettingDefinitions(t *testing.T) {
	keys := SettingKeys()
	byKey := map[string]types.SettingName{}
	byName := map[types.SettingName]string{}
	for _, k := range keys {
		if _, ok := types.GetSettingDefinition(k.Name); !ok {
			t.Errorf("key %s maps to %q, which is not a setting", k.Key, k.Name)
		}
		if prev, dup := byKey[k.Key]; dup {
			t.Errorf("key %s maps to both %s and %s", k.Key, prev, k.Name)
		}
		if prev, dup := byName[k.Name]; dup {
			t.Errorf("setting %s has two keys: %s and %s", k.Name, prev, k.Key)
		}
		byKey[k.Key], byName[k.Name] = k.Name, k.Key
	}
	// Longhorn's spellings (its chart renders rebuildConcurrentSyncLimit as
	// the unknown rebuild-concurrent-sync-limit; here it sets the setting it
	// means).
	if _, ok := byName["rebuild-concurrent-sync-limit"]; ok {
		t.Error("chart renders rebuild-concurrent-sync-limit, which is not a setting")
	}
	for name, key := range map[types.SettingName]string{
		types.SettingNameReplicaRebuildConcurrentSyncLimit: "rebuildConcurrentSyncLimit",
		types.SettingNameDataEngineCPUIsolationEnabled:     "dataEngineCPUIsolationEnabled",
		types.SettingNameDataEngineNumberOfCPUCores:        "dataEngineNumberOfCPUCores",
	} {
		if byName[name] != key {
			t.Errorf("%s has key %q, want Longhorn's %s", name, byName[name], key)
		}
	}
	// values.yaml holds exactly the generated keys.
	inValues := valuesDefaultSettings(t)
	for k := range inValues {
		if _, ok := byKey[k]; !ok {
			t.Errorf("values.yaml defaultSettings.%s is not a wired setting key", k)
		}
	}
	for k := range byKey {
		if _, ok := inValues[k]; !ok {
			t.Errorf("defaultSettings.%s missing from values.yaml (run make manifests)", k)
		}
	}
	// Every user-settable setting is wired, and nothing read-only is.
	for _, d := range types.SettingDefinitions() {
		_, wired := byName[d.Name]
		settable := !d.ReadOnly && d.Type != types.SettingTypeDeprecated && d.Category != types.SettingCategorySystemInfo
		if settable && !wired && d.Name != types.SettingNameRegistrySecret {
			t.Errorf("setting %s is user-settable but has no defaultSettings key", d.Name)
		}
		if d.ReadOnly && wired {
			t.Errorf("read-only setting %s has a defaultSettings key", d.Name)
		}
	}
	if len(keys) < 100 {
		t.Errorf("only %d settings wired; Longhorn's chart wires 102", len(keys))
	}
}

// renderedSettings renders the chart with values and parses the
// default-setting.yaml of ConfigMap longhorn-default-setting.
func renderedSettings(t *testing.T, values map[string]any) map[string]string {
	t.Helper()
	docs, err := Render(chartDir, values)
	if err != nil {
		t.Fatal(err)
	}
	return configMapYAML(t, docs, "longhorn-default-setting", "default-setting.yaml")
}

func configMapYAML(t *testing.T, docs []Doc, name, key string) map[string]string {
	t.Helper()
	for _, d := range docs {
		if d.Kind() != "ConfigMap" || d.Name() != name {
			continue
		}
		data, _ := d.Object["data"].(map[string]any)
		text, ok := data[key].(string)
		if !ok {
			t.Fatalf("ConfigMap %s has no %s", name, key)
		}
		out := map[string]string{}
		if err := yaml.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("ConfigMap %s %s is not a map of strings: %v\n%s", name, key, err, text)
		}
		return out
	}
	t.Fatalf("no ConfigMap %s rendered", name)
	return nil
}

// exampleValue returns a valid chart value for setting d and the string the
// manager should receive. Per-engine JSON defaults are given as YAML maps
// with numbers/booleans where the type allows, to exercise conversion.
func exampleValue(t *testing.T, d types.SettingDefinition) (any, string) {
	t.Helper()
	if d.DataEngineSpecific && strings.HasPrefix(d.Default, "{") {
		var m map[string]string
		if err := json.Unmarshal([]byte(d.Default), &m); err != nil {
			t.Fatalf("%s default: %v", d.Name, err)
		}
		vals := map[string]any{}
		for k, v := range m {
			vals[k] = typed(d.Type, v)
		}
		want, _ := json.Marshal(m)
		return vals, string(want)
	}
	return typed(d.Type, d.Default), d.Default
}

// typed turns a setting string into the YAML value a user would write.
func typed(typ types.SettingType, s string) any {
	var v any
	switch typ {
	case types.SettingTypeInt, types.SettingTypeFloat, types.SettingTypeBool:
		if err := yaml.Unmarshal([]byte(s), &v); err == nil && v != nil {
			return v
		}
	}
	return s
}

func TestEveryDefaultSettingRendersAValidValue(t *testing.T) {
	ds := map[string]any{}
	want := map[string]string{}
	for _, k := range SettingKeys() {
		d, _ := types.GetSettingDefinition(k.Name)
		v, s := exampleValue(t, d)
		ds[k.Key], want[string(k.Name)] = v, s
	}
	got := renderedSettings(t, map[string]any{"defaultSettings": ds})
	if len(got) != len(want) {
		t.Errorf("rendered %d settings, set %d", len(got), len(want))
	}
	for name, v := range got {
		if _, ok := types.GetSettingDefinition(types.SettingName(name)); !ok {
			t.Errorf("rendered unknown setting %q", name)
			continue
		}
		if err := types.ValidateSetting(name, v); err != nil {
			t.Errorf("rendered %s: %v", name, err)
		}
		if v != want[name] {
			t.Errorf("rendered %s = %q, want %q", name, v, want[name])
		}
	}
}

func TestDefaultSettingValueForms(t *testing.T) {
	got := renderedSettings(t, map[string]any{"defaultSettings": map[string]any{
		"defaultReplicaCount":               map[string]any{"v1": 2, "v2": "3"},
		"storageOverProvisioningPercentage": 1000000, // no 1e+06
		"guaranteedInstanceManagerCPU":      12.5,
		"replicaSoftAntiAffinity":           true,
		"defaultDataPath":                   "/data/longhorn",
		"taintToleration":                   "key1=value1:NoSchedule; key2:NoExecute",
		"upgradeChecker":                    nil, // left out
	}})
	want := map[string]string{
		"priority-class":                       "longhorn-critical", // the chart's default
		"default-replica-count":                `{"v1":"2","v2":"3"}`,
		"storage-over-provisioning-percentage": "1000000",
		"guaranteed-instance-manager-cpu":      "12.5",
		"replica-soft-anti-affinity":           "true",
		"default-data-path":                    "/data/longhorn",
		"taint-toleration":                     "key1=value1:NoSchedule; key2:NoExecute",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rendered settings\n got %v\nwant %v", got, want)
	}
	for n, v := range got {
		if err := types.ValidateSetting(n, v); err != nil {
			t.Error(err)
		}
	}
	if got := renderedSettings(t, nil); !reflect.DeepEqual(got, map[string]string{"priority-class": "longhorn-critical"}) {
		t.Errorf("default values render settings %v, want only priority-class longhorn-critical (Longhorn's default)", got)
	}
}

func TestInvalidSettingValueIsVisibleToValidation(t *testing.T) {
	// A value the schema cannot check (a number as a string) reaches the
	// ConfigMap unchanged, so the manager's rejection names it.
	got := renderedSettings(t, map[string]any{"defaultSettings": map[string]any{"defaultReplicaCount": "21"}})
	err := types.ValidateSetting("default-replica-count", got["default-replica-count"])
	if err == nil || !strings.Contains(err.Error(), "at most 20") {
		t.Errorf("ValidateSetting(default-replica-count=%q) = %v, want 'at most 20'", got["default-replica-count"], err)
	}
}

func TestDefaultBackupStoreRendersDefaultResource(t *testing.T) {
	docs, err := Render(chartDir, map[string]any{"defaultBackupStore": map[string]any{
		"backupTarget": "s3://backups@us-east-1/", "backupTargetCredentialSecret": "s3-secret", "pollInterval": 300,
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := configMapYAML(t, docs, "longhorn-default-resource", "default-resource.yaml")
	want := map[string]string{"backup-target": "s3://backups@us-east-1/", "backup-target-credential-secret": "s3-secret", "backupstore-poll-interval": "300"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("longhorn-default-resource = %v, want %v", got, want)
	}
	docs, err = Render(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := configMapYAML(t, docs, "longhorn-default-resource", "default-resource.yaml"); len(got) != 0 {
		t.Errorf("default longhorn-default-resource = %v, want empty", got)
	}
}

func TestPersistenceRendersStorageClass(t *testing.T) {
	docs, err := Render(chartDir, map[string]any{"persistence": map[string]any{
		"defaultClass": false, "defaultClassReplicaCount": 2, "defaultDataLocality": "best-effort",
		"reclaimPolicy": "Retain", "migratable": true, "defaultFsType": "xfs",
	}})
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Kind        string            `json:"kind"`
		Provisioner string            `json:"provisioner"`
		Reclaim     string            `json:"reclaimPolicy"`
		Binding     string            `json:"volumeBindingMode"`
		Expansion   bool              `json:"allowVolumeExpansion"`
		Params      map[string]string `json:"parameters"`
		Meta        struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	for _, d := range docs {
		if d.Kind() == "ConfigMap" && d.Name() == "longhorn-storageclass" {
			data := d.Object["data"].(map[string]any)
			if err := yaml.Unmarshal([]byte(data["storageclass.yaml"].(string)), &sc); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sc.Kind != "StorageClass" || sc.Meta.Name != "longhorn" || sc.Provisioner != "driver.longhorn.io" || !sc.Expansion {
		t.Fatalf("storage class: %+v", sc)
	}
	checks := map[string][2]string{
		"is-default-class":    {sc.Meta.Annotations["storageclass.kubernetes.io/is-default-class"], "false"},
		"numberOfReplicas":    {sc.Params["numberOfReplicas"], "2"},
		"dataLocality":        {sc.Params["dataLocality"], "best-effort"},
		"reclaimPolicy":       {sc.Reclaim, "Retain"},
		"volumeBindingMode":   {sc.Binding, "Immediate"},
		"migratable":          {sc.Params["migratable"], "true"},
		"fsType":              {sc.Params["fsType"], "xfs"},
		"staleReplicaTimeout": {sc.Params["staleReplicaTimeout"], "30"},
		"dataEngine":          {sc.Params["dataEngine"], "v1"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
}

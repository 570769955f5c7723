package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/longhorn-go/longhorn/types"
)

// loadValues reads a values file of testdata.
func loadValues(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func findDoc(t *testing.T, docs []Doc, kind, name string) Doc {
	t.Helper()
	for _, d := range docs {
		if d.Kind() == kind && d.Name() == name {
			return d
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return Doc{}
}

// Longhorn's whole default values.yaml renders (the schema accepts every
// key), runs this chart's one image, and its defaultSettings reach the
// ConfigMap (priorityClass longhorn-critical, Longhorn's default).
func TestLonghornDefaultValuesRender(t *testing.T) {
	docs, err := Render(chartDir, loadValues(t, "longhorn-1.12-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if img := ManagerImage(docs); !strings.HasPrefix(img, "longhornio/longhorn:") {
		t.Errorf("manager image %q, want this chart's longhornio/longhorn", img)
	}
	got := configMapYAML(t, docs, "longhorn-default-setting", "default-setting.yaml")
	if len(got) != 1 || got["priority-class"] != "longhorn-critical" {
		t.Errorf("settings %v, want priority-class longhorn-critical only", got)
	}
	pc := findDoc(t, docs, "PriorityClass", "longhorn-critical")
	if pc.Object["value"] != float64(1000000000) || pc.Object["preemptionPolicy"] != "PreemptLowerPriority" {
		t.Errorf("PriorityClass %v", pc.Object)
	}
	ds := findDoc(t, docs, "DaemonSet", "longhorn-manager").Text
	for _, want := range []string{`priorityClassName: "longhorn-critical"`, "name: LOG_FORMAT\n          value: \"plain\""} {
		if !strings.Contains(ds, want) {
			t.Errorf("manager DaemonSet lacks %q", want)
		}
	}
}

// renderErr renders values and returns the error text ("" on success).
func renderErr(values map[string]any) string {
	if _, err := Render(chartDir, values); err != nil {
		return err.Error()
	}
	return ""
}

// A mistyped key or a bad value fails with a message naming it.
func TestSchemaRefusesMistakes(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"typo in a setting key", map[string]any{"defaultSettings": map[string]any{"replicaSoftAntiAfinity": true}}, "'replicaSoftAntiAfinity' not allowed"},
		{"typo at the top", map[string]any{"defaultSetting": map[string]any{}}, "'defaultSetting' not allowed"},
		{"typo in persistence", map[string]any{"persistence": map[string]any{"defaultClassReplicas": 2}}, "'defaultClassReplicas' not allowed"},
		{"bool as word", map[string]any{"defaultSettings": map[string]any{"autoSalvage": "yes"}}, "/defaultSettings/autoSalvage"},
		{"option", map[string]any{"defaultSettings": map[string]any{"replicaAutoBalance": "sometimes"}}, "/defaultSettings/replicaAutoBalance"},
		{"range", map[string]any{"defaultSettings": map[string]any{"storageMinimalAvailablePercentage": 101}}, "maximum: got 101, want 100"},
		{"int options", map[string]any{"defaultSettings": map[string]any{"defaultBackupBlockSize": 4}}, "/defaultSettings/defaultBackupBlockSize"},
		{"engine not covered", map[string]any{"defaultSettings": map[string]any{"dataEngineCPUMask": map[string]any{"v1": "0x1"}}}, "'v1' not allowed"},
		{"log format", map[string]any{"longhornManager": map[string]any{"log": map[string]any{"format": "xml"}}}, "/longhornManager/log/format"},
		{"fs type", map[string]any{"persistence": map[string]any{"defaultFsType": "btrfs"}}, "/persistence/defaultFsType"},
	} {
		if got := renderErr(c.values); !strings.Contains(got, c.want) {
			t.Errorf("%s: error %q, want it to contain %q", c.name, got, c.want)
		}
	}
}

// metrics.serviceMonitor.enabled renders a ServiceMonitor of the managers'
// /metrics (Service longhorn-backend, port manager), with Longhorn's options.
func TestServiceMonitor(t *testing.T) {
	docs, err := Render(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d.Kind() == "ServiceMonitor" {
			t.Fatal("ServiceMonitor rendered by default")
		}
	}
	docs, err = Render(chartDir, map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{
		"enabled": true, "additionalLabels": map[string]any{"release": "prom"}, "interval": "30s", "scrapeTimeout": "10s",
		"metricRelabelings": []any{map[string]any{"action": "drop", "regex": "go_.*", "sourceLabels": []any{"__name__"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sm := findDoc(t, docs, "ServiceMonitor", "longhorn-prometheus-servicemonitor").Text
	for _, want := range []string{"release: prom", "app: longhorn-manager", "port: manager", "path: /metrics", "interval: 30s",
		"scrapeTimeout: 10s", "regex: go_.*"} {
		if !strings.Contains(sm, want) {
			t.Errorf("ServiceMonitor lacks %q:\n%s", want, sm)
		}
	}
	svc := findDoc(t, docs, "Service", "longhorn-backend").Text
	if !strings.Contains(svc, "app: longhorn-manager") || !strings.Contains(svc, "name: manager") {
		t.Errorf("longhorn-backend does not match the ServiceMonitor:\n%s", svc)
	}
}

// Features not supported yet fail with a message instead of being ignored.
func TestUnsupportedValuesFail(t *testing.T) {
	for path, values := range map[string]map[string]any{
		"ingress.enabled":                           {"ingress": map[string]any{"enabled": true}},
		"httproute.enabled":                         {"httproute": map[string]any{"enabled": true}},
		"enablePSP":                                 {"enablePSP": true},
		"global.cattle.windowsCluster.enabled":      {"global": map[string]any{"cattle": map[string]any{"windowsCluster": map[string]any{"enabled": true}}}},
		"csi.podAntiAffinityPreset":                 {"csi": map[string]any{"podAntiAffinityPreset": "hard"}},
		"defaultSettings.nodeDownPodDeletionPolicy": {"defaultSettings": map[string]any{"nodeDownPodDeletionPolicy": "delete-statefulset-pod"}},
	} {
		if got := renderErr(values); !strings.Contains(got, path) {
			t.Errorf("%s: error %q, want one naming it", path, got)
		}
	}
}

// A defaultSettings key of a setting not supported yet fails the install
// unless its value asks for nothing: the default, an inert value ("false"
// of a feature switch), per data engine too; the message says so.
func TestNotSupportedSettingsRefusedAtInstall(t *testing.T) {
	got := renderedSettings(t, map[string]any{"defaultSettings": map[string]any{
		"nodeDownPodDeletionPolicy": "do-nothing",
		"upgradeChecker":            false,
		"snapshotDataIntegrity":     map[string]any{"v1": "disabled", "v2": "fast-check"},
		"snapshotDataIntegrityImmediateCheckAfterSnapshotCreation": `{"v1":"false","v2":"false"}`,
		"csiAllowedTopologyKeys":                                   "",
	}})
	for name, want := range map[string]string{"node-down-pod-deletion-policy": "do-nothing", "upgrade-checker": "false",
		"snapshot-data-integrity": `{"v1":"disabled","v2":"fast-check"}`, "snapshot-data-integrity-immediate-check-after-snapshot-creation": `{"v1":"false","v2":"false"}`} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
		if err := types.ValidateSettingSupported(types.SettingName(name), got[name]); err != nil {
			t.Errorf("the chart passes %s=%q, the manager refuses it: %v", name, got[name], err)
		}
	}
	for key, v := range map[string]any{
		"nodeDownPodDeletionPolicy":                                "delete-statefulset-pod",
		"snapshotDataIntegrity":                                    map[string]any{"v1": "enabled"},
		"snapshotDataIntegrityImmediateCheckAfterSnapshotCreation": `{"v1":"true"}`,
		"csiAllowedTopologyKeys":                                   "topology.kubernetes.io/zone",
		"upgradeResponderURL":                                      "https://example.invalid/v1",
	} {
		err := renderErr(map[string]any{"defaultSettings": map[string]any{key: v}})
		if !strings.Contains(err, "defaultSettings."+key) || !strings.Contains(err, "not supported yet") {
			t.Errorf("%s=%v: error %q, want one naming the key and saying not supported yet", key, v, err)
		}
	}
}

// Longhorn's spellings and this chart's earlier ones reach the same setting;
// both set to different values is an error.
func TestSettingKeySpellings(t *testing.T) {
	got := renderedSettings(t, map[string]any{"defaultSettings": map[string]any{
		"rebuildConcurrentSyncLimit":    3,
		"dataEngineCPUIsolationEnabled": map[string]any{"v2": true},
		"dataEngineNumberOfCPUCores":    `{"v2":"0"}`, // v2 settings are not supported yet: only the default passes
	}})
	for name, want := range map[string]string{
		"replica-rebuild-concurrent-sync-limit": "3",
		"data-engine-cpu-isolation-enabled":     `{"v2":"true"}`,
		"data-engine-number-of-cpu-cores":       `{"v2":"0"}`,
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
	got = renderedSettings(t, map[string]any{"defaultSettings": map[string]any{
		"replicaRebuildConcurrentSyncLimit": 2, "dataEngineCpuIsolationEnabled": true, "dataEngineNumberOfCpuCores": 0,
		"dataEngineCPUIsolationEnabled": true, // the same value under both spellings is fine
	}})
	if got["replica-rebuild-concurrent-sync-limit"] != "2" || got["data-engine-cpu-isolation-enabled"] != "true" || got["data-engine-number-of-cpu-cores"] != "0" {
		t.Errorf("earlier spellings: %v", got)
	}
	err := renderErr(map[string]any{"defaultSettings": map[string]any{"rebuildConcurrentSyncLimit": 3, "replicaRebuildConcurrentSyncLimit": 2}})
	if !strings.Contains(err, "defaultSettings.rebuildConcurrentSyncLimit and defaultSettings.replicaRebuildConcurrentSyncLimit") {
		t.Errorf("conflicting spellings: %q", err)
	}
}

func TestManagerValues(t *testing.T) {
	docs, err := Render(chartDir, map[string]any{
		"global": map[string]any{"imageRegistry": "reg.example:5000", "timezone": "Europe/Berlin",
			"tolerations": []any{map[string]any{"key": "g", "operator": "Exists"}}},
		"longhornManager": map[string]any{"log": map[string]any{"format": "json"}, "priorityClass": "custom",
			"serviceAnnotations": map[string]any{"a": "b"}},
		"privateRegistry": map[string]any{"createSecret": true, "registrySecret": "regcred", "registryUrl": "reg.example:5000",
			"registryUser": "u", "registryPasswd": "p"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ds := findDoc(t, docs, "DaemonSet", "longhorn-manager").Text
	for _, want := range []string{`image: "reg.example:5000/longhornio/longhorn:`, `priorityClassName: "custom"`,
		"value: \"json\"", "name: TZ", "- name: regcred", "key: g"} {
		if !strings.Contains(ds, want) {
			t.Errorf("manager DaemonSet lacks %q:\n%s", want, ds)
		}
	}
	if sec := findDoc(t, docs, "Secret", "regcred"); sec.Object["type"] != "kubernetes.io/dockerconfigjson" {
		t.Errorf("registry secret %v", sec.Object)
	}
	if svc := findDoc(t, docs, "Service", "longhorn-backend").Text; !strings.Contains(svc, "a: b") {
		t.Errorf("longhorn-backend lacks the annotation:\n%s", svc)
	}
	got := configMapYAML(t, docs, "longhorn-default-setting", "default-setting.yaml")
	if got["registry-secret"] != "regcred" {
		t.Errorf("registry-secret = %q", got["registry-secret"])
	}
}

// helm install's notes name the Longhorn values that are accepted and not
// used, and none with this chart's own values.
func TestNotesListIgnoredValues(t *testing.T) {
	notes, err := Notes(chartDir, loadValues(t, "longhorn-1.12-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"image.longhorn.manager", "image.csi", "longhornDriver"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not name %s:\n%s", want, notes)
		}
	}
	if notes, err = Notes(chartDir, nil); err != nil || strings.Contains(notes, "Not used") {
		t.Errorf("default notes: %v\n%s", err, notes)
	}
}

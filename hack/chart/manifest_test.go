package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGeneratedFilesAreUpToDate fails when make manifests was not run after
// a change to chart/, types/ (setting definitions) or k8s/crds.yaml.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	stale := func(what string) { t.Errorf("%s is stale: run make manifests and commit", what) }
	if !bytes.Equal(readFile(t, "../../k8s/crds.yaml"), readFile(t, filepath.Join(chartDir, "files", "crds.yaml"))) {
		stale("chart/files/crds.yaml")
	}
	if !bytes.Equal(SettingsTemplate(), readFile(t, filepath.Join(chartDir, "templates", "_settings.tpl"))) {
		stale("chart/templates/_settings.tpl")
	}
	if !bytes.Equal(Schema(), readFile(t, filepath.Join(chartDir, "values.schema.json"))) {
		stale("chart/values.schema.json")
	}
	values := string(readFile(t, filepath.Join(chartDir, "values.yaml")))
	if nv, err := ReplaceValuesBlock(values); err != nil || nv != values {
		stale("chart/values.yaml (defaultSettings block)")
	}
	readme := string(readFile(t, "../../README.md"))
	if nr, err := ReplaceSettingsDoc(readme); err != nil || nr != readme {
		stale("README.md (settings table)")
	}
	docs, err := Render(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Manifest(chartDir, nil, ManagerImage(docs))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, readFile(t, manifestPath)) {
		stale("deploy/longhorn.yaml")
	}
	uninstall, err := UninstallManifest(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(uninstall, readFile(t, filepath.Join(filepath.Dir(manifestPath), "uninstall.yaml"))) {
		stale("deploy/uninstall.yaml")
	}
	parsed, err := ParseManifest(uninstall)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range parsed {
		if d.Hook() != "" {
			t.Errorf("deploy/uninstall.yaml: %s keeps its hook annotation", d.ID())
		}
		kinds = append(kinds, d.Kind())
	}
	if !slices.Contains(kinds, "Job") || len(kinds) != 6 {
		t.Errorf("deploy/uninstall.yaml holds %v, want the Job, its ServiceAccount and four RBAC objects", kinds)
	}
}

func docsByID(docs []Doc) map[string]Doc {
	out := map[string]Doc{}
	for _, d := range docs {
		out[d.ID()] = d
	}
	return out
}

// userSettingConfigMaps are the objects a user's settings may change.
var userSettingConfigMaps = map[string]bool{
	"ConfigMap/longhorn-system/longhorn-default-setting":  true,
	"ConfigMap/longhorn-system/longhorn-storageclass":     true,
	"ConfigMap/longhorn-system/longhorn-default-resource": true,
}

// TestChartRendersTheManifestObjects renders the chart with settings a user
// would set and checks that it yields the same objects as
// deploy/longhorn.yaml except the three settings ConfigMaps.
func TestChartRendersTheManifestObjects(t *testing.T) {
	manifest, err := ParseManifest(readFile(t, manifestPath))
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := Render(chartDir, map[string]any{
		"defaultSettings":    map[string]any{"defaultReplicaCount": 2, "storageMinimalAvailablePercentage": 10},
		"persistence":        map[string]any{"defaultClassReplicaCount": 2},
		"defaultBackupStore": map[string]any{"backupTarget": "nfs://server:/backups"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want, got := docsByID(manifest), docsByID(rendered)
	if ns := want["Namespace//longhorn-system"]; ns.Kind() != "Namespace" {
		t.Error("manifest has no Namespace longhorn-system")
	}
	delete(want, "Namespace//longhorn-system")
	var ids []string
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	changed := 0
	for _, id := range ids {
		g, ok := got[id]
		switch {
		case !ok:
			t.Errorf("chart does not render %s", id)
		case userSettingConfigMaps[id]:
			if !reflect.DeepEqual(g.Object, want[id].Object) {
				changed++
			}
		case !reflect.DeepEqual(g.Object, want[id].Object):
			t.Errorf("chart renders %s differently from deploy/longhorn.yaml", id)
		}
		delete(got, id)
	}
	for id, d := range got {
		if d.Hook() == "" {
			t.Errorf("chart renders %s, which deploy/longhorn.yaml lacks", id)
		}
	}
	if changed != len(userSettingConfigMaps) {
		t.Errorf("user settings changed %d of the %d settings ConfigMaps", changed, len(userSettingConfigMaps))
	}
	if len(ids) < 30 {
		t.Errorf("manifest has only %d objects", len(ids))
	}
}

// TestImageOverride checks that -image/-tag (make manifests LONGHORN_IMAGE=...)
// change every image reference and nothing else but version labels.
func TestImageOverride(t *testing.T) {
	docs, err := Render(chartDir, map[string]any{"image": map[string]any{"longhorn": map[string]any{
		"repository": "registry.example/lh", "tag": "v9.9.9"}}})
	if err != nil {
		t.Fatal(err)
	}
	if img := ManagerImage(docs); img != "registry.example/lh:v9.9.9" {
		t.Fatalf("manager image %q", img)
	}
	for _, d := range docs {
		if strings.Contains(d.Text, "longhornio/longhorn") {
			t.Errorf("%s still names longhornio/longhorn after the override", d.ID())
		}
	}
	var ds Doc
	for _, d := range docs {
		if d.Kind() == "DaemonSet" {
			ds = d
		}
	}
	cmd := containers(ds.Object)[0]["command"].([]any)
	n := 0
	for _, a := range cmd {
		if a == "registry.example/lh:v9.9.9" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("manager command names the image %d times, want 2 (engine, instance manager): %v", n, cmd)
	}
}

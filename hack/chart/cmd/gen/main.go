// Command gen regenerates the derived parts of the Helm chart and renders
// deploy/longhorn.yaml from it (make manifests):
//
//	chart/files/crds.yaml             copy of k8s/crds.yaml
//	chart/templates/_settings.tpl     defaultSettings key -> setting name table
//	chart/values.yaml                 the generated defaultSettings block
//	chart/values.schema.json          the values' JSON Schema (defaultSettings typed from types/)
//	deploy/longhorn.yaml              the chart rendered with default values
//	README.md                         the settings table (implemented / not supported yet)
//
// -image and -tag override image.longhorn.repository and image.longhorn.tag
// in the rendered manifest (the chart's defaults are unchanged).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	chart "github.com/longhorn-go/longhorn/hack/chart"
)

func main() {
	repo := flag.String("repo", "../..", "repository root")
	image := flag.String("image", "", "image repository for deploy/longhorn.yaml (default: the chart's)")
	tag := flag.String("tag", "", "image tag for deploy/longhorn.yaml (default: the chart's appVersion)")
	flag.Parse()
	if err := run(*repo, *image, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(repo, image, tag string) error {
	chartDir := filepath.Join(repo, "chart")
	crds, err := os.ReadFile(filepath.Join(repo, "k8s", "crds.yaml"))
	if err != nil {
		return err
	}
	if bytes.Contains(crds, []byte("{{")) {
		// .Files.Get does not template, but keep the copy inert anyway.
		fmt.Fprintln(os.Stderr, "gen: note: k8s/crds.yaml contains {{, passed through verbatim")
	}
	if err := writeIfChanged(filepath.Join(chartDir, "files", "crds.yaml"), crds); err != nil {
		return err
	}
	if err := writeIfChanged(filepath.Join(chartDir, "templates", "_settings.tpl"), chart.SettingsTemplate()); err != nil {
		return err
	}
	if err := writeIfChanged(filepath.Join(chartDir, "values.schema.json"), chart.Schema()); err != nil {
		return err
	}
	valuesPath := filepath.Join(chartDir, "values.yaml")
	values, err := os.ReadFile(valuesPath)
	if err != nil {
		return err
	}
	newValues, err := chart.ReplaceValuesBlock(string(values))
	if err != nil {
		return err
	}
	if err := writeIfChanged(valuesPath, []byte(newValues)); err != nil {
		return err
	}
	readmePath := filepath.Join(repo, "README.md")
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		return err
	}
	newReadme, err := chart.ReplaceSettingsDoc(string(readme))
	if err != nil {
		return err
	}
	if err := writeIfChanged(readmePath, []byte(newReadme)); err != nil {
		return err
	}
	overrides := map[string]any{}
	img := map[string]any{}
	if image != "" {
		img["repository"] = image
	}
	if tag != "" {
		img["tag"] = tag
	}
	if len(img) > 0 {
		overrides["image"] = map[string]any{"longhorn": img}
	}
	docs, err := chart.Render(chartDir, overrides)
	if err != nil {
		return err
	}
	manifest, err := chart.Manifest(chartDir, overrides, chart.ManagerImage(docs))
	if err != nil {
		return err
	}
	if err := writeIfChanged(filepath.Join(repo, "deploy", "longhorn.yaml"), manifest); err != nil {
		return err
	}
	uninstall, err := chart.UninstallManifest(chartDir, overrides)
	if err != nil {
		return err
	}
	return writeIfChanged(filepath.Join(repo, "deploy", "uninstall.yaml"), uninstall)
}

// writeIfChanged writes data unless the file already holds it (keeps mtimes
// stable for make).
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

package types

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the module root, seen from this package's directory.
const repoRoot = ".."

// settingConstNames maps each setting's constant name (SettingNameFoo) to
// the setting, read from setting_names.go.
func settingConstNames(t *testing.T) map[string]SettingName {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "setting_names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]SettingName{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			v, _ := strconv.Unquote(lit.Value)
			out[vs.Names[0].Name] = SettingName(v)
		}
		return true
	})
	if len(out) != len(SettingNameList()) {
		t.Fatalf("setting_names.go has %d constants, the table %d settings", len(out), len(SettingNameList()))
	}
	return out
}

// funcMentions reports whether fn mentions the constant (as X.Const or
// Const) or the setting name as a string literal.
func funcMentions(fn *ast.FuncDecl, constName string, name SettingName) bool {
	found := false
	ast.Inspect(fn, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Ident:
			found = found || x.Name == constName
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				v, _ := strconv.Unquote(x.Value)
				found = found || v == string(name)
			}
		}
		return !found
	})
	return found
}

// parseFuncs returns the top-level functions and methods of a Go file by name.
func parseFuncs(t *testing.T, path string) map[string][]*ast.FuncDecl {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			out[fd.Name.Name] = append(out[fd.Name.Name], fd)
		}
	}
	return out
}

// TestEverySettingHasSupportEntry: the support list covers the table
// exactly, and every Inert value is a valid value of its setting.
func TestEverySettingHasSupportEntry(t *testing.T) {
	for _, name := range SettingNameList() {
		s, ok := GetSettingSupport(name)
		if !ok {
			t.Errorf("setting %s has no entry in settingSupport (setting_support.go): name its reader or mark it not supported", name)
			continue
		}
		if !s.NotSupported && s.Reader == "" {
			t.Errorf("setting %s is marked supported but names no reader", name)
		}
		if !s.NotSupported && len(s.Inert) > 0 {
			t.Errorf("setting %s is supported; Inert values are only for not-supported settings", name)
		}
		for _, v := range s.Inert {
			if err := ValidateSetting(string(name), v); err != nil {
				t.Errorf("setting %s: inert value %q is invalid: %v", name, v, err)
			}
		}
	}
	if len(settingSupport) != len(SettingNameList()) {
		t.Errorf("settingSupport has %d entries for %d settings", len(settingSupport), len(SettingNameList()))
	}
}

// TestSettingReadersActOnTheirSetting is the accepted-but-unread check: each
// Reader names a function that exists and mentions its setting.
func TestSettingReadersActOnTheirSetting(t *testing.T) {
	consts := settingConstNames(t)
	byName := map[SettingName]string{}
	for c, n := range consts {
		byName[n] = c
	}
	files := map[string]map[string][]*ast.FuncDecl{}
	for _, name := range SettingNameList() {
		s, _ := GetSettingSupport(name)
		if s.Reader == "" {
			continue
		}
		file, fn, ok := strings.Cut(s.Reader, ":")
		if !ok || fn == "" {
			t.Errorf("setting %s: reader %q is not dir/file.go:Func", name, s.Reader)
			continue
		}
		if files[file] == nil {
			files[file] = parseFuncs(t, filepath.Join(repoRoot, file))
		}
		decls := files[file][fn]
		if len(decls) == 0 {
			t.Errorf("setting %s: reader %s: no function %s in %s", name, s.Reader, fn, file)
			continue
		}
		mentioned := false
		for _, d := range decls {
			mentioned = mentioned || funcMentions(d, byName[name], name)
		}
		if !mentioned {
			t.Errorf("setting %s: reader %s does not mention %s", name, s.Reader, byName[name])
		}
	}
}

// TestNotSupportedSettingsAreUnread: code outside types/ and hack/ that
// reads a setting marked not supported must be named as its Reader (and the
// entry reviewed: implemented settings drop NotSupported).
func TestNotSupportedSettingsAreUnread(t *testing.T) {
	consts := settingConstNames(t)
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() {
			switch rel {
			case "types", "hack", ".git", "bin", "ui", "docs":
				return filepath.SkipDir
			}
			if d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(src), "SettingName") {
			return err
		}
		for fname, decls := range parseFuncs(t, path) {
			for _, fd := range decls {
				checkNotSupportedReads(t, consts, filepath.ToSlash(rel)+":"+fname, fd)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkNotSupportedReads(t *testing.T, consts map[string]SettingName, where string, fd *ast.FuncDecl) {
	t.Helper()
	ast.Inspect(fd, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		name, ok := consts[sel.Sel.Name]
		if !ok {
			return true
		}
		if s, _ := GetSettingSupport(name); s.NotSupported && s.Reader != where {
			t.Errorf("%s reads setting %s, which types/setting_support.go marks not supported yet: name %s as its reader and drop NotSupported once it acts on the setting",
				where, name, where)
		}
		return true
	})
}

func TestValidateSettingSupported(t *testing.T) {
	cases := []struct {
		name  SettingName
		value string
		ok    bool
	}{
		{SettingNameNodeDownPodDeletionPolicy, "do-nothing", true}, // default
		{SettingNameNodeDownPodDeletionPolicy, "delete-both-statefulset-and-deployment-pod", false},
		{SettingNameNodeDownPodDeletionPolicy, "", true},
		{SettingNameNodeDrainPolicy, "block-for-eviction", true}, // implemented
		{SettingNameUpgradeChecker, "false", true},
		{SettingNameUpgradeChecker, "true", true},
		{SettingNameFailedBackupTTL, "60", false},
		{SettingNameSnapshotDataIntegrityImmediateCheckAfterSnapshotCreation, "false", true},
		{SettingNameSnapshotDataIntegrityImmediateCheckAfterSnapshotCreation, `{"v1":"false","v2":"false"}`, true},
		{SettingNameSnapshotDataIntegrityImmediateCheckAfterSnapshotCreation, `{"v1":"false"}`, true},
		{SettingNameSnapshotDataIntegrityImmediateCheckAfterSnapshotCreation, `{"v1":"true"}`, false},
		{SettingNameSnapshotDataIntegrityImmediateCheckAfterSnapshotCreation, "true", false},
		{SettingNameEngineReplicaTimeout, "20", true},         // implemented
		{SettingNameGuaranteedInstanceManagerCPU, "20", true}, // implemented
		{SettingNameSnapshotDataIntegrity, "disabled", true},
		{SettingNameSnapshotDataIntegrity, "enabled", false},
		{SettingNameV2DataEngine, "false", true},
		{SettingNameV2DataEngine, "true", false},
		{SettingNameDefaultReplicaCount, "5", true}, // supported: anything valid
		{SettingNameStorageNetwork, "kube-system/net", true},
	}
	for _, c := range cases {
		err := ValidateSettingSupported(c.name, c.value)
		if (err == nil) != c.ok {
			t.Errorf("%s=%q: err %v, want ok=%v", c.name, c.value, err, c.ok)
			continue
		}
		if err == nil {
			continue
		}
		var ve *SettingValueError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "not supported yet") || !strings.Contains(err.Error(), string(c.name)) {
			t.Errorf("%s=%q: error %q should be a SettingValueError naming the setting and saying not supported yet", c.name, c.value, err)
		}
	}
	if got := AcceptedValues(SettingNameUpgradeChecker); strings.Join(got, ",") != "false,true" {
		t.Errorf("AcceptedValues(upgrade-checker) = %v", got)
	}
	if AcceptedValues(SettingNameDefaultReplicaCount) != nil {
		t.Error("a supported setting has no accepted-value list")
	}
}

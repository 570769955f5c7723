package types

import (
	"bufio"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

type refSetting struct {
	name, category, typ, def, notes string
}

// loadReference reads testdata/longhorn-settings.md: Longhorn's setting table
// as dumped from its definitions (the project reference, section 3).
func loadReference(t *testing.T) []refSetting {
	t.Helper()
	f, err := os.Open("testdata/longhorn-settings.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []refSetting
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			continue
		}
		p := strings.Split(strings.Trim(line, "|"), "|")
		for i := range p {
			p[i] = strings.TrimSpace(p[i])
		}
		def := strings.Trim(p[3], "`")
		if def == `""` {
			def = ""
		}
		out = append(out, refSetting{p[0], p[1], p[2], def, p[4]})
	}
	return out
}

// Every Longhorn setting is in the table with Longhorn's category, type,
// default, range, options and flags, and the table has nothing else.
func TestSettingTableMatchesLonghorn(t *testing.T) {
	ref := loadReference(t)
	if len(ref) != 118 || len(SettingNameList()) != 118 {
		t.Fatalf("reference has %d settings, table %d; want 118 each", len(ref), len(SettingNameList()))
	}
	for i, r := range ref {
		t.Run(r.name, func(t *testing.T) {
			d, ok := GetSettingDefinition(SettingName(r.name))
			if !ok {
				t.Fatalf("missing from the table")
			}
			if SettingNameList()[i] != d.Name {
				t.Errorf("position %d holds %s; the table must keep Longhorn's order", i, SettingNameList()[i])
			}
			checkRefSetting(t, r, d)
		})
	}
}

var (
	reMax = regexp.MustCompile(`max (\d+)`)
	reMin = regexp.MustCompile(`min (\d+)`)
)

func checkRefSetting(t *testing.T, r refSetting, d SettingDefinition) {
	t.Helper()
	wantCat := r.category
	if wantCat == "(none)" {
		wantCat = ""
	}
	wantType := r.typ
	if wantType == "(none)" {
		wantType = string(SettingTypeString)
	}
	if string(d.Category) != wantCat || string(d.Type) != wantType || d.Default != r.def {
		t.Errorf("got category %q type %q default %q; want %q %q %q", d.Category, d.Type, d.Default, wantCat, wantType, r.def)
	}
	if d.ReadOnly != strings.Contains(r.notes, "read-only") {
		t.Errorf("readOnly = %v, notes %q", d.ReadOnly, r.notes)
	}
	if d.DataEngineSpecific != strings.Contains(r.notes, "per-data-engine") {
		t.Errorf("dataEngineSpecific = %v, notes %q", d.DataEngineSpecific, r.notes)
	}
	checkBound(t, "minimum", reMin, r.notes, d, func(rg *IntRange) *int64 { return rg.Minimum }, func(f *FloatRange) float64 { return f.Minimum })
	checkBound(t, "maximum", reMax, r.notes, d, func(rg *IntRange) *int64 { return rg.Maximum }, func(f *FloatRange) float64 { return f.Maximum })
	if d.DisplayName == "" || d.Description == "" {
		t.Errorf("display name %q / description %q must not be empty", d.DisplayName, d.Description)
	}
	// Every default is valid by its own definition.
	if err := ValidateSetting(r.name, d.Default); err != nil && d.Type != SettingTypeDeprecated {
		t.Errorf("default rejected: %v", err)
	}
}

func checkBound(t *testing.T, what string, re *regexp.Regexp, notes string, d SettingDefinition,
	intB func(*IntRange) *int64, floatB func(*FloatRange) float64) {
	t.Helper()
	m := re.FindStringSubmatch(notes)
	if d.Type == SettingTypeFloat {
		if m != nil && (d.FloatRange == nil || strconv.FormatFloat(floatB(d.FloatRange), 'f', -1, 64) != m[1]) {
			t.Errorf("float %s: want %s, range %+v", what, m[1], d.FloatRange)
		}
		return
	}
	var got *int64
	if d.Range != nil {
		got = intB(d.Range)
	}
	switch {
	case m == nil && got != nil:
		t.Errorf("%s = %d, reference has none", what, *got)
	case m != nil && (got == nil || strconv.FormatInt(*got, 10) != m[1]):
		t.Errorf("%s: want %s, got %v", what, m[1], got)
	}
}

func TestValidateSettingBoundaries(t *testing.T) {
	cases := []struct {
		name, value string
		ok          bool
		msg         string // substring of the error
	}{
		{"default-replica-count", "1", true, ""},
		{"default-replica-count", "20", true, ""},
		{"default-replica-count", "0", false, "setting default-replica-count with invalid value 0: must be at least 1"},
		{"default-replica-count", "21", false, "must be at most 20"},
		{"default-replica-count", "three", false, "must be an integer"},
		{"default-replica-count", `{"v1":"2","v2":"3"}`, true, ""},
		{"default-replica-count", `{"v1":"21"}`, false, "must be at most 20"},
		{"default-replica-count", `{"v3":"2"}`, false, `data engine "v3"`},
		{"default-replica-count", `{"v1":2}`, false, "JSON object of strings"},
		{"storage-minimal-available-percentage", "100", true, ""},
		{"storage-minimal-available-percentage", "101", false, "at most 100"},
		{"storage-over-provisioning-percentage", "-1", false, "at least 0"},
		{"engine-replica-timeout", "7", false, "at least 8"},
		{"engine-replica-timeout", "30", true, ""},
		{"engine-replica-timeout", "31", false, "at most 30"},
		{"guaranteed-instance-manager-cpu", "40", true, ""},
		{"guaranteed-instance-manager-cpu", "40.5", false, "between 0 and 40"},
		{"guaranteed-instance-manager-cpu", "12.5", true, ""},
		{"replica-soft-anti-affinity", "true", true, ""},
		{"replica-soft-anti-affinity", "yes", false, "must be true or false"},
		{"replica-auto-balance", "best-effort", true, ""},
		{"replica-auto-balance", "always", false, "must be one of disabled, least-effort, best-effort"},
		{"default-backup-block-size", "16", true, ""},
		{"default-backup-block-size", "4", false, "must be one of 2, 16"},
		{"storage-network", "kube-system/demo-net", true, ""},
		{"storage-network", "demo-net", false, "<namespace>/"},
		{"orphan-resource-auto-deletion", "replica-data", true, ""},
		{"orphan-resource-auto-deletion", "replica-data;instance", false, `"instance" is not supported yet`},
		{"orphan-resource-auto-deletion", "replica-data;disk", false, `"disk" is not one of`},
		{"taint-toleration", "key1=value1:NoSchedule; key2:NoExecute", true, ""},
		{"taint-toleration", "key1=value1:Sometimes", false, "effect"},
		{"system-managed-components-node-selector", "label-key1:label-value1", true, ""},
		{"system-managed-components-node-selector", "novalue", false, "want key:value"},
		{"snapshot-data-integrity-cronjob", "0 0 */7 * *", true, ""},
		{"snapshot-data-integrity-cronjob", "daily", false, "5 fields"},
		{"upgrade-responder-url", "ftp://x", false, "http(s) URL"},
		{"default-instance-manager-image", "anything", true, ""},
	}
	for _, c := range cases {
		err := ValidateSetting(c.name, c.value)
		if c.ok != (err == nil) {
			t.Errorf("ValidateSetting(%s, %q) = %v, want ok=%v", c.name, c.value, err, c.ok)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrInvalidSettingValue) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ValidateSetting(%s, %q) error %q: want ErrInvalidSettingValue containing %q", c.name, c.value, err, c.msg)
		}
	}
	if err := ValidateSetting("no-such-setting", "1"); !errors.Is(err, ErrUnknownSetting) || !strings.Contains(err.Error(), "no-such-setting") {
		t.Errorf("unknown setting error = %v", err)
	}
}

func TestSettingValueForDataEngine(t *testing.T) {
	cases := []struct {
		name   SettingName
		value  string
		engine longhorn.DataEngineType
		want   string
		ok     bool
	}{
		{SettingNameDefaultReplicaCount, "", longhorn.DataEngineTypeV1, "3", true},
		{SettingNameDefaultReplicaCount, "2", longhorn.DataEngineTypeV2, "2", true},
		{SettingNameDefaultReplicaCount, `{"v1":"4"}`, longhorn.DataEngineTypeV1, "4", true},
		{SettingNameDefaultReplicaCount, `{"v1":"4"}`, longhorn.DataEngineTypeV2, "3", true},
		{SettingNameDisableRevisionCounter, `{"v1":"false"}`, longhorn.DataEngineTypeV2, "", false},
		{SettingNameDefaultReplicaCount, `{"v1":`, longhorn.DataEngineTypeV1, "", false},
		{SettingNameStorageNetwork, "ns/net", longhorn.DataEngineTypeV1, "ns/net", true},
		{"nope", "1", longhorn.DataEngineTypeV1, "", false},
	}
	for _, c := range cases {
		got, err := SettingValueForDataEngine(c.name, c.value, c.engine)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("SettingValueForDataEngine(%s, %q, %s) = %q, %v; want %q ok=%v", c.name, c.value, c.engine, got, err, c.want, c.ok)
		}
	}
}

func TestDisplayNameAndDataEngines(t *testing.T) {
	d, _ := GetSettingDefinition(SettingNameDefaultReplicaCount)
	if d.DisplayName != "Default Replica Count" || !d.Required {
		t.Errorf("display name %q required %v", d.DisplayName, d.Required)
	}
	if got := d.DataEngines(); len(got) != 2 || got[0] != longhorn.DataEngineTypeV1 || got[1] != longhorn.DataEngineTypeV2 {
		t.Errorf("DataEngines = %v", got)
	}
	if d, _ := GetSettingDefinition(SettingNameDataEngineMemorySize); len(d.DataEngines()) != 1 {
		t.Errorf("data-engine-memory-size covers %v, want only v2", d.DataEngines())
	}
}

// TestNormalizeSettingValue: Longhorn stores a per-data-engine setting as a
// JSON object keyed by data engine (test_settings.robot: default-replica-count
// "1" reads back {"v1":"1","v2":"1"}); invalid per-engine values are refused.
func TestNormalizeSettingValue(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"default-replica-count", "3", `{"v1":"3","v2":"3"}`},
		{"default-replica-count", `{"v2":"10", "v1":"5"}`, `{"v1":"5","v2":"10"}`},
		{"disable-revision-counter", `{"v1":"false"}`, `{"v1":"false"}`},
		{"disable-revision-counter", "true", `{"v1":"true"}`},
		{"auto-salvage", "true", "true"},
	} {
		if err := ValidateSetting(c.name, c.in); err != nil {
			t.Errorf("ValidateSetting(%s, %s) = %v", c.name, c.in, err)
			continue
		}
		if got, err := NormalizeSettingValue(SettingName(c.name), c.in); err != nil || got != c.want {
			t.Errorf("NormalizeSettingValue(%s, %s) = %q, %v; want %q", c.name, c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ name, in string }{
		{"disable-revision-counter", `{"v1":"true","v2":"true"}`},
		{"disable-revision-counter", `{"v2":"true"}`},
		{"disable-revision-counter", `{"v3":"true"}`},
		{"default-replica-count", `{}`},
	} {
		err := ValidateSetting(c.name, c.in)
		if err == nil || !strings.Contains(err.Error(), "failed to set the setting "+c.name+" with invalid value") {
			t.Errorf("ValidateSetting(%s, %s) = %v, want Longhorn's invalid value error", c.name, c.in, err)
		}
	}
}

package types

import (
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// replica-rebuilding-bandwidth-limit keeps Longhorn's v2-only default and
// also covers the v1 data engine here (ExtraEngines): a "v1" entry is
// valid, a plain value applies to both, a value without "v1" leaves v1 at 0.
func TestSettingExtraEngines(t *testing.T) {
	name := SettingNameReplicaRebuildingBandwidthLimit
	if d, _ := GetSettingDefinition(name); d.Default != `{"v2":"0"}` {
		t.Fatalf("default %q, want Longhorn's {\"v2\":\"0\"}", d.Default)
	}
	for _, v := range []string{`{"v1":"100"}`, `{"v1":"100","v2":"50"}`, "100", `{"v2":"0"}`} {
		if err := ValidateSetting(string(name), v); err != nil {
			t.Errorf("ValidateSetting(%s): %v", v, err)
		}
	}
	if err := ValidateSetting(string(name), `{"v3":"1"}`); err == nil {
		t.Error("a v3 entry was accepted")
	}
	if n, err := NormalizeSettingValue(name, "100"); err != nil || n != `{"v1":"100","v2":"100"}` {
		t.Errorf("NormalizeSettingValue(100) = %q, %v", n, err)
	}
	for v, want := range map[string]string{`{"v2":"5"}`: "0", `{"v1":"7"}`: "7", "": "0", "9": "9"} {
		if got, err := SettingValueForDataEngine(name, v, longhorn.DataEngineTypeV1); err != nil || got != want {
			t.Errorf("v1 value of %q = %q, %v; want %q", v, got, err, want)
		}
	}
}

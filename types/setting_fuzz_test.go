package types

import (
	"errors"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"testing"
)

// Setting values arrive from the REST API, the webhook and the Helm
// ConfigMap: validation and parsing must never panic, and every rejection
// must be a typed error.
func FuzzValidateSetting(f *testing.F) {
	for _, seed := range []struct{ name, value string }{
		{"default-replica-count", "3"},
		{"default-replica-count", `{"v1":"3","v2":"3"}`},
		{"default-replica-count", `{"v1":`},
		{"guaranteed-instance-manager-cpu", "12.5"},
		{"taint-toleration", "k=v:NoSchedule;k2:NoExecute"},
		{"system-managed-components-node-selector", "a:b;c:d"},
		{"storage-network", "ns/net"},
		{"orphan-resource-auto-deletion", "replica-data;instance"},
		{"snapshot-data-integrity-cronjob", "0 0 */7 * *"},
		{"upgrade-responder-url", "https://example.invalid/v1"},
		{"nope", ""},
	} {
		f.Add(seed.name, seed.value)
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		err := ValidateSetting(name, value)
		if err != nil && !errors.Is(err, ErrInvalidSettingValue) && !errors.Is(err, ErrUnknownSetting) {
			t.Fatalf("untyped error %v", err)
		}
		for _, engine := range []string{"v1", "v2"} {
			_, _ = SettingValueForDataEngine(SettingName(name), value, dataEngine(engine))
		}
		_, _ = ParseTolerations(value)
		_, _ = ParseNodeSelector(value)
	})
}

func dataEngine(s string) longhorn.DataEngineType { return longhorn.DataEngineType(s) }

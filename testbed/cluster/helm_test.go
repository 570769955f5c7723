package cluster

import (
	"strings"
	"testing"
)

func TestHelmArgs(t *testing.T) {
	got := strings.Join(helmArgs(HelmRelease{Chart: "/r/chart", ValuesFiles: []string{"a.yaml", "b.yaml"}, Set: []string{"x=1"}}, "/k"), " ")
	want := "upgrade --install longhorn /r/chart --namespace longhorn-system --create-namespace --kubeconfig /k --wait --timeout 5m0s -f a.yaml -f b.yaml --set x=1"
	if got != want {
		t.Errorf("helm %s\nwant %s", got, want)
	}
	d := settingDiff(map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1", "b": "3", "c": "4"})
	if strings.Join(d, "; ") != `b: got "2", want "3"; c: missing` {
		t.Errorf("diff %v", d)
	}
}

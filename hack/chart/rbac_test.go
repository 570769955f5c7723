package chart

import (
	"encoding/json"
	"sort"
	"testing"
)

// renderedRules returns the rules of the chart's ClusterRole and Role.
func renderedRules(t *testing.T) []Rule {
	t.Helper()
	docs, err := Render(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rules []Rule
	for _, d := range docs {
		// The manager's roles only (the CSI sidecars have their own,
		// longhorn-csi-role, granted by what the sidecars call).
		if (d.Kind() != "ClusterRole" && d.Kind() != "Role") || d.Name() != "longhorn-role" {
			continue
		}
		b, _ := json.Marshal(d.Object["rules"])
		var rs []Rule
		if err := json.Unmarshal(b, &rs); err != nil {
			t.Fatal(err)
		}
		rules = append(rules, rs...)
	}
	if len(rules) == 0 {
		t.Fatal("chart renders no RBAC rules")
	}
	return rules
}

func granted(rules []Rule, n Need) bool {
	for _, r := range rules {
		if r.Grants(n) {
			return true
		}
	}
	return false
}

func TestAnalysisFindsClientCalls(t *testing.T) {
	needs, unknown, err := ManagerNeeds(".", "./internal/rbacsample")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range needs {
		got[n.key()] = true
	}
	want := []string{"|pods|create", "|pods/log|get", "storage.k8s.io|storageclasses|delete",
		"longhorn.io|volumes/status|update", "|nodes|list", "|nodes|watch", "|events|create",
		"longhorn.io|replicas|create", "longhorn.io|replicas|delete", "longhorn.io|replicas/status|update"}
	for _, w := range want {
		if !got[w] {
			t.Errorf("analysis missed %s; found %v", w, needs)
		}
	}
	if got["|pods|delete"] {
		t.Error("analysis invented pods delete")
	}
	if len(unknown) != 0 {
		t.Errorf("unexpected unanalysable uses %v", unknown)
	}
}

// TestRBACMatchesManagerCode derives what the manager's code calls on the
// API server (controller/, webhook/, datastore/, api/, app/) and checks
// that the chart's Role and ClusterRole grant every call (the manifest never
// lags behind the code) and nothing else (least privilege).
func TestRBACMatchesManagerCode(t *testing.T) {
	needs, unknown, err := ManagerNeeds("../..", "./controller/...", "./webhook/...", "./datastore/...", "./api/...", "./app/...")
	if err != nil {
		t.Fatal(err)
	}
	rules := renderedRules(t)
	var missing []string
	for _, n := range needs {
		if !granted(rules, n) {
			missing = append(missing, n.String())
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("the manager needs %s; grant it in chart/templates/rbac.yaml and run make manifests", m)
	}
	for _, u := range unknown {
		t.Logf("not analysed (grant by hand): %s", u)
	}
	t.Logf("%d permissions derived from the code, all granted: %d", len(needs), len(needs)-len(missing))
	if len(needs) < 10 {
		t.Errorf("only %d needs found; the analysis is not seeing the datastore", len(needs))
	}
	for _, extra := range unneededGrants(rules, needs) {
		t.Errorf("chart/templates/rbac.yaml grants %s, which no manager code needs; remove it", extra)
	}
}

// unneededGrants lists each (group, resource, verb) a rule grants that no
// need uses; "*" resources count as used when any resource of the group
// uses the verb.
func unneededGrants(rules []Rule, needs []Need) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					used := false
					for _, n := range needs {
						if n.Group == g && n.Verb == v && (res == "*" || n.Resource == res) {
							used = true
						}
					}
					if !used {
						out = append(out, v+" "+g+"/"+res)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

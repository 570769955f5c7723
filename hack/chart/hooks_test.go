package chart

import (
	"slices"
	"testing"
)

// hookCommands renders the chart with values and returns the command of
// each hook Job by name, and the manager container's command.
func hookCommands(t *testing.T, values map[string]any) (map[string][]string, []string) {
	t.Helper()
	docs, err := Render(chartDir, values)
	if err != nil {
		t.Fatal(err)
	}
	hooks := map[string][]string{}
	var manager []string
	for _, d := range docs {
		for _, c := range containers(d.Object) {
			var cmd []string
			list, _ := c["command"].([]any)
			for _, a := range list {
				s, _ := a.(string)
				cmd = append(cmd, s)
			}
			switch {
			case d.Hook() != "":
				if d.Kind() != "Job" {
					t.Errorf("hook %s is a %s", d.ID(), d.Kind())
				}
				hooks[d.Hook()+" "+d.Name()] = cmd
			case d.Kind() == "DaemonSet" && d.Name() == "longhorn-manager":
				manager = cmd
			}
		}
	}
	return hooks, manager
}

// The upgrade hooks as Longhorn's chart: the pre-upgrade Job when both
// preUpgradeChecker values are true (Longhorn's defaults), the manager's
// start-up check with upgradeVersionCheck, the post-upgrade Job always.
func TestUpgradeHookJobs(t *testing.T) {
	pre := "pre-upgrade longhorn-pre-upgrade"
	post := "post-upgrade longhorn-post-upgrade"
	cases := []struct {
		name       string
		values     map[string]any
		preJob     bool
		startCheck bool
	}{
		{"defaults", nil, true, true},
		{"longhorn 1.12 values", loadValues(t, "longhorn-1.12-values.yaml"), true, true},
		{"job disabled", map[string]any{"preUpgradeChecker": map[string]any{"jobEnabled": false}}, false, true},
		{"version check disabled", map[string]any{"preUpgradeChecker": map[string]any{"upgradeVersionCheck": false}}, false, false},
	}
	for _, c := range cases {
		hooks, manager := hookCommands(t, c.values)
		if got, ok := hooks[pre]; ok != c.preJob || (ok && !slices.Equal(got, []string{"longhorn", "pre-upgrade"})) {
			t.Errorf("%s: pre-upgrade Job %v (rendered %v), want rendered=%v", c.name, got, ok, c.preJob)
		}
		if got := hooks[post]; !slices.Equal(got, []string{"longhorn", "post-upgrade", "--wait", "10m"}) {
			t.Errorf("%s: post-upgrade Job command %v", c.name, got)
		}
		if slices.Contains(manager, "--upgrade-version-check") != c.startCheck {
			t.Errorf("%s: manager command %v, want --upgrade-version-check=%v", c.name, manager, c.startCheck)
		}
		if len(hooks) != map[bool]int{true: 3, false: 2}[c.preJob] {
			t.Errorf("%s: hooks %v", c.name, hooks)
		}
	}
}

// helm uninstall runs `longhorn uninstall` first (Longhorn's pre-delete
// hook longhorn-uninstall).
func TestUninstallHookJob(t *testing.T) {
	hooks, _ := hookCommands(t, nil)
	if got := hooks["pre-delete longhorn-uninstall"]; !slices.Equal(got, []string{"longhorn", "uninstall"}) {
		t.Errorf("pre-delete hook longhorn-uninstall: %v (hooks %v)", got, hooks)
	}
}

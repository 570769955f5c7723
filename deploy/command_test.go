package deploy

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/longhorn-go/longhorn/app"
)

// TestManifestCommandMatchesTheBinary: the DaemonSet's command is a
// subcommand of the longhorn binary and every flag it passes is one that
// subcommand defines (an unknown flag stops the manager at start).
func TestManifestCommandMatchesTheBinary(t *testing.T) {
	ds := find[*appsv1.DaemonSet](manifestObjects(t), "longhorn-manager")
	cmdline := ds.Spec.Template.Spec.Containers[0].Command
	var sub *cli.Command
	for _, c := range app.New().Commands {
		if c.Name == cmdline[1] || contains(c.Aliases, cmdline[1]) {
			sub = c
		}
	}
	if sub == nil {
		t.Skipf("the longhorn binary has no %q subcommand yet (app/manager.go is not on main)", cmdline[1])
	}
	defined := map[string]bool{}
	for _, f := range sub.Flags {
		for _, n := range f.Names() {
			defined[n] = true
		}
	}
	for _, arg := range cmdline[2:] {
		name, ok := strings.CutPrefix(arg, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if !defined[name] {
			t.Errorf("manifest passes --%s, which `longhorn %s` does not define", name, sub.Name)
		}
	}
}

func contains(list []string, s string) bool { return indexOf(list, s) >= 0 }

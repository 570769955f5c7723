package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/longhorn-go/longhorn/app"
)

// TestCSIDeployment: the CSIDriver, the node plugin running `longhorn csi`
// with flags the binary defines, and the four sidecars with Longhorn's
// flags (--timeout=1m50s, leader election) on the plugin's socket.
func TestCSIDeployment(t *testing.T) {
	objs := manifestObjects(t)
	drv := find[*storagev1.CSIDriver](objs, "driver.longhorn.io")
	if drv == nil || drv.Spec.AttachRequired == nil || !*drv.Spec.AttachRequired {
		t.Fatalf("CSIDriver driver.longhorn.io: %+v", drv)
	}
	ds := find[*appsv1.DaemonSet](objs, "longhorn-csi-plugin")
	if ds == nil {
		t.Fatal("no DaemonSet longhorn-csi-plugin")
	}
	cmd := ds.Spec.Template.Spec.Containers[0].Command
	if len(cmd) < 2 || cmd[0] != "longhorn" || cmd[1] != "csi" {
		t.Fatalf("plugin command %q", cmd)
	}
	var sub *cli.Command
	for _, c := range app.New().Commands {
		if c.Name == "csi" {
			sub = c
		}
	}
	defined := map[string]bool{}
	for _, f := range sub.Flags {
		for _, n := range f.Names() {
			defined[n] = true
		}
	}
	for _, a := range cmd[2:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !defined[name] {
			t.Errorf("plugin passes --%s, which `longhorn csi` does not define", name)
		}
	}
	for _, name := range []string{"csi-attacher", "csi-provisioner", "csi-resizer", "csi-snapshotter"} {
		d := find[*appsv1.Deployment](objs, name)
		if d == nil {
			t.Errorf("no Deployment %s", name)
			continue
		}
		args := d.Spec.Template.Spec.Containers[0].Command
		if args[0] != name || !slices.Contains(args, "--timeout=1m50s") || !slices.Contains(args, "--leader-election") ||
			!slices.Contains(args, "--csi-address=$(ADDRESS)") {
			t.Errorf("%s command %q", name, args)
		}
	}
}

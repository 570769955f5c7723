package manager_test

import (
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testPreUpgrade runs `longhorn pre-upgrade` against the cluster: it reads the
// version the running managers pinned in Setting current-longhorn-version (the
// test binary's own version, a development build here, so the path is reported as
// not checked) and a fresh namespace counts as a fresh install. The refusals
// themselves are table-tested in upgrade/ and app/.
func testPreUpgrade(t *testing.T, c *cluster) {
	s, err := c.lh.LonghornV1beta2().Settings(ns).Get(c.ctx, "current-longhorn-version", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Setting current-longhorn-version: %v", err)
	}
	run := func(namespace string) (string, error) {
		out, err := exec.Command(c.binary, "pre-upgrade", "--kubeconfig", env.KubeconfigPath, "--namespace", namespace,
			"--target-version", "v9.9.9").CombinedOutput()
		return string(out), err
	}
	out, err := run(ns)
	if s.Value == "" {
		t.Fatalf("current-longhorn-version is empty: the managers did not pin their version")
	}
	if !strings.Contains(out, s.Value) {
		t.Fatalf("pre-upgrade does not name the installed version %q (err %v):\n%s", s.Value, err, out)
	}
	t.Logf("pre-upgrade with %s installed: %v %s", s.Value, err, strings.TrimSpace(out))
	if out, err := run("no-such-namespace"); err != nil || !strings.Contains(out, "fresh install") {
		t.Fatalf("pre-upgrade in an empty namespace: %v\n%s", err, out)
	}
}

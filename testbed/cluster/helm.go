package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// HelmRelease is one `helm upgrade --install` of the product's chart.
type HelmRelease struct {
	Helm        string        // the helm binary (make helm: CACHE_DIR/helm-<version>/helm)
	Chart       string        // chart directory, e.g. <repo>/chart
	Name        string        // release name; "" = "longhorn"
	Namespace   string        // "" = "longhorn-system"
	ValuesFiles []string      // -f files, in order
	Set         []string      // --set key=value, after the files
	Timeout     time.Duration // --wait timeout; 0 = 5 minutes
}

// helmArgs returns the helm command line of r for the kubeconfig (pure).
// `upgrade --install` so a second run upgrades the release; --wait waits
// for the manager DaemonSet's pods to be ready.
func helmArgs(r HelmRelease, kubeconfig string) []string {
	name, ns, timeout := r.Name, r.Namespace, r.Timeout
	if name == "" {
		name = "longhorn"
	}
	if ns == "" {
		ns = "longhorn-system"
	}
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	args := []string{"upgrade", "--install", name, r.Chart, "--namespace", ns, "--create-namespace",
		"--kubeconfig", kubeconfig, "--wait", "--timeout", timeout.String()}
	for _, f := range r.ValuesFiles {
		args = append(args, "-f", f)
	}
	for _, s := range r.Set {
		args = append(args, "--set", s)
	}
	return args
}

// HelmInstall installs or upgrades release r on the cluster with the real
// helm CLI and waits until the manager pods are ready. Helm's own cache,
// config and data live under the cluster's state directory. Errors carry
// helm's output (schema violations name the key).
func HelmInstall(ctx context.Context, c *Config, r HelmRelease, out Printf) error {
	if _, err := os.Stat(r.Helm); err != nil {
		return fmt.Errorf("helm binary: %w (make helm builds it)", err)
	}
	home := filepath.Join(c.StateDir, "helm")
	cmd := exec.CommandContext(ctx, r.Helm, helmArgs(r, c.KubeconfigPath())...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	t0 := time.Now()
	out("helm upgrade --install %s (values %s)", r.Chart, strings.Join(r.ValuesFiles, ", "))
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm upgrade --install %s: %w\n%s", r.Chart, err, b)
	}
	out("helm: release installed, manager ready (%.1fs)", time.Since(t0).Seconds())
	return nil
}

// settingsGVR is Longhorn's Setting resource.
var settingsGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "settings"}

// WaitSettings waits until every Setting named in want (in namespace ns)
// has the wanted value, and returns the settings that still differ at the
// timeout in the error ("name: got X, want Y").
func WaitSettings(ctx context.Context, c *Config, ns string, want map[string]string, timeout time.Duration) error {
	rc, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		got := map[string]string{}
		list, err := dc.Resource(settingsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, s := range list.Items {
				v, _ := s.Object["value"].(string)
				got[s.GetName()] = v
			}
		}
		diff := settingDiff(got, want)
		if err == nil && len(diff) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				diff = append(diff, err.Error())
			}
			return fmt.Errorf("%d settings did not reach their values in %v: %s", len(diff), timeout, strings.Join(diff, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// settingDiff lists, sorted, the wanted settings whose value differs.
func settingDiff(got, want map[string]string) []string {
	var out []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			out = append(out, name+": missing")
		case g != w:
			out = append(out, fmt.Sprintf("%s: got %q, want %q", name, g, w))
		}
	}
	sort.Strings(out)
	return out
}

// Package helm installs the product the way a Longhorn user does: the real
// helm CLI (make helm) installs chart/ on a local cluster of its own (name
// lhimg, nodes on 10.99.40.0/24, services 10.99.41.0/24) with Longhorn's
// whole default values.yaml, then upgrades it with a values file that sets
// every defaultSettings key Longhorn documents, and checks that every
// setting reaches its Setting object, that the pods the manager creates
// carry the system-managed settings and that the upgrade ran the chart's
// pre- and post-upgrade hook Jobs. It runs with LONGHORN_HELM_E2E=1
// (`make test-helm`, part of `make test`), as root.
package helm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/longhorn-go/longhorn/internal/testutil"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/multus"
	"github.com/longhorn-go/longhorn/testbed/testenv"
	"github.com/longhorn-go/longhorn/types"
)

const namespace = "longhorn-system"

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// prerequisites returns the cluster config, or why the test cannot run.
func prerequisites() (cluster.Config, string, error) {
	if os.Getenv("LONGHORN_HELM_E2E") != "1" {
		return cluster.Config{}, "", errors.New("LONGHORN_HELM_E2E is not 1: run `make test-helm` (root)")
	}
	if os.Geteuid() != 0 {
		return cluster.Config{}, "", errors.New("the local cluster needs root")
	}
	assets, err := testenv.Assets("kube-controller-manager", "kube-scheduler")
	if err != nil {
		return cluster.Config{}, "", err
	}
	var paths [3]string
	for i, env := range []string{"LONGHORN_HELM", "LONGHORN_BINARY", "LHCLUSTER_BINARY"} {
		if paths[i] = os.Getenv(env); paths[i] == "" {
			return cluster.Config{}, "", fmt.Errorf("%s is not set (make test-helm sets it)", env)
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return cluster.Config{}, "", err
	}
	// Real nodes (kubelet + containerd), as a user installs: every pod of
	// the chart, the CSI sidecars included, runs from the product image.
	// LONGHORN_HELM_CLUSTER / _SUBNET / _SVC_CIDR / _POD_CIDR give another
	// cluster name and subnets (one per person sharing a machine).
	name := envOr("LONGHORN_HELM_CLUSTER", "lhimg")
	prefix := func(env, def string) netip.Prefix { return netip.MustParsePrefix(envOr(env, def)) }
	c := cluster.Config{Name: name, Nodes: 2,
		Subnet: prefix("LONGHORN_HELM_SUBNET", "10.99.40.0/24"), ServiceCIDR: prefix("LONGHORN_HELM_SVC_CIDR", "10.99.41.0/24"),
		PodCIDR:   prefix("LONGHORN_HELM_POD_CIDR", "10.102.0.0/16"),
		StateDir:  filepath.Join(home, ".cache", "longhorn-testbed", "cluster-"+name),
		AssetsDir: assets, AgentBinary: paths[2], Images: map[string]string{"longhornio/longhorn:*": paths[1]},
		NodeMode:    cluster.NodeModeContainerd,
		PauseBinary: os.Getenv("LHPAUSE_BINARY"), ImageArchives: []string{os.Getenv("LONGHORN_IMAGE_ARCHIVE")}}
	if c.PauseBinary == "" || c.ImageArchives[0] == "" {
		return c, "", errors.New("real nodes need LHPAUSE_BINARY and LONGHORN_IMAGE_ARCHIVE (make test-helm sets them)")
	}
	return c, paths[0], c.Validate()
}

// envOr is the environment variable name, or def when it is empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// lock takes the machine-wide lock of the local-cluster tests (CPU).
func lock(t *testing.T) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "lhcluster-test.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
}

func TestHelmInstallsLonghornValues(t *testing.T) {
	c, helmBin, err := prerequisites()
	if err != nil {
		if testutil.ToolsRequired() && os.Getenv("LONGHORN_HELM_E2E") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	lock(t)
	logf := func(format string, args ...any) { t.Logf(format, args...) }
	if err := cluster.Down(c, logf); err != nil {
		t.Fatalf("removing a leftover cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Down(c, logf); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if _, err := cluster.Up(ctx, c, logf); err != nil {
		t.Fatalf("cluster up: %v", err)
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot()
	rel := cluster.HelmRelease{Helm: helmBin, Chart: filepath.Join(root, "chart"), Timeout: 5 * time.Minute,
		ValuesFiles: []string{filepath.Join(root, "hack", "chart", "testdata", "longhorn-1.12-values.yaml")}}

	// 1. Longhorn's default values: every setting at its default except
	// priority-class, which Longhorn's values set to longhorn-critical.
	if err := cluster.HelmInstall(ctx, &c, rel, logf); err != nil {
		dumpPods(ctx, t, cs)
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, k := range longhornSettingKeys {
		d, _ := types.GetSettingDefinition(types.SettingName(k.Setting))
		want[k.Setting] = d.Default
	}
	want["priority-class"] = "longhorn-critical"
	if err := cluster.WaitSettings(ctx, &c, namespace, want, 2*time.Minute); err != nil {
		t.Fatalf("Longhorn's default values: %v", err)
	}
	checkManagerPods(ctx, t, cs, "plain")
	waitIMPods(ctx, t, cs, c.Nodes, func(p corev1.Pod) string {
		if p.Spec.PriorityClassName != "longhorn-critical" {
			return "priorityClassName " + p.Spec.PriorityClassName
		}
		return ""
	})

	// 2. helm upgrade with every defaultSettings key set. storage-network
	// names a NetworkAttachmentDefinition, which the webhook wants to exist:
	// install the CRD (as Multus does) and the NAD first.
	applyStorageNAD(ctx, t, &c)
	file := writeEverySettingValues(t)
	rel.ValuesFiles = append(rel.ValuesFiles, file)
	if err := cluster.HelmInstall(ctx, &c, rel, logf); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"registry-secret": "regcred"}
	for _, k := range longhornSettingKeys {
		want[k.Setting] = k.Want
	}
	if err := cluster.WaitSettings(ctx, &c, namespace, want, 2*time.Minute); err != nil {
		t.Fatalf("every defaultSettings key: %v", err)
	}
	t.Logf("all %d settings reached their Setting objects", len(want))
	// The upgrade ran the chart's hooks: pre-upgrade (a development build:
	// the path is not checked) recorded the installed version, post-upgrade
	// migrated and cleared it.
	checkUpgradeHooks(ctx, t, cs, &c)
	checkManagerPods(ctx, t, cs, "json")
	waitIMPods(ctx, t, cs, c.Nodes, func(p corev1.Pod) string {
		var why []string
		if !hasToleration(p, "dedicated", "storage") {
			why = append(why, "no toleration dedicated=storage")
		}
		if p.Spec.NodeSelector["kubernetes.io/os"] != "linux" {
			why = append(why, fmt.Sprintf("node selector %v", p.Spec.NodeSelector))
		}
		if len(p.Spec.ImagePullSecrets) == 0 || p.Spec.ImagePullSecrets[0].Name != "regcred" {
			why = append(why, fmt.Sprintf("pull secrets %v", p.Spec.ImagePullSecrets))
		}
		if p.Spec.Containers[0].ImagePullPolicy != corev1.PullNever {
			why = append(why, "pull policy "+string(p.Spec.Containers[0].ImagePullPolicy))
		}
		return strings.Join(why, ", ")
	})
}

func hasToleration(p corev1.Pod, key, value string) bool {
	for _, tl := range p.Spec.Tolerations {
		if tl.Key == key && tl.Value == value {
			return true
		}
	}
	return false
}

// writeEverySettingValues writes the values file of step 2: every key of
// longhornSettingKeys, the manager's log format json and a registry secret.
func writeEverySettingValues(t *testing.T) string {
	ds := map[string]any{}
	for _, k := range longhornSettingKeys {
		ds[k.Key] = k.Value
	}
	b, err := yaml.Marshal(map[string]any{
		"defaultSettings": ds,
		"longhornManager": map[string]any{"log": map[string]any{"format": "json"}},
		"privateRegistry": map[string]any{"registrySecret": "regcred"},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "every-setting-values.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkManagerPods: the manager pods run (so the log format was accepted),
// with the format and the longhorn-critical priority class.
func checkManagerPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, format string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=longhorn-manager"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("manager pods: %v (%d)", err, len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if p.Spec.PriorityClassName != "longhorn-critical" || env["LOG_FORMAT"] != format {
			t.Errorf("manager pod %s: priority class %q, LOG_FORMAT %q; want longhorn-critical, %s", p.Name, p.Spec.PriorityClassName, env["LOG_FORMAT"], format)
		}
	}
}

// waitIMPods waits until there is one instance-manager pod per node and
// check passes ("" = ok) for each of them.
func waitIMPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, nodes int, check func(corev1.Pod) string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "longhorn.io/component=instance-manager"})
		var bad []string
		if err != nil {
			bad = append(bad, err.Error())
		} else {
			n := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				n++
				if why := check(p); why != "" {
					bad = append(bad, p.Name+": "+why)
				}
			}
			if n != nodes {
				bad = append(bad, fmt.Sprintf("%d instance-manager pods, want %d", n, nodes))
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			dumpPods(ctx, t, cs)
			t.Fatalf("instance-manager pods: %s", strings.Join(bad, "; "))
		}
		time.Sleep(time.Second)
	}
}

// applyStorageNAD installs the NetworkAttachmentDefinition CRD and the NAD
// kube-system/storage-net that the storage-network value of keys_test.go
// names (the cluster has no storage network: nothing attaches to it here).
func applyStorageNAD(ctx context.Context, t *testing.T, c *cluster.Config) {
	t.Helper()
	nad := `{"cniVersion":"0.3.1","type":"macvlan","master":"eth0","ipam":{"type":"static"}}`
	manifest := multus.Manifest + `---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: storage-net, namespace: kube-system}
spec:
  config: '` + nad + `'
`
	for attempt := 0; ; attempt++ {
		cmd := c.Kubectl(ctx, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(manifest)
		out, err := cmd.CombinedOutput()
		if err == nil {
			return
		}
		// The NAD kind is served a moment after its CRD is created.
		if attempt == 10 {
			t.Fatalf("NetworkAttachmentDefinition: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
}

func dumpPods(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("list pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		var cstat []string
		for _, c := range p.Status.ContainerStatuses {
			st := fmt.Sprintf("%s ready=%v restarts=%d", c.Name, c.Ready, c.RestartCount)
			if w := c.State.Waiting; w != nil {
				st += " waiting " + w.Reason + ": " + w.Message
			}
			if l := c.LastTerminationState.Terminated; l != nil {
				st += fmt.Sprintf(" last exit %d %s", l.ExitCode, l.Reason)
			}
			cstat = append(cstat, st)
		}
		t.Logf("pod %s on %s: %s %s [%s]", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Message, strings.Join(cstat, "; "))
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 && c.LastTerminationState.Terminated != nil {
				tail := int64(15)
				out, err := cs.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, Previous: true, TailLines: &tail}).DoRaw(ctx)
				t.Logf("  previous log of %s/%s (%v):\n%s", p.Name, c.Name, err, out)
			}
		}
	}
	if ds, err := cs.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range ds.Items {
			t.Logf("daemonset %s: desired %d ready %d updated %d", d.Name, d.Status.DesiredNumberScheduled, d.Status.NumberReady, d.Status.UpdatedNumberScheduled)
		}
	}
	if deps, err := cs.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range deps.Items {
			t.Logf("deployment %s: replicas %d ready %d available %d", d.Name, d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas)
		}
	}
	if svcs, err := cs.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range svcs.Items {
			t.Logf("service %s: %s", s.Name, s.Spec.Type)
		}
	}
}

// checkUpgradeHooks checks that helm upgrade ran the hook Jobs
// longhorn-pre-upgrade and longhorn-post-upgrade to completion (their Events
// outlive the Jobs, which Helm deletes on success) and that post-upgrade
// cleared pre-upgrade's record on Setting current-longhorn-version.
func checkUpgradeHooks(ctx context.Context, t *testing.T, cs kubernetes.Interface, c *cluster.Config) {
	t.Helper()
	for _, job := range []string{"longhorn-pre-upgrade", "longhorn-post-upgrade"} {
		ev, err := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Job,involvedObject.name=" + job})
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, e := range ev.Items {
			reasons = append(reasons, e.Reason)
		}
		if !slices.Contains(reasons, "Completed") {
			t.Errorf("hook Job %s did not complete: events %v", job, reasons)
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	lh, err := versioned.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := lh.LonghornV1beta2().Settings(namespace).Get(ctx, "current-longhorn-version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Annotations["longhorn.io/upgrade-from-version"]; ok {
		t.Errorf("post-upgrade left the record of pre-upgrade: %q", v)
	}
	t.Logf("helm upgrade ran longhorn-pre-upgrade and longhorn-post-upgrade (installed %s)", s.Value)
}

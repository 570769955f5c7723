// Package ui runs the web UI end to end: the Playwright suite in ui/e2e,
// driving Debian's chromium, against the real manager in a local 3-node
// cluster (testbed/cluster, name lhui, 10.99.64.0/24, services
// 10.99.65.0/24, pods 10.109.0.0/16) with deploy/longhorn.yaml installed
// unchanged.
//
// On real nodes (the default) the browser loads the UI the way a user does:
// `kubectl port-forward svc/longhorn-frontend` to the product's longhorn-ui
// Deployment, which proxies /v1 to Service longhorn-backend. With the node
// agent (LONGHORN_UI_E2E_NODE_MODE=agent), which routes no Service
// addresses, the test serves ui.NewFrontend itself, proxying to a manager
// pod. What a browser cannot do (write data through the
// volume's frontend, kill a replica process) the test does when the suite
// asks through a small control server on loopback (control_test.go).
//
// It runs with LONGHORN_UI_E2E=1 (`make test-ui-e2e`, part of `make test`);
// otherwise every test is skipped. With LONGHORN_REQUIRE_TOOLS=1 a missing
// prerequisite (root, chromium, node, control-plane binaries) fails the run.
package ui

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
	"github.com/longhorn-go/longhorn/testbed/testenv"
)

const (
	clusterName = "lhui"
	clusterSize = 3
	// lockFile is the machine-wide lock of local-cluster tests (test/e2e,
	// testbed/cluster): one at a time.
	lockFile   = "lhcluster-test.lock"
	upTimeout  = 6 * time.Minute
	downMargin = 90 * time.Second
)

var (
	clusterSubnet  = netip.MustParsePrefix("10.99.64.0/24")
	clusterService = netip.MustParsePrefix("10.99.65.0/24")
	clusterPods    = netip.MustParsePrefix("10.109.0.0/16")
)

var (
	suite      *cluster.Config
	skipReason = "TestMain did not run"
	downOnce   sync.Once
)

// clientTools are the programs the test runs on the host.
var clientTools = []string{"chromium", "node", "npm", "npx", "qemu-img", "nsenter", "ip"}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	assets, err := prerequisites()
	if err != nil {
		if testutil.ToolsRequired() && os.Getenv("LONGHORN_UI_E2E") == "1" {
			fmt.Fprintln(os.Stderr, "ui e2e:", err)
			return 1
		}
		skipReason = err.Error()
		return m.Run()
	}
	lock, err := takeLock()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ui e2e:", err)
		return 1
	}
	defer lock.Close()
	c, err := clusterConfig(assets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ui e2e:", err)
		return 1
	}
	keep := os.Getenv("LONGHORN_UI_E2E_KEEP") == "1"
	if keep {
		downOnce.Do(func() { logf("LONGHORN_UI_E2E_KEEP=1: cluster %s stays up", c.Name) })
	} else if err := cluster.Down(c, logf); err != nil {
		fmt.Fprintln(os.Stderr, "ui e2e: removing a leftover cluster:", err)
		return 1
	}
	stop := guardTeardown(c)
	defer stop()
	t0 := time.Now()
	if err := bringUp(&c); err != nil {
		fmt.Fprintln(os.Stderr, "ui e2e:", err)
		teardown(c)
		return 1
	}
	logf("cluster %s up with Longhorn ready in %.1fs", c.Name, time.Since(t0).Seconds())
	suite = &c
	code := m.Run()
	if code != 0 {
		if dir, err := cluster.SavePodLogs(&c, framework.Namespace); err != nil {
			fmt.Fprintln(os.Stderr, "ui e2e: pod logs:", err)
		} else {
			logf("pod logs and Longhorn objects saved in %s", dir)
		}
	}
	if !teardown(c) && code == 0 {
		code = 1
	}
	if failures != "" {
		fmt.Fprintf(os.Stderr, "ui e2e: failed in the browser (bin/ui-e2e/report.json):\n%s", failures)
	}
	return code
}

func prerequisites() (string, error) {
	if testing.Short() {
		return "", errors.New("-short: no local cluster")
	}
	if os.Getenv("LONGHORN_UI_E2E") != "1" {
		return "", errors.New("LONGHORN_UI_E2E is not 1: run `make test-ui-e2e` (it starts a local cluster as root)")
	}
	if os.Geteuid() != 0 {
		return "", errors.New("the local cluster needs root (netns, mounts, cgroups)")
	}
	assets, err := testenv.Assets("kube-controller-manager", "kube-scheduler")
	if err != nil {
		return "", err
	}
	for _, tool := range clientTools {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s not found in PATH (see .ci/packages): %w", tool, err)
		}
	}
	if _, err := os.Stat(filepath.Join(moduleRoot(), "ui", "node_modules", "@playwright", "test")); err != nil {
		return "", fmt.Errorf("ui/node_modules has no @playwright/test: run `make ui-deps` (npm ci): %w", err)
	}
	return assets, nil
}

func takeLock() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	logf("waiting for %s", f.Name())
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	return f, nil
}

// clusterConfig builds the lhui config: binaries from LONGHORN_BINARY and
// LHCLUSTER_BINARY (make sets both) or built now.
func clusterConfig(assets string) (cluster.Config, error) {
	root := moduleRoot()
	lh, err := binary("LONGHORN_BINARY", root, ".")
	if err != nil {
		return cluster.Config{}, err
	}
	agent, err := binary("LHCLUSTER_BINARY", root, "./hack/cluster")
	if err != nil {
		return cluster.Config{}, err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return cluster.Config{}, err
	}
	state := filepath.Join(home, ".cache", "longhorn-testbed", "cluster-"+clusterName)
	c := cluster.Config{
		Name: clusterName, Nodes: clusterSize, Subnet: clusterSubnet, ServiceCIDR: clusterService,
		PodCIDR:  clusterPods,
		NodeMode: cluster.NodeMode(os.Getenv("LONGHORN_UI_E2E_NODE_MODE")),
		StateDir: state, AssetsDir: assets, AgentBinary: agent,
		Images: map[string]string{"longhornio/longhorn:*": lh},
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	if c.Real() {
		// Real nodes run the product from its image (make test-ui-e2e
		// passes the archive and the pause binary).
		c.PauseBinary, c.ImageArchives = os.Getenv("LHPAUSE_BINARY"), []string{os.Getenv("LONGHORN_IMAGE_ARCHIVE")}
		if c.PauseBinary == "" || c.ImageArchives[0] == "" {
			return c, errors.New("real nodes need LHPAUSE_BINARY and LONGHORN_IMAGE_ARCHIVE (run `make test-ui-e2e`, or LONGHORN_UI_E2E_NODE_MODE=agent)")
		}
	}
	return c, nil
}

func binary(env, root, pkg string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return filepath.Abs(p)
	}
	dir, err := os.MkdirTemp("", "lhui-bin-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "longhorn")
	if pkg != "." {
		out = filepath.Join(dir, filepath.Base(pkg))
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func bringUp(c *cluster.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	if _, err := cluster.Up(ctx, *c, logf); err != nil {
		return fmt.Errorf("cluster up: %w", err)
	}
	manifest := filepath.Join(moduleRoot(), "deploy", "longhorn.yaml")
	if err := cluster.ApplyManifest(ctx, c, manifest, 4*time.Minute, logf); err != nil {
		return fmt.Errorf("apply %s: %w", manifest, err)
	}
	return longhornReady(ctx, c)
}

// guardTeardown removes the cluster on SIGINT/SIGTERM or downMargin before
// the test binary's -timeout (whose panic would skip TestMain's teardown).
func guardTeardown(c cluster.Config) (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var timer <-chan time.Time
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && d > 2*downMargin {
			timer = time.After(d - downMargin)
		}
	}
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			logf("got %v: removing cluster %s", s, c.Name)
		case <-timer:
			logf("test timeout in %v: removing cluster %s", downMargin, c.Name)
		case <-done:
			return
		}
		teardown(c)
		os.Exit(3)
	}()
	return func() { signal.Stop(sig); close(done) }
}

func teardown(c cluster.Config) bool {
	ok := true
	downOnce.Do(func() {
		t0 := time.Now()
		if err := cluster.Down(c, logf); err != nil {
			fmt.Fprintln(os.Stderr, "ui e2e: cluster down:", err)
			ok = false
			return
		}
		logf("cluster %s down in %.1fs (logs kept in %s)", c.Name, time.Since(t0).Seconds(), filepath.Join(c.StateDir, "logs"))
	})
	return ok
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ui e2e [%s] %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func requireCluster(t *testing.T) *cluster.Config {
	t.Helper()
	if suite == nil {
		t.Skip("no UI e2e cluster: " + skipReason)
	}
	return suite
}

// Package e2e runs Longhorn's main job end to end: a local 3-node cluster
// (testbed/cluster) with deploy/longhorn.yaml installed unchanged, volumes
// attached through the real frontend, data written and checksummed with real
// clients, and failures injected the way they happen in production (a
// replica process killed, a node's link cut, a manager or instance-manager
// pod deleted).
//
// TestMain brings the cluster up once for the package (name lhe2e, subnet
// 10.99.16.0/24, services 10.99.17.0/24, pods 10.101.0.0/16; real kubelet +
// containerd nodes unless LONGHORN_E2E_NODE_MODE=agent) and removes it at the end, also
// when a test fails, when the -timeout is about to fire and on SIGINT or
// SIGTERM (with LONGHORN_E2E_KEEP=1 it reuses a running lhe2e cluster and
// leaves it up, for working on a scenario). It runs only with LONGHORN_E2E=1 (`make e2e`); otherwise every
// test is skipped. With LONGHORN_E2E=1 and LONGHORN_REQUIRE_TOOLS=1 a missing
// prerequisite (root, control-plane binaries, client tools) fails the run.
package e2e

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/testenv"
)

// Cluster shape of the e2e suite. Nodes is 3: scenario c uses a 2-replica
// volume so that a replacement for the cut node's replica has a node to go to
// under hard node anti-affinity.
const (
	clusterName = "lhe2e"
	clusterSize = 3
	// lockFile is the machine-wide lock testbed/cluster's TestLocalCluster takes:
	// one local cluster test at a time (CPU), and two worktrees' e2e runs
	// never share the lhe2e name.
	lockFile = "lhcluster-test.lock"
	// upTimeout bounds Up + manifest + Longhorn ready.
	upTimeout = 6 * time.Minute
	// downMargin is how long before the -timeout the watchdog tears down.
	downMargin = 90 * time.Second
)

var (
	clusterSubnet  = netip.MustParsePrefix("10.99.16.0/24")
	clusterService = netip.MustParsePrefix("10.99.17.0/24")
	clusterPods    = netip.MustParsePrefix("10.101.0.0/16")
	// clusterStorage is the storage network (second bridge <name>br1,
	// routed nowhere off the machine) that TestStorageNetwork moves the
	// data traffic to; LONGHORN_E2E_STORAGE_SUBNET=none: no storage
	// network (the test skips).
	clusterStorage = netip.MustParsePrefix("10.99.18.0/24")
)

// suite is the running cluster; nil when the package skips (skipReason).
var (
	suite      *cluster.Config
	skipReason = "TestMain did not run"
	downOnce   sync.Once
)

// clientTools are the programs the scenarios run on the host.
var clientTools = []string{"qemu-io", "qemu-img", "nsenter", "ip", "flock"}

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run is TestMain's body; it returns the exit code.
func run(m *testing.M) int {
	flag.Parse()
	assets, err := prerequisites()
	if err != nil {
		if testutil.ToolsRequired() && os.Getenv("LONGHORN_E2E") == "1" {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		skipReason = err.Error()
		return m.Run()
	}
	// The machine-wide lock guards lhe2e (the CI's cluster); an engineer's
	// own test-bed share (LONGHORN_E2E_NAME) is theirs alone.
	if envOr("LONGHORN_E2E_NAME", clusterName) == clusterName {
		lock, err := takeLock()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer lock.Close()
	}
	c, err := clusterConfig(assets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	keep := os.Getenv("LONGHORN_E2E_KEEP") == "1"
	if keep {
		// Developer mode: reuse a running lhe2e cluster and leave it up.
		downOnce.Do(func() { logf("LONGHORN_E2E_KEEP=1: cluster %s stays up (make e2e-down removes it)", c.Name) })
	} else if err := cluster.Down(c, logf); err != nil {
		// A run killed hard (SIGKILL) leaves its cluster: remove it first.
		fmt.Fprintln(os.Stderr, "e2e: removing a leftover cluster:", err)
		return 1
	}
	stop := guardTeardown(c)
	defer stop()
	t0 := time.Now()
	if err := bringUp(&c); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		dumpLogs(&c)
		teardown(c)
		return 1
	}
	logf("cluster %s up with Longhorn ready in %.1fs; kubeconfig %s", c.Name, time.Since(t0).Seconds(), c.KubeconfigPath())
	suite = &c
	code := m.Run()
	if code != 0 {
		savePodLogs(&c)
		dumpLogs(&c)
	}
	if !teardown(c) && code == 0 {
		code = 1
	}
	return code
}

// prerequisites returns the control-plane assets directory, or why the
// suite cannot run.
func prerequisites() (string, error) {
	if testing.Short() {
		return "", errors.New("-short: no local cluster")
	}
	if os.Getenv("LONGHORN_E2E") != "1" {
		return "", errors.New("LONGHORN_E2E is not 1: run `make e2e` (it starts a local cluster as root)")
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
	return assets, nil
}

// takeLock blocks until this process holds the machine-wide cluster-test
// lock; closing the file releases it.
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

// clusterConfig builds the lhe2e config: binaries from LONGHORN_BINARY and
// LHCLUSTER_BINARY (make e2e sets both) or built now, state under
// LONGHORN_E2E_STATE_DIR or ~/.cache/longhorn-testbed/cluster-lhe2e.
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
	state := os.Getenv("LONGHORN_E2E_STATE_DIR")
	if state == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return cluster.Config{}, err
		}
		state = filepath.Join(home, ".cache", "longhorn-testbed", "cluster-"+envOr("LONGHORN_E2E_NAME", clusterName))
	}
	name, subnet, service, pods, err := clusterAddresses()
	if err != nil {
		return cluster.Config{}, err
	}
	storage, err := storageSubnet()
	if err != nil {
		return cluster.Config{}, err
	}
	c := cluster.Config{
		Name: name, Nodes: clusterSize, Subnet: subnet, ServiceCIDR: service,
		PodCIDR: pods, StorageSubnet: storage,
		NodeMode: cluster.NodeMode(os.Getenv("LONGHORN_E2E_NODE_MODE")),
		StateDir: state, AssetsDir: assets, AgentBinary: agent,
		Images: map[string]string{"longhornio/longhorn:*": lh},
	}
	if c.Real() {
		// Real nodes run the product from its image: make e2e passes the
		// archive (make image, or the small image of cluster.mk) and the
		// pause binary.
		c.PauseBinary, c.ImageArchives = os.Getenv("LHPAUSE_BINARY"), []string{os.Getenv("LONGHORN_IMAGE_ARCHIVE")}
		if c.PauseBinary == "" || c.ImageArchives[0] == "" {
			return c, errors.New("real nodes need LHPAUSE_BINARY and LONGHORN_IMAGE_ARCHIVE (run `make e2e`, or LONGHORN_E2E_NODE_MODE=agent)")
		}
		if c.StorageSubnet.IsValid() {
			// The meta-plugin runs in the node namespaces: a static build.
			if c.MultusBinary, err = binary("LHMULTUS_BINARY", root, "./testbed/multus/cmd/lhmultus", "CGO_ENABLED=0"); err != nil {
				return c, err
			}
		}
	}
	return c, c.Validate()
}

// storageSubnet returns the storage network's subnet: clusterStorage, or
// LONGHORN_E2E_STORAGE_SUBNET (an engineer's own share; "none" for no
// storage network). Agent-mode nodes have none (no pod network namespaces).
func storageSubnet() (netip.Prefix, error) {
	v := os.Getenv("LONGHORN_E2E_STORAGE_SUBNET")
	switch {
	case v == "none" || cluster.NodeMode(os.Getenv("LONGHORN_E2E_NODE_MODE")) == cluster.NodeModeAgent:
		return netip.Prefix{}, nil
	case v == "":
		return clusterStorage, nil
	}
	p, err := netip.ParsePrefix(v)
	if err != nil {
		return p, fmt.Errorf("LONGHORN_E2E_STORAGE_SUBNET=%q: %w", v, err)
	}
	return p, nil
}

// clusterAddresses returns the cluster's name and address ranges: lhe2e's,
// or an engineer's own test-bed share from LONGHORN_E2E_NAME,
// LONGHORN_E2E_SUBNET, LONGHORN_E2E_SERVICE_CIDR and LONGHORN_E2E_POD_CIDR
// (make e2e E2E_NAME=... E2E_SUBNET=...), so that work on a scenario never
// touches the CI's cluster.
func clusterAddresses() (name string, subnet, service, pods netip.Prefix, err error) {
	name, subnet, service, pods = envOr("LONGHORN_E2E_NAME", clusterName), clusterSubnet, clusterService, clusterPods
	for _, p := range []struct {
		env string
		dst *netip.Prefix
	}{{"LONGHORN_E2E_SUBNET", &subnet}, {"LONGHORN_E2E_SERVICE_CIDR", &service}, {"LONGHORN_E2E_POD_CIDR", &pods}} {
		if v := os.Getenv(p.env); v != "" {
			if *p.dst, err = netip.ParsePrefix(v); err != nil {
				return "", subnet, service, pods, fmt.Errorf("%s=%q: %w", p.env, v, err)
			}
		}
	}
	return name, subnet, service, pods, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// binary returns $env when set, else builds pkg (relative to root) into a
// temporary directory, with buildEnv added to go build's environment.
func binary(env, root, pkg string, buildEnv ...string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return filepath.Abs(p)
	}
	dir, err := os.MkdirTemp("", "lhe2e-bin-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, filepath.Base(filepath.Clean(filepath.Join(root, pkg))))
	if pkg == "." {
		out = filepath.Join(dir, "longhorn")
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir, cmd.Env = root, append(os.Environ(), buildEnv...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// bringUp starts the cluster, applies deploy/longhorn.yaml and waits until
// Longhorn is ready on every node.
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
	if err := longhornReady(ctx, c); err != nil {
		return err
	}
	return applyBaseSettings(ctx, c)
}

// guardTeardown tears the cluster down and exits when the test binary is
// interrupted (SIGINT, SIGTERM) or when its -timeout is downMargin away (go
// test's timeout panic would skip TestMain's teardown). The returned
// function disarms both.
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
			logf("test timeout in %v: dumping goroutines and removing cluster %s", downMargin, c.Name)
			buf := make([]byte, 1<<20)
			os.Stderr.Write(buf[:runtime.Stack(buf, true)])
			dumpLogs(&c)
		case <-done:
			return
		}
		teardown(c)
		os.Exit(3)
	}()
	return func() { signal.Stop(sig); close(done) }
}

// teardown removes the cluster once; it reports success.
func teardown(c cluster.Config) bool {
	ok := true
	downOnce.Do(func() {
		t0 := time.Now()
		if err := cluster.Down(c, logf); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: cluster down:", err)
			ok = false
			return
		}
		logf("cluster %s down in %.1fs (logs kept in %s)", c.Name, time.Since(t0).Seconds(), filepath.Join(c.StateDir, "logs"))
		// Teardown is complete and idempotent: nothing of the cluster is
		// left, and a second Down finds nothing to do.
		if left := cluster.Leftovers(c); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "e2e: left after cluster down: %s\n", strings.Join(left, "; "))
			ok = false
		}
		if err := cluster.Down(c, func(string, ...any) {}); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: second cluster down:", err)
			ok = false
		}
		if ok {
			logf("nothing of cluster %s left (processes, containers, netns, routes, mounts, cgroups, loop devices); a second down is harmless", c.Name)
		}
	})
	return ok
}

// logf prints a timestamped progress line (TestMain has no *testing.T).
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e [%s] %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// requireCluster skips t when the suite has no cluster.
func requireCluster(t *testing.T) *cluster.Config {
	t.Helper()
	if suite == nil {
		t.Skip("no e2e cluster: " + skipReason)
	}
	return suite
}

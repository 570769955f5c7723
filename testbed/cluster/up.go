package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/longhorn-go/longhorn/testbed/cluster/nodeagent"
)

// ErrRunning is returned when up finds a running cluster whose config
// differs from the requested one.
var ErrRunning = errors.New("a different cluster is running")

// Printf is how Up and Down report progress (one line per call).
type Printf func(format string, args ...any)

// Up brings the cluster to the requested config: state directory and PKI,
// network (refusing unsafe routes), control plane, node agents, admin
// kubeconfig; then waits until every node is Ready. It keeps whatever is
// already running, so re-running it on a running cluster is safe.
func Up(ctx context.Context, c Config, out Printf) (*State, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkTools(&c); err != nil {
		return nil, err
	}
	st, err := LoadState(c.StateDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st = &State{Config: c, Procs: map[string]Proc{}}
	case err != nil:
		return nil, err
	case st.anyAlive() && !sameShape(st.Config, c):
		return nil, fmt.Errorf("%w in %s (%d nodes on %s); run `make cluster-down` first", ErrRunning, c.StateDir, st.Config.Nodes, st.Config.Subnet)
	}
	st.Config = c
	if !st.anyAlive() {
		if err := freshClusterCgroup(&c); err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	if err := os.MkdirAll(filepath.Join(c.StateDir, "logs"), 0o755); err != nil {
		return nil, err
	}
	if err := EnsurePKI(&c); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := ensureNodeCerts(&c); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := WriteKubeconfig(&c, c.KubeconfigPath()); err != nil {
		return nil, err
	}
	if err := st.save(); err != nil {
		return nil, err
	}
	if err := SetupNetwork(&c); err != nil {
		return nil, err
	}
	out("network: bridge %s %s/%d, %d node namespaces; routes checked (%.1fs)", c.Bridge(), c.Gateway(), c.Subnet.Bits(), c.Nodes, time.Since(t0).Seconds())
	if err := startControlPlane(ctx, &c, st, out); err != nil {
		return st, err
	}
	if c.StorageNetworkEnabled() {
		if err := prepareMultus(&c); err != nil {
			return st, fmt.Errorf("storage network: %w", err)
		}
		if err := installMultus(ctx, &c, out); err != nil {
			return st, err
		}
	}
	if c.Real() {
		err = startRealNodes(ctx, &c, st, out)
	} else {
		err = startNodes(&c, st, out)
	}
	if err != nil {
		return st, err
	}
	if err := waitNodesReady(ctx, &c, 2*time.Minute); err != nil {
		return st, err
	}
	out("nodes: %d Ready (%.1fs since start)", c.Nodes, time.Since(t0).Seconds())
	return st, nil
}

func sameShape(a, b Config) bool {
	return a.Name == b.Name && a.Nodes == b.Nodes && a.Subnet == b.Subnet && a.ServiceCIDR == b.ServiceCIDR &&
		a.APIServerPort == b.APIServerPort && a.EtcdPort == b.EtcdPort && a.NodeMode == b.NodeMode && a.PodCIDR == b.PodCIDR &&
		a.StorageSubnet == b.StorageSubnet
}

func (s *State) anyAlive() bool {
	for _, p := range s.Procs {
		if p.Alive() {
			return true
		}
	}
	return false
}

// checkTools verifies the programs, binaries and kernel features the
// cluster needs; each error names what is missing and how to get it.
func checkTools(c *Config) error {
	for _, t := range []string{"ip", "unshare", "nsenter", "losetup", "mount"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not found (apt-get install iproute2 util-linux mount): %w", t, err)
		}
	}
	bins := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}
	if c.Real() {
		bins = append(bins, "kubelet", "kube-proxy")
	}
	for _, b := range bins {
		if !exists(filepath.Join(c.AssetsDir, b)) {
			return fmt.Errorf("%s missing in %s; run `make testbin`", b, c.AssetsDir)
		}
	}
	if c.Real() {
		return checkRealNodeTools(c)
	}
	if !filepath.IsAbs(c.AgentBinary) || !exists(c.AgentBinary) {
		return fmt.Errorf("agent binary %q: want an existing absolute path (bin/lhcluster)", c.AgentBinary)
	}
	for img, b := range c.Images {
		if !filepath.IsAbs(b) || !exists(b) {
			return fmt.Errorf("image %s: binary %q: want an existing absolute path", img, b)
		}
	}
	return nil
}

// agentName is the State.Procs key of node i's agent.
func agentName(c *Config, i int) string { return "agent/" + c.NodeName(i) }

// startNodes starts the agent of every node that is not running, inside the
// node's netns and a private mount namespace of its own.
func startNodes(c *Config, st *State, out Printf) error {
	for i := 1; i <= c.Nodes; i++ {
		name := agentName(c, i)
		if p, ok := st.Procs[name]; ok && p.Alive() {
			out("%-24s running (pid %d)", name, p.PID)
			continue
		}
		cfgPath, err := writeAgentConfig(c, i)
		if err != nil {
			return err
		}
		cg, err := subCgroup(c, c.NodeName(i), "agent")
		if err != nil {
			return err
		}
		// nsenter + unshare rather than `ip netns exec`, which remounts /sys
		// and so hides the cgroup2 mount the agent needs.
		argv := []string{"nsenter", "--net=/run/netns/" + c.Netns(i), "--",
			"unshare", "--mount", "--propagation", "slave", "--",
			c.AgentBinary, "node-agent", "--config", cfgPath}
		if p, err := exec.LookPath("nsenter"); err == nil {
			argv[0] = p
		}
		p, err := startDaemon(argv, c.logPath(c.NodeName(i)), cg, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})
		if err != nil {
			return err
		}
		st.Procs[name] = p
		if err := st.save(); err != nil {
			return err
		}
		out("%-24s started (pid %d, %s in netns %s)", name, p.PID, c.NodeIP(i), c.Netns(i))
	}
	return nil
}

func writeAgentConfig(c *Config, i int) (string, error) {
	dir := c.NodeDir(i)
	lh := filepath.Join(dir, "longhorn")
	if err := os.MkdirAll(lh, 0o755); err != nil {
		return "", err
	}
	// The node's own /var/run/longhorn too: instance managers put NBD
	// sockets there, and two nodes (or two clusters) on this machine must
	// not share a socket path for same-named volumes.
	run := filepath.Join(dir, "run-longhorn")
	if err := os.MkdirAll(run, 0o755); err != nil {
		return "", err
	}
	for _, mp := range []string{"/var/lib/longhorn", "/var/run/longhorn"} { // mount points only
		if err := os.MkdirAll(mp, 0o755); err != nil {
			return "", err
		}
	}
	hostNS, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return "", err
	}
	cgDir := ""
	if top := clusterCgroup(c); top != nil {
		cgDir = filepath.Join(top.Path, c.NodeName(i))
	}
	ac := nodeagent.Config{
		NodeName: c.NodeName(i), NodeIP: c.NodeIP(i).String(),
		Kubeconfig:  c.KubeconfigPath(),
		ServingCert: c.pkiPath(c.NodeName(i) + ".crt"), ServingKey: c.pkiPath(c.NodeName(i) + ".key"),
		ClientCA: c.pkiPath(caCert), NodeDir: dir,
		NodeMounts:    []nodeagent.Mount{{Source: lh, Target: "/var/lib/longhorn"}, {Source: run, Target: "/var/run/longhorn"}},
		HostMountNS:   hostNS,
		Images:        c.Images,
		AgentBinary:   c.AgentBinary,
		APIServerHost: c.Gateway().String(), APIServerPort: c.APIServerPort,
		CgroupDir:      cgDir,
		KubeletVersion: kubeletVersion(c),
	}
	b, err := json.MarshalIndent(ac, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "agent.json")
	return p, os.WriteFile(p, b, 0o600)
}

// kubeletVersion reports the control plane's version for nodeInfo
// (kube-apiserver --version prints "Kubernetes v1.37.2").
func kubeletVersion(c *Config) string {
	out, err := exec.Command(filepath.Join(c.AssetsDir, "kube-apiserver"), "--version").Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	if len(f) == 2 {
		return f[1]
	}
	return ""
}

// Client returns a clientset for the cluster's admin kubeconfig.
func (c *Config) Client() (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// waitNodesReady waits until every node reports Ready.
func waitNodesReady(ctx context.Context, c *Config, timeout time.Duration) error {
	cs, err := c.Client()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		ready := 0
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := 1; i <= c.Nodes; i++ {
				for _, n := range nodes.Items {
					if n.Name == c.NodeName(i) && nodeReady(&n) {
						ready++
					}
				}
			}
		}
		if ready == c.Nodes {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes Ready after %v; see %s", ready, c.Nodes, timeout, filepath.Join(c.StateDir, "logs"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

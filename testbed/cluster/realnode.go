package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/testbed/multus"
)

// Real nodes: per node, a persistent mount namespace with the node's own
// directories (nodeBinds), then containerd, the images, kubelet and
// kube-proxy, each a daemon inside the node's network and mount
// namespaces (nsenter), recorded in State.Procs as "<kind>/<node>".

// Node daemon kinds, in start order; stopAll stops them in reverse.
const (
	kindContainerd = "containerd"
	kindKubelet    = "kubelet"
	kindKubeProxy  = "kube-proxy"
)

var nodeKinds = []string{kindContainerd, kindKubelet, kindKubeProxy}

// nodeProcName is the State.Procs key of node i's daemon of kind.
func nodeProcName(c *Config, kind string, i int) string { return kind + "/" + c.NodeName(i) }

// nodePath is the PATH of node daemons (kubelet runs mount, iptables, ...).
const nodePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// startRealNodes prepares every node and starts what is not running:
// containerd (then the images are imported), kubelet, kube-proxy.
func startRealNodes(ctx context.Context, c *Config, st *State, out Printf) error {
	pause := filepath.Join(c.StateDir, "images", "pause.oci.tar")
	if err := WriteOCIArchive(pause, ImageSpec{Ref: pauseRef, Entrypoint: []string{"/pause"},
		Files: []ImageFile{{Path: "/pause", Mode: 0o755, Source: c.PauseBinary}}}); err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	archives := append([]string{pause}, c.ImageArchives...)
	for i := 1; i <= c.Nodes; i++ {
		t0 := time.Now()
		if err := prepareNode(c, st, i, out); err != nil {
			return fmt.Errorf("%s: %w", c.NodeName(i), err)
		}
		if err := startNodeDaemon(c, st, i, kindContainerd, out); err != nil {
			return err
		}
		if err := waitContainerd(ctx, c, i, st.Procs[nodeProcName(c, kindContainerd, i)], 60*time.Second); err != nil {
			return err
		}
		n, err := importImages(ctx, c, i, archives)
		if err != nil {
			return fmt.Errorf("%s: %w", c.NodeName(i), err)
		}
		for _, k := range []string{kindKubelet, kindKubeProxy} {
			if err := startNodeDaemon(c, st, i, k, out); err != nil {
				return err
			}
		}
		out("%-24s containerd, kubelet, kube-proxy up; %d of %d images imported (%.1fs)", c.NodeName(i), n, len(archives), time.Since(t0).Seconds())
	}
	return nil
}

// nodeArgv is the command line of node i's daemon of kind, run by nsenter
// in the node's network and mount namespaces.
func nodeArgv(c *Config, kind string, i int) []string {
	d := c.NodeDir(i)
	var cmd []string
	switch kind {
	case kindContainerd:
		cmd = []string{"containerd", "--config", filepath.Join(d, "containerd.toml")}
	case kindKubelet:
		cmd = append([]string{filepath.Join(c.AssetsDir, "kubelet")}, kubeletArgs(c, i)...)
	case kindKubeProxy:
		cmd = []string{filepath.Join(c.AssetsDir, "kube-proxy"), "--config=" + filepath.Join(d, "kube-proxy.yaml"), "--v=1"}
	}
	nsenter := "nsenter"
	if p, err := exec.LookPath("nsenter"); err == nil {
		nsenter = p
	}
	return append([]string{nsenter, "--net=/run/netns/" + c.Netns(i), "--mount=" + c.MountNS(i), "--"}, cmd...)
}

// startNodeDaemon starts node i's daemon of kind unless it runs.
func startNodeDaemon(c *Config, st *State, i int, kind string, out Printf) error {
	name := nodeProcName(c, kind, i)
	if p, ok := st.Procs[name]; ok && p.Alive() {
		return nil
	}
	cg, err := subCgroup(c, c.NodeName(i), kind)
	if err != nil {
		return err
	}
	p, err := startDaemon(nodeArgv(c, kind, i), c.logPath(c.NodeName(i)+"-"+kind), cg, []string{nodePath, "HOME=/root"})
	if err != nil {
		return err
	}
	st.Procs[name] = p
	if err := st.save(); err != nil {
		return err
	}
	out("%-24s started (pid %d)", name, p.PID)
	return nil
}

// StopNodeDaemons kills node i's kubelet and containerd (SIGKILL, as a
// crash would), leaving its containers running without them: the node goes
// NotReady. StartNodeDaemons brings them back.
func StopNodeDaemons(c *Config, i int, kinds ...string) error {
	st, err := LoadState(c.StateDir)
	if err != nil {
		return err
	}
	for _, k := range kinds {
		p, ok := st.Procs[nodeProcName(c, k, i)]
		if !ok || !p.Alive() {
			continue
		}
		if err := unix.Kill(p.PID, unix.SIGKILL); err != nil {
			return fmt.Errorf("kill %s of %s (pid %d): %w", k, c.NodeName(i), p.PID, err)
		}
		for j := 0; j < 250 && p.Alive(); j++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// StartNodeDaemons starts whatever of node i's containerd, kubelet and
// kube-proxy is not running (after StopNodeDaemons).
func StartNodeDaemons(ctx context.Context, c *Config, i int, out Printf) error {
	st, err := LoadState(c.StateDir)
	if err != nil {
		return err
	}
	if err := startNodeDaemon(c, st, i, kindContainerd, out); err != nil {
		return err
	}
	if err := waitContainerd(ctx, c, i, st.Procs[nodeProcName(c, kindContainerd, i)], 60*time.Second); err != nil {
		return err
	}
	for _, k := range []string{kindKubelet, kindKubeProxy} {
		if err := startNodeDaemon(c, st, i, k, out); err != nil {
			return err
		}
	}
	return nil
}

// Ctr returns a ctr(1) command against node i's containerd in the
// Kubernetes namespace (k8s.io), as the root namespace reaches it.
func (c *Config) Ctr(ctx context.Context, i int, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ctr", append([]string{"--address", c.ContainerdSocket(i), "--namespace", "k8s.io"}, args...)...)
}

// Crictl returns a crictl command (from the assets) against node i's
// containerd.
func (c *Config) Crictl(ctx context.Context, i int, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, filepath.Join(c.AssetsDir, "crictl"),
		append([]string{"--runtime-endpoint", "unix://" + c.ContainerdSocket(i), "--image-endpoint", "unix://" + c.ContainerdSocket(i), "--timeout", "10s"}, args...)...)
}

// waitContainerd waits until node i's containerd answers `ctr version`.
func waitContainerd(ctx context.Context, c *Config, i int, p Proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if !p.Alive() {
			return fmt.Errorf("%s: containerd (pid %d) exited; log %s\n%s", c.NodeName(i), p.PID, p.Log, tailFile(p.Log, 15))
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.Ctr(cctx, i, "version").Run()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: containerd not answering on %s after %v; log %s", c.NodeName(i), c.ContainerdSocket(i), timeout, p.Log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// importImages imports each archive's images into node i's containerd
// unless the node has them at the same digest, names them in the form the
// CRI looks up (NormalizeRef), and returns how many archives it imported.
func importImages(ctx context.Context, c *Config, i int, archives []string) (int, error) {
	n := 0
	for _, a := range archives {
		imgs, err := ReadArchiveImages(a)
		if err != nil {
			return n, err
		}
		if haveImages(ctx, c, i, imgs) {
			continue
		}
		base := imgs[0].Ref
		if j := strings.LastIndexAny(base, ":@"); j > strings.LastIndex(base, "/") {
			base = base[:j]
		}
		if b, err := c.Ctr(ctx, i, "images", "import", "--base-name", base, a).CombinedOutput(); err != nil {
			return n, fmt.Errorf("ctr images import %s: %w\n%s", a, err, b)
		}
		for _, img := range imgs {
			if norm := NormalizeRef(img.Ref); norm != img.Ref {
				if b, err := c.Ctr(ctx, i, "images", "tag", "--force", img.Ref, norm).CombinedOutput(); err != nil {
					return n, fmt.Errorf("ctr images tag %s %s: %w\n%s", img.Ref, norm, err, b)
				}
				_ = c.Ctr(ctx, i, "images", "rm", img.Ref).Run()
			}
		}
		n++
	}
	return n, nil
}

// haveImages reports whether node i has every image under its normalized
// name with the archive's digest.
func haveImages(ctx context.Context, c *Config, i int, imgs []ArchiveImage) bool {
	b, err := c.Ctr(ctx, i, "images", "ls").Output()
	if err != nil {
		return false
	}
	have := parseCtrImages(string(b))
	for _, img := range imgs {
		if have[NormalizeRef(img.Ref)] != img.Digest {
			return false
		}
	}
	return true
}

// parseCtrImages parses `ctr images ls` (REF TYPE DIGEST SIZE PLATFORMS
// LABELS) into ref -> digest.
func parseCtrImages(out string) map[string]string {
	m := map[string]string{}
	for i, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 3 {
			continue
		}
		m[f[0]] = f[2]
	}
	return m
}

// prepareNode creates node i's directories and files, its mount namespace
// with the private mounts, its cgroup root and its pod routes, and stops
// the running daemons whose configuration changed (they start again with
// the new one).
func prepareNode(c *Config, st *State, i int, out Printf) error {
	changed, err := writeNodeFiles(c, i)
	if err != nil {
		return err
	}
	for _, k := range nodeKinds {
		if p, ok := st.Procs[nodeProcName(c, k, i)]; ok && changed[k] && p.Alive() {
			stopProc(p, 15*time.Second)
			out("%-24s stopped: its configuration changed", nodeProcName(c, k, i))
		}
	}
	if err := ensureMountNS(c, i); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	if err := ensureV1CgroupRoot(c.KubeletCgroupRoot(i)); err != nil {
		return err
	}
	return setupNodePodNetwork(c, i)
}

// writeNodeFiles writes node i's config files and kubeconfigs, each only
// when its content changed (kube-proxy exits when its file is rewritten),
// and returns the daemon kinds whose configuration changed.
func writeNodeFiles(c *Config, i int) (map[string]bool, error) {
	d := c.NodeDir(i)
	for _, b := range nodeBinds(c, i) {
		if err := os.MkdirAll(b.Source, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(d, "etc-cni", "net.d"), 0o755); err != nil {
		return nil, err
	}
	files := []struct{ name, kind, content string }{
		{"containerd.toml", kindContainerd, containerdConfig(c.cniBinDir())},
		{filepath.Join("etc-cni", "net.d", clusterConflistName), "", cniConflist(c, i)},
		{"kubelet.yaml", kindKubelet, kubeletConfig(c, i)},
		{"resolv.conf", "", resolvConf},
		{"kubelet.kubeconfig", kindKubelet, kubeconfigFor(c, "system:node:"+c.NodeName(i), c.pkiPath(c.NodeName(i)+"-client.crt"), c.pkiPath(c.NodeName(i)+"-client.key"))},
		{"kube-proxy.yaml", kindKubeProxy, kubeProxyConfig(c, i)},
		{"kube-proxy.kubeconfig", kindKubeProxy, kubeconfigFor(c, "system:kube-proxy", c.pkiPath(kubeProxyCert+".crt"), c.pkiPath(kubeProxyCert+".key"))},
	}
	multusConf := filepath.Join(d, "etc-cni", "net.d", multusConflistName)
	if c.StorageNetworkEnabled() {
		files = append(files, struct{ name, kind, content string }{filepath.Join("etc-cni", "net.d", multusConflistName), "",
			multus.PluginConflist(c.multusKubeconfig(), "/etc/cni/net.d/"+clusterConflistName)})
	} else if err := os.Remove(multusConf); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	changed := map[string]bool{}
	for _, f := range files {
		p := filepath.Join(d, f.name)
		if old, err := os.ReadFile(p); err == nil && string(old) == f.content {
			continue
		}
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			return nil, err
		}
		changed[f.kind] = true
	}
	return changed, nil
}

// ensureMountNS creates node i's persistent mount namespace (a copy of the
// root one, slave propagation) and its private mounts, unless it exists.
// The namespace files live in <StateDir>/ns, a private bind mount (the
// kernel refuses a namespace file on a shared mount).
func ensureMountNS(c *Config, i int) error {
	nsDir := filepath.Dir(c.MountNS(i))
	if err := os.MkdirAll(nsDir, 0o755); err != nil {
		return err
	}
	if !isMountPoint(nsDir) {
		if err := unix.Mount(nsDir, nsDir, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", nsDir, err)
		}
		if err := unix.Mount("", nsDir, "", unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make-private %s: %w", nsDir, err)
		}
	}
	f := c.MountNS(i)
	if isMountPoint(f) {
		return nil
	}
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		return err
	}
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, b := range nodeBinds(c, i) {
		if err := os.MkdirAll(b.Target, 0o755); err != nil { // mount point on the host; stays empty there
			return err
		}
		fmt.Fprintf(&script, "mount --bind %q %q\n", b.Source, b.Target)
		if b.Shared {
			fmt.Fprintf(&script, "mount --make-shared %q\n", b.Target)
		} else {
			fmt.Fprintf(&script, "mount --make-private %q\n", b.Target)
		}
	}
	if b, err := exec.Command("unshare", "--mount="+f, "--propagation", "slave", "true").CombinedOutput(); err != nil {
		return fmt.Errorf("unshare --mount=%s: %w: %s", f, err, bytes.TrimSpace(b))
	}
	if b, err := exec.Command("nsenter", "--mount="+f, "--", "sh", "-c", script.String()).CombinedOutput(); err != nil {
		return fmt.Errorf("node mounts: %w: %s", err, bytes.TrimSpace(b))
	}
	return nil
}

// isMountPoint reports whether p is a mount point of this mount namespace.
func isMountPoint(p string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[4] == p {
			return true
		}
	}
	return false
}

// ErrKernel is wrapped when the kernel lacks something real nodes need.
var ErrKernel = errors.New("kernel feature missing")

// nodePackages maps each program real nodes run to the Debian package
// that installs it.
var nodePackages = []struct{ prog, pkg string }{
	{"containerd", "containerd"}, {"containerd-shim-runc-v2", "containerd"}, {"ctr", "containerd"},
	{"runc", "runc"}, {"iptables", "iptables"}, {"iptables-restore", "iptables"}, {"iptables-save", "iptables"},
	{"conntrack", "conntrack"},
}

// checkRealNodeTools checks the node programs, the CNI plugins, the pause
// binary, the image archives and the kernel: overlayfs (containerd's
// snapshotter), the cgroup controllers kubelet needs, loop devices.
func checkRealNodeTools(c *Config) error {
	for _, t := range nodePackages {
		if _, err := exec.LookPath(t.prog); err != nil {
			return fmt.Errorf("%s not found: apt-get install %s (listed in .ci/packages)", t.prog, t.pkg)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if !exists(filepath.Join(cniBinDir, p)) {
			return fmt.Errorf("CNI plugin %s not found in %s: apt-get install containernetworking-plugins", p, cniBinDir)
		}
	}
	if !filepath.IsAbs(c.PauseBinary) || !exists(c.PauseBinary) {
		return fmt.Errorf("pause binary %q: want an existing absolute path (make cluster builds bin/lhpause)", c.PauseBinary)
	}
	for _, a := range c.ImageArchives {
		if _, err := ReadArchiveImages(a); err != nil {
			return fmt.Errorf("image archive: %w", err)
		}
	}
	if b, _ := os.ReadFile("/proc/filesystems"); !strings.Contains(string(b), "\toverlay\n") {
		return fmt.Errorf("%w: overlayfs (containerd's snapshotter) is not in /proc/filesystems; load it with `modprobe overlay`", ErrKernel)
	}
	if miss := missingV1Controllers(); len(miss) > 0 {
		return fmt.Errorf("%w: cgroup controllers %s are mounted neither as cgroup v1 hierarchies nor enabled in cgroup2 (kubelet needs them)", ErrKernel, strings.Join(miss, ", "))
	}
	if !exists("/dev/loop-control") {
		return fmt.Errorf("%w: no /dev/loop-control: loop devices are missing (`modprobe loop`)", ErrKernel)
	}
	return nil
}

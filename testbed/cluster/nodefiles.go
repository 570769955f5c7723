package cluster

import (
	"fmt"
	"path/filepath"
)

// Real-node file layout. Every node directory (Config.NodeDir) holds the
// sources of the node's private mounts and its configuration files; the
// renderers below are pure so that tests can check them.

// pauseRef is the sandbox image every node's containerd uses; it is built
// here from Config.PauseBinary (no registry is contacted).
const pauseRef = "localhost/lhcluster/pause:1"

// kubeletPort is the kubelet's HTTPS port on the node address.
const kubeletPort = 10250

// bindMount is one private mount of a node's mount namespace: Source (a
// host path under the node directory) bound on Target. Shared targets get
// shared propagation, so that mounts made below them by kubelet or by a
// container with Bidirectional propagation are seen by the whole node.
type bindMount struct {
	Source, Target string
	Shared         bool
}

// nodeBinds lists node i's private mounts, in mount order.
func nodeBinds(c *Config, i int) []bindMount {
	d := c.NodeDir(i)
	return []bindMount{
		{filepath.Join(d, "kubelet"), "/var/lib/kubelet", true},
		{filepath.Join(d, "longhorn"), "/var/lib/longhorn", true},
		{filepath.Join(d, "run-longhorn"), "/run/longhorn", true},
		{filepath.Join(d, "containerd"), "/var/lib/containerd", false},
		{filepath.Join(d, "run-containerd"), "/run/containerd", false},
		{filepath.Join(d, "etc-cni"), "/etc/cni", false},
		{filepath.Join(d, "cni"), "/var/lib/cni", false},
		{filepath.Join(d, "netns"), "/run/netns", false},
		{filepath.Join(d, "log-pods"), "/var/log/pods", false},
		{filepath.Join(d, "log-containers"), "/var/log/containers", false},
	}
}

// ContainerdSocket is node i's containerd socket as the root mount
// namespace sees it (/run/containerd/containerd.sock inside the node).
func (c *Config) ContainerdSocket(i int) string {
	return filepath.Join(c.NodeDir(i), "run-containerd", "containerd.sock")
}

// MountNS is the file that keeps node i's mount namespace (a bind mount of
// /proc/PID/ns/mnt, as `unshare --mount=FILE` makes it).
func (c *Config) MountNS(i int) string { return filepath.Join(c.StateDir, "ns", c.NodeName(i)) }

// KubeletCgroupRoot is node i's cgroup root (cgroup v1 hierarchies): its
// kubelet puts kubepods below it, so nodes never share pod cgroups.
func (c *Config) KubeletCgroupRoot(i int) string { return "/" + c.CgroupName() + "/" + c.NodeName(i) }

// containerdConfig renders node i's containerd config (version 2, for
// containerd 1.6): default paths (the node's own through nodeBinds), CRI
// with runc (cgroupfs), overlayfs, CNI from Debian's plugin directory, and
// the locally built pause image as sandbox image, and OOM score
// adjustments clamped to containerd's own (see restrict_oom_score_adj).
func containerdConfig(binDir string) string {
	return fmt.Sprintf(`version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  enable_selinux = false
  max_container_log_line_size = 16384
  # This VM's processes lack CAP_SYS_RESOURCE (not in the bounding set), so
  # runc cannot lower oom_score_adj below 0 (kubelet asks -998 for
  # sandboxes): clamp to containerd's own value, as rootless setups do.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = "/etc/cni/net.d"
`, pauseRef, binDir)
}

// cniBinDir is where Debian's containernetworking-plugins installs.
const cniBinDir = "/usr/lib/cni"

// cniConflist renders node i's CNI network: a bridge cni0 holding the
// node's pod gateway (pods route everything to it; the node namespace has
// no default route, so nothing leaves the machine), host-local addresses
// from the node's pod range, hairpin mode (a pod reaches itself through a
// Service), and portmap.
func cniConflist(c *Config, i int) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "lhcluster",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, c.NodePodCIDR(i), c.NodePodGateway(i))
}

// kubeletConfig renders node i's KubeletConfiguration: cgroup v1 allowed
// (this VM has no cgroup v2 controllers), cgroupfs driver under the node's
// own cgroup root, x509 + webhook authentication, the node's serving
// certificate, containerd's socket, a resolv.conf without name servers
// (there is no cluster DNS; nothing here may resolve names outside), and
// eviction thresholds low enough that a shared, busy disk does not put
// DiskPressure on the node (Longhorn treats a node under pressure as down).
func kubeletConfig(c *Config, i int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
resolvConf: %s
clusterDomain: cluster.local
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
evictionPressureTransitionPeriod: 30s
serializeImagePulls: false
maxPods: 110
podPidsLimit: -1
nodeStatusReportFrequency: 10s
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
fileCheckFrequency: 10s
`, c.KubeletCgroupRoot(i), c.NodeIP(i), kubeletPort,
		c.pkiPath(c.NodeName(i)+".crt"), c.pkiPath(c.NodeName(i)+".key"), c.pkiPath(caCert),
		filepath.Join(c.NodeDir(i), "resolv.conf"))
}

// resolvConf is the pods' resolv.conf: search domains only, no server.
const resolvConf = "search cluster.local\noptions ndots:1\n"

// kubeProxyConfig renders node i's KubeProxyConfiguration: iptables mode,
// bound to the node address, the whole pod CIDR local, and conntrack
// sysctls left alone (nf_conntrack_max is machine-wide).
func kubeProxyConfig(c *Config, i int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %s}
hostnameOverride: %s
bindAddress: %s
clusterCIDR: %s
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [primary]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables: {syncPeriod: 10s, minSyncPeriod: 1s}
`, filepath.Join(c.NodeDir(i), "kube-proxy.kubeconfig"), c.NodeName(i), c.NodeIP(i), c.PodCIDR)
}

// kubeconfigFor renders a kubeconfig for the cluster's API server with a
// client certificate (paths, not inline data).
func kubeconfigFor(c *Config, user, cert, key string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority: %[3]s
users:
- name: %[4]s
  user:
    client-certificate: %[5]s
    client-key: %[6]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[4]s
current-context: %[1]s
`, "longhorn-"+c.Name, c.APIServerURL(), c.pkiPath(caCert), user, cert, key)
}

// kubeletArgs is node i's kubelet command line (after the binary).
func kubeletArgs(c *Config, i int) []string {
	d := c.NodeDir(i)
	return []string{
		"--config=" + filepath.Join(d, "kubelet.yaml"),
		"--kubeconfig=" + filepath.Join(d, "kubelet.kubeconfig"),
		"--hostname-override=" + c.NodeName(i),
		"--node-ip=" + c.NodeIP(i).String(),
		"--v=1",
	}
}

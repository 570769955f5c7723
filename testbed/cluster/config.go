// Package cluster runs the local cluster: a real control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler from `make
// testbin`) and N nodes, each in its own network namespace with its own IP
// on a bridge. The command-line front end is hack/cluster (`make cluster`).
//
// Nodes come in two modes (Config.NodeMode):
//   - containerd (the default): real nodes. Each node also gets a mount
//     namespace of its own (its own /var/lib/kubelet with shared
//     propagation, /var/lib/longhorn, /run/containerd, /etc/cni, ...) in
//     which Debian's containerd and runc, the CNI plugins (bridge,
//     host-local, loopback, portmap), a kubelet and kube-proxy (iptables
//     mode) built at the control plane's version run. Pods are containers
//     with addresses from the node's pod CIDR; images are imported from OCI
//     archives (no registry), the pause image is built here.
//   - agent: the earlier, faster mode: a node agent (package nodeagent,
//     built on the virtual-kubelet library) runs pods as local processes in
//     the node's namespaces (pod IP = node IP, images mapped to binaries).
//
// Network safety: the bridge lives in the root namespace and holds the
// subnet's gateway address, so the root namespace routes the node subnet to
// the bridge. Before anything dials a node address, CheckRoutes verifies with
// `ip route get` that every node address resolves to the bridge; node
// namespaces get no default route, and the service range is an unreachable
// route, so no packet for a cluster address can take the default route.
package cluster

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
)

// Config describes a local cluster. Zero fields take the defaults of
// DefaultConfig; Validate checks the rest.
type Config struct {
	// Name prefixes every host-level object (bridge <Name>br0, netns
	// <Name>-node-N, cgroup lhcluster-<Name>). 1-8 chars [a-z0-9].
	Name string
	// Nodes is the number of nodes, 1-50.
	Nodes int
	// Subnet holds the node addresses (.1 ... .Nodes) and the gateway (the
	// last usable address, on the bridge). Must be a private IPv4 /16-/28.
	Subnet netip.Prefix
	// ServiceCIDR is the kube-apiserver service range. It is installed as an
	// unreachable route in the root namespace so ClusterIPs never leave the
	// machine. Must not overlap Subnet.
	ServiceCIDR netip.Prefix
	// StateDir holds PKI, kubeconfig, logs, per-node directories and the
	// state file.
	StateDir string
	// AssetsDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kubectl (the `make testbin` assets directory).
	AssetsDir string
	// AgentBinary is the lhcluster binary (node-agent and pod-exec modes).
	AgentBinary string
	// Images maps image patterns to binaries, e.g.
	// "longhornio/longhorn:*" -> /path/bin/longhorn (see nodeagent.ImageMap).
	Images map[string]string
	// APIServerPort and EtcdPort are bound on the gateway address.
	APIServerPort int
	EtcdPort      int
	// NodeMode is NodeModeContainerd (real nodes, the default) or
	// NodeModeAgent (pods as processes).
	NodeMode NodeMode
	// PodCIDR (real nodes) holds the pods' addresses: node i gets the i-th
	// /24 of it (10.100.0.0/16: node-1 10.100.1.0/24, ...). The root
	// namespace routes each node's /24 via the node's address and the rest
	// of PodCIDR is an unreachable route. Must be a private IPv4 /8-/23
	// that overlaps neither Subnet nor ServiceCIDR.
	PodCIDR netip.Prefix
	// ImageArchives (real nodes) are OCI image archives imported into
	// every node's containerd (the product image, bin/images/*.oci.tar).
	ImageArchives []string
	// PauseBinary (real nodes) is the static binary of the pause image
	// (bin/lhpause); the image is assembled from it at start.
	PauseBinary string
	// StorageSubnet (real nodes; zero = none) is a second network for
	// storage traffic: bridge <Name>br1 with the subnet's last address,
	// eth1 in every node, reached by pods through the Multus-compatible
	// meta-plugin (storagenet.go). A private IPv4 /16-/24 overlapping no
	// other range.
	StorageSubnet netip.Prefix
	// MultusBinary is the meta-plugin (bin/lhmultus), needed with a
	// storage network.
	MultusBinary string
}

// NodeMode says how nodes run pods.
type NodeMode string

// Node modes.
const (
	// NodeModeContainerd: kubelet + containerd + kube-proxy per node.
	NodeModeContainerd NodeMode = "containerd"
	// NodeModeAgent: the virtual-kubelet node agent (pods as processes).
	NodeModeAgent NodeMode = "agent"
)

// DefaultConfig returns a 3-node cluster named "lh" on 10.99.0.0/24 with
// services in 10.99.1.0/24, apiserver on 10.99.0.254:6443 and etcd on
// 10.99.0.254:2379/2380.
func DefaultConfig() Config {
	return Config{
		Name:          "lh",
		Nodes:         3,
		Subnet:        netip.MustParsePrefix("10.99.0.0/24"),
		ServiceCIDR:   netip.MustParsePrefix("10.99.1.0/24"),
		APIServerPort: 6443,
		EtcdPort:      2379,
		NodeMode:      NodeModeContainerd,
		PodCIDR:       netip.MustParsePrefix("10.100.0.0/16"),
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9]{1,8}$`)

// ErrConfig is wrapped by every Validate error.
var ErrConfig = errors.New("invalid cluster config")

// Validate checks the config and fills defaults for zero fields.
func (c *Config) Validate() error {
	d := DefaultConfig()
	if c.Name == "" {
		c.Name = d.Name
	}
	if c.Nodes == 0 {
		c.Nodes = d.Nodes
	}
	if !c.Subnet.IsValid() {
		c.Subnet = d.Subnet
	}
	if !c.ServiceCIDR.IsValid() {
		c.ServiceCIDR = d.ServiceCIDR
	}
	if c.APIServerPort == 0 {
		c.APIServerPort = d.APIServerPort
	}
	if c.EtcdPort == 0 {
		c.EtcdPort = d.EtcdPort
	}
	if c.NodeMode == "" {
		c.NodeMode = d.NodeMode
	}
	if !c.PodCIDR.IsValid() {
		c.PodCIDR = d.PodCIDR
	}
	if err := c.validateNetwork(); err != nil {
		return err
	}
	switch {
	case !nameRE.MatchString(c.Name):
		return fmt.Errorf("%w: name %q: want 1-8 chars [a-z0-9]", ErrConfig, c.Name)
	case c.Nodes < 1 || c.Nodes > 50:
		return fmt.Errorf("%w: nodes %d: want 1-50", ErrConfig, c.Nodes)
	case c.StateDir == "":
		return fmt.Errorf("%w: state dir is empty", ErrConfig)
	case c.APIServerPort < 1 || c.APIServerPort > 65535 || c.EtcdPort < 1 || c.EtcdPort > 65534:
		return fmt.Errorf("%w: ports: apiserver %d, etcd %d (peer = etcd+1)", ErrConfig, c.APIServerPort, c.EtcdPort)
	}
	hosts := 1<<(32-c.Subnet.Bits()) - 2 // minus network and broadcast
	if c.Nodes > hosts-1 {
		return fmt.Errorf("%w: %d nodes + gateway do not fit in %s", ErrConfig, c.Nodes, c.Subnet)
	}
	if err := c.validatePods(); err != nil {
		return err
	}
	return c.validateStorage()
}

// validateNetwork checks the node subnet and the service range.
func (c *Config) validateNetwork() error {
	switch {
	case !c.Subnet.Addr().Is4() || !c.Subnet.Addr().IsPrivate() || c.Subnet.Bits() < 16 || c.Subnet.Bits() > 28:
		return fmt.Errorf("%w: subnet %s: want a private IPv4 prefix /16-/28", ErrConfig, c.Subnet)
	case c.Subnet.Masked() != c.Subnet:
		return fmt.Errorf("%w: subnet %s has host bits set", ErrConfig, c.Subnet)
	case !c.ServiceCIDR.Addr().Is4() || !c.ServiceCIDR.Addr().IsPrivate() || c.ServiceCIDR.Bits() < 12 || c.ServiceCIDR.Bits() > 28:
		return fmt.Errorf("%w: service CIDR %s: want a private IPv4 prefix /12-/28", ErrConfig, c.ServiceCIDR)
	case c.ServiceCIDR.Overlaps(c.Subnet):
		return fmt.Errorf("%w: service CIDR %s overlaps subnet %s", ErrConfig, c.ServiceCIDR, c.Subnet)
	}
	return nil
}

// validatePods checks the node mode and the pod CIDR.
func (c *Config) validatePods() error {
	switch {
	case c.NodeMode != NodeModeContainerd && c.NodeMode != NodeModeAgent:
		return fmt.Errorf("%w: node mode %q: want %s or %s", ErrConfig, c.NodeMode, NodeModeContainerd, NodeModeAgent)
	case !c.PodCIDR.Addr().Is4() || !c.PodCIDR.Addr().IsPrivate() || c.PodCIDR.Bits() < 8 || c.PodCIDR.Bits() > 23:
		return fmt.Errorf("%w: pod CIDR %s: want a private IPv4 prefix /8-/23", ErrConfig, c.PodCIDR)
	case c.PodCIDR.Masked() != c.PodCIDR:
		return fmt.Errorf("%w: pod CIDR %s has host bits set", ErrConfig, c.PodCIDR)
	case c.PodCIDR.Overlaps(c.Subnet) || c.PodCIDR.Overlaps(c.ServiceCIDR):
		return fmt.Errorf("%w: pod CIDR %s overlaps the subnet %s or the service CIDR %s", ErrConfig, c.PodCIDR, c.Subnet, c.ServiceCIDR)
	case c.Nodes >= 1<<(24-c.PodCIDR.Bits()):
		return fmt.Errorf("%w: pod CIDR %s has %d /24s, too few for %d nodes (node i takes the i-th)", ErrConfig, c.PodCIDR, 1<<(24-c.PodCIDR.Bits())-1, c.Nodes)
	}
	return nil
}

// Real reports whether nodes run kubelet and containerd.
func (c *Config) Real() bool { return c.NodeMode != NodeModeAgent }

// NodePodCIDR is node i's pod range: the i-th /24 of PodCIDR.
func (c *Config) NodePodCIDR(i int) netip.Prefix {
	return netip.PrefixFrom(addrAt(c.PodCIDR, i<<8), 24)
}

// NodePodGateway is the address of node i's pod bridge (cni0): the first
// host of its pod range.
func (c *Config) NodePodGateway(i int) netip.Addr { return c.NodePodCIDR(i).Addr().Next() }

// Bridge is the name of the bridge in the root namespace.
func (c *Config) Bridge() string { return c.Name + "br0" }

// Gateway is the bridge's address: the last usable address of Subnet. The
// control plane binds it.
func (c *Config) Gateway() netip.Addr {
	return addrAt(c.Subnet, 1<<(32-c.Subnet.Bits())-2)
}

// NodeName is the Kubernetes name of node i (1-based): node-1, node-2, ...
func (c *Config) NodeName(i int) string { return "node-" + strconv.Itoa(i) }

// NodeIP is node i's address: the i-th host of Subnet.
func (c *Config) NodeIP(i int) netip.Addr { return addrAt(c.Subnet, i) }

// Netns is the network namespace of node i.
func (c *Config) Netns(i int) string { return c.Name + "-" + c.NodeName(i) }

// HostVeth is the root-namespace end of node i's veth pair (<= 15 chars).
func (c *Config) HostVeth(i int) string { return c.Name + "veth" + strconv.Itoa(i) }

// NodeDir is node i's state directory; its "longhorn" subdirectory is
// bind-mounted on /var/lib/longhorn in the node's mount namespace.
func (c *Config) NodeDir(i int) string {
	return filepath.Join(c.StateDir, "nodes", c.NodeName(i))
}

// KubeconfigPath is the admin kubeconfig written for the user.
func (c *Config) KubeconfigPath() string { return filepath.Join(c.StateDir, "kubeconfig") }

// CgroupName is the cgroup (under the cgroup2 mount) holding every node
// agent and pod process of the cluster.
func (c *Config) CgroupName() string { return "lhcluster-" + c.Name }

// APIServerURL is https://<gateway>:<port>.
func (c *Config) APIServerURL() string {
	return "https://" + netip.AddrPortFrom(c.Gateway(), uint16(c.APIServerPort)).String()
}

// ServiceIP is the first service address (the kubernetes Service).
func (c *Config) ServiceIP() netip.Addr { return c.ServiceCIDR.Addr().Next() }

// addrAt returns the n-th address of p (n=0 is the network address).
func addrAt(p netip.Prefix, n int) netip.Addr {
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

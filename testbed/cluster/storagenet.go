package cluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/testbed/multus"
)

// Storage network (Config.StorageSubnet set, real nodes): a second bridge
// <Name>br1 in the root namespace holding the subnet's last address, and
// in every node namespace an interface eth1 on it (veth, host end
// <Name>sn<i>, no address on the node side). Pods reach it through the
// test bed's Multus-compatible meta-plugin (testbed/multus, binary
// lhmultus): containerd runs lhmultus as the node's CNI network; it runs
// the node's bridge network for eth0 and, for a pod whose
// k8s.v1.cni.cncf.io/networks annotation asks for one, the
// NetworkAttachmentDefinition's plugin (macvlan on eth1 in StorageNAD). The
// subnet is routed to br1 only (checked with `ip route get`), nodes get no
// route into it, and no namespace gets a default route through it.

// StorageBridge is the storage network's bridge in the root namespace.
func (c *Config) StorageBridge() string { return c.Name + "br1" }

// StorageVeth is the root-namespace end of node i's storage interface.
func (c *Config) StorageVeth(i int) string { return c.Name + "sn" + strconv.Itoa(i) }

// StorageGateway is the storage bridge's address (the subnet's last usable
// address).
func (c *Config) StorageGateway() netip.Addr {
	return addrAt(c.StorageSubnet, 1<<(32-c.StorageSubnet.Bits())-2)
}

// StorageNetworkEnabled reports whether the cluster has a storage network.
func (c *Config) StorageNetworkEnabled() bool { return c.StorageSubnet.IsValid() && c.Real() }

// StorageIPAMDir is host-local's allocation directory of StorageNAD,
// shared by every node.
func (c *Config) StorageIPAMDir() string { return filepath.Join(c.StateDir, "storage-ipam") }

// StorageNodeInterface is the storage interface inside each node (the
// NAD's macvlan master).
const StorageNodeInterface = "eth1"

// StorageNAD is the NetworkAttachmentDefinition namespace/name of the test
// bed's storage network: macvlan on eth1, addresses .10-.200 of the subnet
// from host-local with a directory shared by all nodes.
func (c *Config) StorageNAD(namespace, name string) string {
	return multus.StorageNAD(namespace, name, StorageNodeInterface, c.StorageSubnet,
		addrAt(c.StorageSubnet, 10), addrAt(c.StorageSubnet, 200), c.StorageIPAMDir())
}

// validateStorage checks the storage subnet: private IPv4 /16-/28,
// overlapping no other range of the cluster.
func (c *Config) validateStorage() error {
	s := c.StorageSubnet
	switch {
	case !s.IsValid():
		return nil
	case !s.Addr().Is4() || !s.Addr().IsPrivate() || s.Bits() < 16 || s.Bits() > 24:
		return fmt.Errorf("%w: storage subnet %s: want a private IPv4 prefix /16-/24", ErrConfig, s)
	case s.Masked() != s:
		return fmt.Errorf("%w: storage subnet %s has host bits set", ErrConfig, s)
	case s.Overlaps(c.Subnet) || s.Overlaps(c.ServiceCIDR) || s.Overlaps(c.PodCIDR):
		return fmt.Errorf("%w: storage subnet %s overlaps the node subnet, service or pod CIDR", ErrConfig, s)
	case c.MultusBinary == "" && c.Real():
		return fmt.Errorf("%w: a storage network needs the meta-plugin binary (MultusBinary, bin/lhmultus)", ErrConfig)
	}
	return nil
}

// setupStorageNetwork creates (or keeps) the storage bridge and every
// node's eth1 on it.
func setupStorageNetwork(c *Config) error {
	br := c.StorageBridge()
	if !linkExists(br) {
		if _, err := ip("link", "add", br, "type", "bridge"); err != nil {
			return err
		}
	}
	gw := netip.PrefixFrom(c.StorageGateway(), c.StorageSubnet.Bits()).String()
	if out, _ := ip("-4", "-o", "addr", "show", "dev", br); !strings.Contains(out, " "+gw+" ") {
		if _, err := ip("addr", "add", gw, "dev", br); err != nil {
			return err
		}
	}
	if _, err := ip("link", "set", br, "up"); err != nil {
		return err
	}
	for i := 1; i <= c.Nodes; i++ {
		veth, ns := c.StorageVeth(i), c.Netns(i)
		if !linkExists(veth) {
			if _, err := ip("link", "add", veth, "type", "veth", "peer", "name", StorageNodeInterface, "netns", ns); err != nil {
				return err
			}
		}
		if _, err := ip("link", "set", veth, "master", br, "up"); err != nil {
			return err
		}
		if _, err := ip("-n", ns, "link", "set", StorageNodeInterface, "up"); err != nil {
			return err
		}
	}
	return nil
}

// checkStorageRoutes verifies that the storage subnet is routed to the
// storage bridge only, with no gateway.
func checkStorageRoutes(c *Config) error {
	for _, a := range []netip.Addr{addrAt(c.StorageSubnet, 1), addrAt(c.StorageSubnet, 10), addrAt(c.StorageSubnet, 200)} {
		out, err := ip("-o", "route", "get", a.String())
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnsafeRoute, err)
		}
		if r := parseRouteGet(out); r.dev != c.StorageBridge() || r.kind != "" || r.via != "" {
			return fmt.Errorf("%w: storage address %s routes as %q, want dev %s with no gateway", ErrUnsafeRoute, a, strings.TrimSpace(out), c.StorageBridge())
		}
	}
	return nil
}

// teardownStorageNetwork removes the storage bridge and any host veth end
// left (the node ends go with the node namespaces).
func teardownStorageNetwork(c *Config) []error {
	var errs []error
	for _, name := range linkNames(c.Name + "sn") {
		if _, err := ip("link", "del", name); err != nil && linkExists(name) {
			errs = append(errs, err)
		}
	}
	if linkExists(c.StorageBridge()) {
		if _, err := ip("link", "del", c.StorageBridge()); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// linkNames lists the links whose name starts with prefix.
func linkNames(prefix string) []string {
	out, err := ip("-o", "link", "show")
	if err != nil {
		return nil
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names
}

// SetStorageLinkUp brings node i's storage interface up or down (its host
// end on the storage bridge), for tests that cut a node off the storage
// network only.
func SetStorageLinkUp(c *Config, i int, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	_, err := ip("link", "set", c.StorageVeth(i), state)
	return err
}

// cniBinDir of a cluster: Debian's plugins, plus lhmultus with a storage
// network (then a directory of the state dir with links to Debian's
// plugins and a copy of lhmultus, since containerd 1.6 takes one bin_dir).
func (c *Config) cniBinDir() string {
	if c.StorageNetworkEnabled() {
		return filepath.Join(c.StateDir, "cni-bin")
	}
	return cniBinDir
}

// multusKubeconfig is the plugin's kubeconfig (user PluginUser).
func (c *Config) multusKubeconfig() string { return c.pkiPath("lhmultus.kubeconfig") }

// prepareMultus fills the CNI bin directory, issues the plugin's client
// certificate and writes its kubeconfig.
func prepareMultus(c *Config) error {
	dir := c.cniBinDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(cniBinDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		link := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(cniBinDir, e.Name()), link); err != nil {
			return err
		}
	}
	if err := copyFile(c.MultusBinary, filepath.Join(dir, "lhmultus"), 0o755); err != nil {
		return fmt.Errorf("lhmultus: %w", err)
	}
	if err := os.MkdirAll(c.StorageIPAMDir(), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(c.pkiPath("lhmultus.crt")); err != nil {
		ca, caPriv, err := loadCA(c)
		if err != nil {
			return err
		}
		t := &x509.Certificate{Subject: pkix.Name{CommonName: multus.PluginUser}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if err := issue(c.pkiPath("lhmultus.crt"), c.pkiPath("lhmultus.key"), t, ca, caPriv); err != nil {
			return err
		}
	}
	kc := kubeconfigFor(c, multus.PluginUser, c.pkiPath("lhmultus.crt"), c.pkiPath("lhmultus.key"))
	return os.WriteFile(c.multusKubeconfig(), []byte(kc), 0o600)
}

// copyFile copies src to dst through a temporary file (a running plugin
// keeps its old binary).
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// installMultus applies the NetworkAttachmentDefinition CRD and the
// plugin's RBAC (multus.Manifest).
func installMultus(ctx context.Context, c *Config, out Printf) error {
	t0 := time.Now()
	cmd := c.Kubectl(ctx, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(multus.Manifest)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("multus manifest: %w\n%s", err, b)
	}
	out("storage network: bridge %s %s/%d, NetworkAttachmentDefinition CRD and lhmultus installed (%.1fs)",
		c.StorageBridge(), c.StorageGateway(), c.StorageSubnet.Bits(), time.Since(t0).Seconds())
	return nil
}

// multusConflistName is the node's first CNI configuration with a storage
// network (containerd loads the first file of /etc/cni/net.d).
const multusConflistName = "00-lhmultus.conflist"

// clusterConflistName is the node's bridge network.
const clusterConflistName = "10-lhcluster.conflist"

package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ErrUnsafeRoute is returned (wrapped) when a cluster address would not be
// routed to the bridge: the cluster refuses to start rather than let a
// packet for a node address take the default route.
var ErrUnsafeRoute = errors.New("cluster address not routed to the bridge")

// ip runs the ip(8) command and returns its stdout; errors carry stderr.
func ip(args ...string) (string, error) {
	cmd := exec.Command("ip", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func linkExists(name string) bool {
	_, err := ip("link", "show", "dev", name)
	return err == nil
}

func netnsExists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

// SetupNetwork creates (or keeps) the bridge with the gateway address, the
// unreachable service route, and every node's netns and veth, then runs
// CheckRoutes. It is idempotent. No node namespace gets a default route.
func SetupNetwork(c *Config) error {
	if err := checkSubnetFree(c); err != nil {
		return err
	}
	br := c.Bridge()
	if !linkExists(br) {
		if _, err := ip("link", "add", br, "type", "bridge"); err != nil {
			return err
		}
	}
	gw := netip.PrefixFrom(c.Gateway(), c.Subnet.Bits()).String()
	if out, _ := ip("-4", "-o", "addr", "show", "dev", br); !strings.Contains(out, " "+gw+" ") {
		if _, err := ip("addr", "add", gw, "dev", br); err != nil {
			return err
		}
	}
	if _, err := ip("link", "set", br, "up"); err != nil {
		return err
	}
	// Service ClusterIPs are not implemented by a proxy here: make them fail
	// fast instead of following the default route.
	if _, err := ip("route", "replace", "unreachable", c.ServiceCIDR.String()); err != nil {
		return err
	}
	for i := 1; i <= c.Nodes; i++ {
		if err := setupNode(c, i); err != nil {
			return err
		}
	}
	if c.StorageNetworkEnabled() {
		if err := setupStorageNetwork(c); err != nil {
			return err
		}
	}
	if c.Real() {
		if err := setupRootPodRoutes(c); err != nil {
			return err
		}
	}
	return CheckRoutes(c)
}

func setupNode(c *Config, i int) error {
	ns, veth := c.Netns(i), c.HostVeth(i)
	if !netnsExists(ns) {
		if _, err := ip("netns", "add", ns); err != nil {
			return err
		}
	}
	if !linkExists(veth) {
		if _, err := ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns); err != nil {
			return err
		}
	}
	if _, err := ip("link", "set", veth, "master", c.Bridge(), "up"); err != nil {
		return err
	}
	addr := netip.PrefixFrom(c.NodeIP(i), c.Subnet.Bits()).String()
	if out, _ := ip("-n", ns, "-4", "-o", "addr", "show", "dev", "eth0"); !strings.Contains(out, " "+addr+" ") {
		if _, err := ip("-n", ns, "addr", "add", addr, "dev", "eth0"); err != nil {
			return err
		}
	}
	for _, dev := range []string{"eth0", "lo"} {
		if _, err := ip("-n", ns, "link", "set", dev, "up"); err != nil {
			return err
		}
	}
	return nil
}

// checkSubnetFree refuses a subnet that an interface other than our bridge
// already has addresses in (another cluster, a real network).
func checkSubnetFree(c *Config) error {
	out, err := ip("-4", "-o", "addr", "show")
	if err != nil {
		return err
	}
	for _, a := range parseAddrShow(out) {
		if a.dev != c.Bridge() && a.prefix.Overlaps(c.Subnet) {
			return fmt.Errorf("%w: %s already has %s, inside subnet %s; choose another subnet", ErrUnsafeRoute, a.dev, a.prefix, c.Subnet)
		}
		if c.StorageSubnet.IsValid() && a.dev != c.StorageBridge() && a.prefix.Overlaps(c.StorageSubnet) {
			return fmt.Errorf("%w: %s already has %s, inside storage subnet %s; choose another one", ErrUnsafeRoute, a.dev, a.prefix, c.StorageSubnet)
		}
		if a.prefix.Overlaps(c.ServiceCIDR) {
			return fmt.Errorf("%w: %s has %s, inside service CIDR %s", ErrUnsafeRoute, a.dev, a.prefix, c.ServiceCIDR)
		}
	}
	return nil
}

type ifAddr struct {
	dev    string
	prefix netip.Prefix
}

// parseAddrShow parses `ip -4 -o addr show` lines:
// "3: lhbr0    inet 10.99.0.254/24 scope global lhbr0\ ...".
func parseAddrShow(out string) []ifAddr {
	var res []ifAddr
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for j := 0; j+1 < len(f); j++ {
			if f[j] != "inet" || len(f) < 2 {
				continue
			}
			p, err := netip.ParsePrefix(f[j+1])
			if err == nil {
				res = append(res, ifAddr{dev: strings.TrimSuffix(f[1], ":"), prefix: p})
			}
		}
	}
	return res
}

// CheckRoutes asks the kernel (`ip route get`) how every node address is
// routed and fails with ErrUnsafeRoute unless each goes out on the bridge,
// unless the service range is unreachable and, with real nodes, unless
// every node's pod range goes via that node on the bridge and the rest of
// the pod CIDR is unreachable. Call it before any traffic to
// a cluster address.
func CheckRoutes(c *Config) error {
	for i := 1; i <= c.Nodes; i++ {
		a := c.NodeIP(i).String()
		out, err := ip("-o", "route", "get", a)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnsafeRoute, err)
		}
		if r := parseRouteGet(out); r.dev != c.Bridge() || r.kind != "" || r.via != "" {
			return fmt.Errorf("%w: %s routes as %q, want dev %s with no gateway", ErrUnsafeRoute, a, strings.TrimSpace(out), c.Bridge())
		}
	}
	svc := c.ServiceIP().String()
	if out, err := ip("-o", "route", "get", svc); err == nil {
		return fmt.Errorf("%w: service address %s routes as %q, want unreachable", ErrUnsafeRoute, svc, strings.TrimSpace(out))
	}
	if c.StorageNetworkEnabled() {
		if err := checkStorageRoutes(c); err != nil {
			return err
		}
	}
	if c.Real() {
		return checkPodRoutes(c)
	}
	return nil
}

// route is one `ip -o route get` answer.
type route struct {
	kind string // "" for unicast, else local/unreachable/blackhole/...
	dev  string
	via  string
}

// parseRouteGet parses `ip -o route get ADDR` output such as
// "10.99.0.2 dev lhbr0 src 10.99.0.254 uid 0 \    cache" or
// "local 10.99.0.254 dev lo table local src 10.99.0.254 uid 0".
func parseRouteGet(out string) route {
	f := strings.Fields(out)
	var r route
	if len(f) > 0 {
		if _, err := netip.ParseAddr(f[0]); err != nil {
			r.kind = f[0]
		}
	}
	for j := 0; j+1 < len(f); j++ {
		switch f[j] {
		case "dev":
			r.dev = f[j+1]
		case "via":
			r.via = f[j+1]
		}
	}
	return r
}

// TeardownNetwork deletes every node netns of the cluster (by name prefix,
// so nodes beyond c.Nodes go too) and with them the veth pairs, any leftover
// host veth, the bridge and the service route. Missing pieces are not an
// error.
func TeardownNetwork(c *Config) error {
	var errs []error
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), c.Name+"-node-") {
			if _, err := ip("netns", "del", e.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if out, err := ip("-o", "link", "show"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if strings.HasPrefix(name, c.Name+"veth") {
				if _, err := ip("link", "del", name); err != nil && linkExists(name) {
					errs = append(errs, err)
				}
			}
		}
	}
	if linkExists(c.Bridge()) {
		if _, err := ip("link", "del", c.Bridge()); err != nil {
			errs = append(errs, err)
		}
	}
	if out, _ := ip("route", "show", "type", "unreachable"); strings.Contains(out, c.ServiceCIDR.String()) {
		if _, err := ip("route", "del", "unreachable", c.ServiceCIDR.String()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := teardownPodRoutes(c); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, teardownStorageNetwork(c)...)
	return errors.Join(errs...)
}

// SetLinkUp brings node i's network up or down (the root-namespace veth
// end), for tests that cut a node off the network.
func SetLinkUp(c *Config, i int, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	_, err := ip("link", "set", c.HostVeth(i), state)
	return err
}

// nodeIndex returns i for NodeName(i), or 0.
func (c *Config) nodeIndex(name string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "node-"))
	if err != nil || n < 1 || n > c.Nodes || c.NodeName(n) != name {
		return 0
	}
	return n
}

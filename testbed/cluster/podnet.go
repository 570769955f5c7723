package cluster

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Pod network of real nodes. Node i's pods get addresses from
// NodePodCIDR(i) on the node's bridge cni0 (CNI bridge plugin). Routes:
//   - in node i's namespace: every other node's pod range via that node's
//     address on eth0, the service range via the gateway (kube-proxy
//     rewrites service addresses in OUTPUT before the packet leaves; one
//     it did not rewrite reaches the root namespace, where the range is
//     unreachable); still no default route;
//   - in the root namespace: each node's pod range via the node's address
//     on the bridge (the API server reaches webhooks and the test bed
//     reaches pods), the rest of PodCIDR unreachable.
// All are checked with `ip route get` by CheckRoutes.

// nodeSysctls are set in every real node's network namespace: routing
// between eth0 and cni0, and bridged pod traffic through iptables (so
// that kube-proxy's rules see pod-to-pod traffic on one node's bridge).
var nodeSysctls = map[string]string{
	"net/ipv4/ip_forward":                "1",
	"net/bridge/bridge-nf-call-iptables": "1",
	"net/ipv4/conf/all/rp_filter":        "0",
	"net/ipv4/conf/default/rp_filter":    "0",
}

// setupNodePodNetwork sets node i's sysctls and routes (idempotent).
func setupNodePodNetwork(c *Config, i int) error {
	ns := c.Netns(i)
	var script strings.Builder
	for k, v := range nodeSysctls {
		fmt.Fprintf(&script, "echo %s > /proc/sys/%s\n", v, k)
	}
	if b, err := nsenterNet(ns, "sh", "-ec", script.String()); err != nil {
		return fmt.Errorf("%s sysctls: %w: %s", ns, err, b)
	}
	for j := 1; j <= c.Nodes; j++ {
		if j == i {
			continue
		}
		if _, err := ip("-n", ns, "route", "replace", c.NodePodCIDR(j).String(), "via", c.NodeIP(j).String(), "dev", "eth0"); err != nil {
			return err
		}
	}
	_, err := ip("-n", ns, "route", "replace", c.ServiceCIDR.String(), "via", c.Gateway().String(), "dev", "eth0")
	return err
}

// setupRootPodRoutes installs the root namespace's pod routes, after
// refusing a pod CIDR that the root namespace already routes elsewhere:
// `ip route replace` would silently take another cluster's pod routes.
func setupRootPodRoutes(c *Config) error {
	out, err := ip("-4", "-o", "route", "show")
	if err != nil {
		return err
	}
	if r, taken := podCIDRTaken(out, c.PodCIDR, c.Bridge()); taken {
		return fmt.Errorf("%w: pod CIDR %s is already routed (%q): another cluster or network uses it; choose another pod CIDR", ErrUnsafeRoute, c.PodCIDR, r)
	}
	if _, err := ip("route", "replace", "unreachable", c.PodCIDR.String()); err != nil {
		return err
	}
	for i := 1; i <= c.Nodes; i++ {
		if _, err := ip("route", "replace", c.NodePodCIDR(i).String(), "via", c.NodeIP(i).String(), "dev", c.Bridge()); err != nil {
			return err
		}
	}
	return nil
}

// checkPodRoutes verifies with `ip route get` that each node's pod gateway
// routes via the node on the bridge and that an address of PodCIDR no node
// uses is unreachable.
func checkPodRoutes(c *Config) error {
	for i := 1; i <= c.Nodes; i++ {
		a := c.NodePodGateway(i).String()
		out, err := ip("-o", "route", "get", a)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnsafeRoute, err)
		}
		if r := parseRouteGet(out); r.dev != c.Bridge() || r.kind != "" || r.via != c.NodeIP(i).String() {
			return fmt.Errorf("%w: pod address %s routes as %q, want via %s dev %s", ErrUnsafeRoute, a, strings.TrimSpace(out), c.NodeIP(i), c.Bridge())
		}
	}
	unused := unusedPodAddr(c)
	if out, err := ip("-o", "route", "get", unused.String()); err == nil {
		return fmt.Errorf("%w: unused pod address %s routes as %q, want unreachable", ErrUnsafeRoute, unused, strings.TrimSpace(out))
	}
	return nil
}

// unusedPodAddr is an address of PodCIDR in no node's range (the first
// /24, which no node takes).
func unusedPodAddr(c *Config) netip.Addr { return c.NodePodCIDR(0).Addr().Next() }

// teardownPodRoutes removes the root namespace's unreachable pod route;
// the per-node routes go with the bridge.
func teardownPodRoutes(c *Config) error {
	if !c.PodCIDR.IsValid() {
		return nil
	}
	if out, _ := ip("route", "show", "type", "unreachable"); strings.Contains(out, c.PodCIDR.String()) {
		_, err := ip("route", "del", "unreachable", c.PodCIDR.String())
		return err
	}
	return nil
}

// nsenterNet runs argv in network namespace ns (nsenter rather than `ip
// netns exec`, which remounts /sys) and returns its combined output.
func nsenterNet(ns string, argv ...string) ([]byte, error) {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + ns, "--"}, argv...)...).CombinedOutput()
}

// podCIDRTaken returns the first line of `ip -4 -o route show` output
// whose destination overlaps podCIDR and that goes out on a device other
// than bridge (another cluster's pod routes, a real network). Routes
// without a device (our unreachable route) do not count.
func podCIDRTaken(out string, podCIDR netip.Prefix, bridge string) (string, bool) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if len(f) > 1 && (dst == "unreachable" || dst == "blackhole" || dst == "prohibit") {
			dst = f[1]
		}
		p, err := netip.ParsePrefix(dst)
		if err != nil {
			if a, aerr := netip.ParseAddr(dst); aerr == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			} else {
				continue // "default" and the like
			}
		}
		for j := 0; j+1 < len(f); j++ {
			if f[j] == "dev" && f[j+1] != bridge && p.Overlaps(podCIDR) {
				return strings.TrimSpace(line), true
			}
		}
	}
	return "", false
}

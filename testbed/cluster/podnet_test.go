package cluster

import (
	"net/netip"
	"testing"
)

// Two clusters with one pod CIDR replaced each other's pod routes (the UI
// cluster lost its API server while a bench cluster came up): the second
// must refuse instead.
func TestPodCIDRTaken(t *testing.T) {
	pods := netip.MustParsePrefix("10.105.0.0/16")
	out := `default via 172.17.0.1 dev eth0
unreachable 10.99.65.0/24
10.99.64.0/24 dev lhuibr0 proto kernel scope link src 10.99.64.254
unreachable 10.105.0.0/16
10.105.1.0/24 via 10.99.64.1 dev lhuibr0
10.105.2.0/24 via 10.99.64.2 dev lhuibr0
`
	if r, taken := podCIDRTaken(out, pods, "lhuibr0"); taken {
		t.Fatalf("our own routes count as taken: %q", r)
	}
	r, taken := podCIDRTaken(out, pods, "lhcpbbr0")
	if !taken || r != "10.105.1.0/24 via 10.99.64.1 dev lhuibr0" {
		t.Fatalf("another cluster's pod routes: %q %v", r, taken)
	}
	if _, taken := podCIDRTaken(out, netip.MustParsePrefix("10.108.0.0/16"), "lhcpbbr0"); taken {
		t.Fatal("a free pod CIDR is taken")
	}
	if _, taken := podCIDRTaken("10.105.7.9 dev eth1 scope link\n", pods, "lhuibr0"); !taken {
		t.Fatal("a host route inside the pod CIDR is not seen")
	}
}

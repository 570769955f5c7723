package cluster

import (
	"errors"
	"net/netip"
	"testing"
)

func TestConfigDefaultsAndAddresses(t *testing.T) {
	c := Config{StateDir: "/tmp/x"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"gateway":  {c.Gateway().String(), "10.99.0.254"},
		"node1":    {c.NodeIP(1).String(), "10.99.0.1"},
		"node3":    {c.NodeIP(3).String(), "10.99.0.3"},
		"bridge":   {c.Bridge(), "lhbr0"},
		"netns":    {c.Netns(2), "lh-node-2"},
		"veth":     {c.HostVeth(2), "lhveth2"},
		"svc":      {c.ServiceIP().String(), "10.99.1.1"},
		"url":      {c.APIServerURL(), "https://10.99.0.254:6443"},
		"nodeName": {c.NodeName(1), "node-1"},
	}
	for name, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", name, v[0], v[1])
		}
	}
	if c.nodeIndex("node-2") != 2 || c.nodeIndex("node-9") != 0 || c.nodeIndex("x") != 0 {
		t.Error("nodeIndex")
	}
	c2 := Config{StateDir: "/s", Subnet: netip.MustParsePrefix("172.30.4.0/22")}
	if err := c2.Validate(); err != nil {
		t.Fatal(err)
	}
	if g := c2.Gateway().String(); g != "172.30.7.254" {
		t.Errorf("gateway of /22 = %s", g)
	}
}

func TestConfigValidateRejects(t *testing.T) {
	for name, c := range map[string]Config{
		"name":        {StateDir: "/s", Name: "Bad_Name"},
		"long name":   {StateDir: "/s", Name: "abcdefghi"},
		"nodes":       {StateDir: "/s", Nodes: 51},
		"public":      {StateDir: "/s", Subnet: netip.MustParsePrefix("8.8.8.0/24")},
		"host bits":   {StateDir: "/s", Subnet: netip.MustParsePrefix("10.99.0.1/24")},
		"too small":   {StateDir: "/s", Subnet: netip.MustParsePrefix("10.99.0.0/30")},
		"overlap":     {StateDir: "/s", ServiceCIDR: netip.MustParsePrefix("10.99.0.128/25")},
		"no state":    {},
		"fit":         {StateDir: "/s", Nodes: 20, Subnet: netip.MustParsePrefix("10.99.0.0/28")},
		"bad port":    {StateDir: "/s", APIServerPort: 70000},
		"ipv6":        {StateDir: "/s", Subnet: netip.MustParsePrefix("fd00::/64")},
		"public svcs": {StateDir: "/s", ServiceCIDR: netip.MustParsePrefix("1.2.3.0/24")},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Validate() = %v, want ErrConfig", name, err)
		}
	}
}

func TestParseRouteGet(t *testing.T) {
	for in, want := range map[string]route{
		"10.99.0.2 dev lhbr0 src 10.99.0.254 uid 0 \\    cache ":                          {dev: "lhbr0"},
		"10.99.0.2 via 192.0.2.1 dev eth0 src 192.0.2.2 uid 0 \\    cache ":               {dev: "eth0", via: "192.0.2.1"},
		"local 10.99.0.254 dev lo table local src 10.99.0.254 uid 0 \\    cache <local> ": {kind: "local", dev: "lo"},
		"unreachable 10.99.1.1 table main uid 0":                                          {kind: "unreachable"},
		"":                                                                                {},
	} {
		if got := parseRouteGet(in); got != want {
			t.Errorf("parseRouteGet(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestParseAddrShow(t *testing.T) {
	out := "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n" +
		"7: lhbr0    inet 10.99.0.254/24 scope global lhbr0\\       valid_lft forever preferred_lft forever\n"
	got := parseAddrShow(out)
	if len(got) != 2 || got[1].dev != "lhbr0" || got[1].prefix.String() != "10.99.0.254/24" || got[0].dev != "lo" {
		t.Fatalf("parseAddrShow = %+v", got)
	}
}

func TestUnder(t *testing.T) {
	if !under("/a/b/c", "/a/b") || !under("/a/b", "/a/b/") || under("/a/bc", "/a/b") {
		t.Fatal("under")
	}
}

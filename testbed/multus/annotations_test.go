package multus

import (
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"

	types100 "github.com/containernetworking/cni/pkg/types/100"
)

func TestParseNetworks(t *testing.T) {
	cases := []struct {
		name, in string
		want     []NetworkSelection
		err      string
	}{
		{"empty", "", nil, ""},
		{"json, Longhorn's form", `[{"namespace": "kube-system", "name": "storage", "interface": "lhnet1"}]`,
			[]NetworkSelection{{Name: "storage", Namespace: "kube-system", Interface: "lhnet1"}}, ""},
		{"json, default namespace and interface", `[{"name": "a"}, {"name": "b", "interface": "x"}]`,
			[]NetworkSelection{{Name: "a", Namespace: "pods", Interface: "net1"}, {Name: "b", Namespace: "pods", Interface: "x"}}, ""},
		{"short form", "kube-system/storage@lhnet1, other",
			[]NetworkSelection{{Name: "storage", Namespace: "kube-system", Interface: "lhnet1"}, {Name: "other", Namespace: "pods", Interface: "net2"}}, ""},
		{"json ips and mac", `[{"name": "a", "ips": ["10.1.2.3/24"], "mac": "02:00:00:00:00:01"}]`,
			[]NetworkSelection{{Name: "a", Namespace: "pods", Interface: "net1", IPs: []string{"10.1.2.3/24"}, MAC: "02:00:00:00:00:01"}}, ""},
		{"bad json", `[{"name": 1}]`, nil, "cannot unmarshal"},
		{"bad name", `[{"name": "Bad_Name"}]`, nil, "not a DNS-1123 subdomain"},
		{"bad namespace", "a.b/x", nil, "not a DNS-1123 label"},
		{"eth0 refused", "x@eth0", nil, "used twice"},
		{"twice refused", "x@n1,y@n1", nil, "used twice"},
		{"long interface", "x@abcdefghijklmnop", nil, "1-15 characters"},
		{"bad mac", `[{"name": "a", "mac": "zz"}]`, nil, "mac"},
		{"bad ip", `[{"name": "a", "ips": ["nope"]}]`, nil, "neither an address"},
		{"too many", strings.Repeat("a,", MaxNetworks) + "a", nil, "at most 32"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNetworks(tc.in, "pods")
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrBadAnnotation) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func FuzzParseNetworks(f *testing.F) {
	for _, s := range []string{"", "a", "ns/a@if1,b", `[{"name":"a","namespace":"b","interface":"c"}]`, `[{"name":"a","ips":["1.2.3.4"],"mac":"02:00:00:00:00:01"}]`, "[", "/@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseNetworks(s, "default")
		if err != nil {
			if !errors.Is(err, ErrBadAnnotation) {
				t.Fatalf("error %v does not wrap ErrBadAnnotation", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, x := range sel {
			if x.Name == "" || x.Namespace == "" || x.Interface == "" || x.Interface == "eth0" || seen[x.Interface] {
				t.Fatalf("accepted an incomplete or duplicate selection %+v", x)
			}
			seen[x.Interface] = true
		}
	})
}

func TestStatusFromResult(t *testing.T) {
	two, zero := 1, 0
	_, a1, _ := net.ParseCIDR("10.99.36.12/24")
	a1.IP = net.ParseIP("10.99.36.12")
	_, a0, _ := net.ParseCIDR("10.110.1.5/24")
	a0.IP = net.ParseIP("10.110.1.5")
	res := &types100.Result{CNIVersion: "1.0.0",
		Interfaces: []*types100.Interface{{Name: "cni0", Mac: "aa:aa:aa:aa:aa:aa"}, {Name: "lhnet1", Mac: "02:42:ac:11:00:02", Sandbox: "/var/run/netns/x"}},
		IPs:        []*types100.IPConfig{{Interface: &two, Address: *a1}, {Interface: &zero, Address: *a0}},
	}
	st, err := StatusFromResult("kube-system/storage", "lhnet1", res, false)
	if err != nil {
		t.Fatal(err)
	}
	want := NetworkStatus{Name: "kube-system/storage", Interface: "lhnet1", IPs: []string{"10.99.36.12"}, MAC: "02:42:ac:11:00:02"}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("status %+v, want %+v", st, want)
	}
	b, _ := json.Marshal([]NetworkStatus{st})
	// What Longhorn's manager parses: interface and ips; dns always present, as Multus writes it.
	if string(b) != `[{"name":"kube-system/storage","interface":"lhnet1","ips":["10.99.36.12"],"mac":"02:42:ac:11:00:02","dns":{}}]` {
		t.Fatalf("json %s", b)
	}
}

func TestConfListWrapsAPluginConfig(t *testing.T) {
	l, err := confList([]byte(`{"cniVersion": "0.3.1", "type": "macvlan", "master": "eth1"}`), "storage")
	if err != nil {
		t.Fatal(err)
	}
	if l.Name != "storage" || l.CNIVersion != "0.3.1" || len(l.Plugins) != 1 || l.Plugins[0].Network.Type != "macvlan" {
		t.Fatalf("list %+v", l)
	}
	l, err = confList([]byte(`{"cniVersion": "1.0.0", "name": "lhcluster", "plugins": [{"type": "bridge"}, {"type": "portmap"}]}`), "x")
	if err != nil || l.Name != "lhcluster" || len(l.Plugins) != 2 {
		t.Fatalf("conflist %+v %v", l, err)
	}
	if _, err := confList([]byte(`{`), "x"); err == nil {
		t.Fatal("bad JSON accepted")
	}
}

func TestParseArgs(t *testing.T) {
	p, pairs := parseArgs("IgnoreUnknown=1;K8S_POD_NAMESPACE=longhorn-system;K8S_POD_NAME=instance-manager-x;K8S_POD_INFRA_CONTAINER_ID=abc")
	if p.Namespace != "longhorn-system" || p.Name != "instance-manager-x" || len(pairs) != 4 {
		t.Fatalf("%+v %v", p, pairs)
	}
}

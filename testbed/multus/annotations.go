// Package multus is the test bed's Multus-compatible CNI meta-plugin
// (Multus itself is not on the Go module proxy, and Debian has no package).
// It is test-bed code: the product never imports it. The plugin
// (cmd/lhmultus) is the one CNI network containerd calls; it runs the
// cluster network (the node's bridge conflist) for eth0, then, for each
// network a pod's k8s.v1.cni.cncf.io/networks annotation asks for, the
// delegate plugin of that NetworkAttachmentDefinition's spec.config
// (k8s.cni.cncf.io/v1) through libcni, and writes the
// k8s.v1.cni.cncf.io/network-status annotation back onto the pod, as Multus
// does. Formats: the Kubernetes Network Custom Resource Definition
// De-facto Standard (Network Plumbing Working Group, v1: sections 4.1.2 on
// the networks annotation and 4.1.2.1.2 on network-status), and the CNI
// specification for the delegates.
package multus

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"

	cnitypes "github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// Pod annotations of the de-facto standard.
const (
	// NetworksAnnotation is the pod's request for extra networks.
	NetworksAnnotation = "k8s.v1.cni.cncf.io/networks"
	// NetworkStatusAnnotation is written by the meta-plugin: every
	// interface of the pod with its addresses.
	NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"
)

// NetworkSelection is one entry of the networks annotation.
type NetworkSelection struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Interface is the interface name in the pod; "" = net<N> (N the
	// 1-based position in the annotation), as Multus names them.
	Interface string `json:"interface,omitempty"`
	// IPs and MAC are passed to the delegate as the "ips" and "mac"
	// capability arguments.
	IPs []string `json:"ips,omitempty"`
	MAC string   `json:"mac,omitempty"`
}

// Limits of the networks annotation this plugin accepts.
const (
	// MaxNetworks bounds the entries of one annotation.
	MaxNetworks = 32
	// MaxAnnotationBytes bounds the annotation's length.
	MaxAnnotationBytes = 64 << 10
)

// ErrBadAnnotation is wrapped by every ParseNetworks error.
var ErrBadAnnotation = errors.New("invalid " + NetworksAnnotation + " annotation")

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	ifName   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)
)

// ParseNetworks reads a networks annotation: a JSON list of selections, or
// the short form "[ns/]name[@ifname], ..." (a comma-separated list). Names
// and namespaces must be DNS-1123 subdomains, interfaces 1-15 characters
// of [A-Za-z0-9_.-], not "eth0" and not twice; a missing namespace is
// podNamespace; a missing interface becomes net<N>. The error wraps
// ErrBadAnnotation and names the entry.
func ParseNetworks(v, podNamespace string) ([]NetworkSelection, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if len(v) > MaxAnnotationBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrBadAnnotation, len(v), MaxAnnotationBytes)
	}
	var sel []NetworkSelection
	if strings.HasPrefix(v, "[") {
		if err := json.Unmarshal([]byte(v), &sel); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadAnnotation, err)
		}
	} else {
		for _, item := range strings.Split(v, ",") {
			sel = append(sel, parseShort(strings.TrimSpace(item)))
		}
	}
	if len(sel) > MaxNetworks {
		return nil, fmt.Errorf("%w: %d networks, at most %d", ErrBadAnnotation, len(sel), MaxNetworks)
	}
	return completeSelections(sel, podNamespace)
}

// parseShort reads "[ns/]name[@ifname]".
func parseShort(item string) NetworkSelection {
	var s NetworkSelection
	item, s.Interface, _ = strings.Cut(item, "@")
	if ns, name, ok := strings.Cut(item, "/"); ok {
		s.Namespace, s.Name = ns, name
	} else {
		s.Name = item
	}
	return s
}

// completeSelections checks every entry and fills namespace and interface.
func completeSelections(sel []NetworkSelection, podNamespace string) ([]NetworkSelection, error) {
	seen := map[string]bool{"eth0": true}
	for i := range sel {
		s := &sel[i]
		if s.Namespace == "" {
			s.Namespace = podNamespace
		}
		if s.Interface == "" {
			s.Interface = fmt.Sprintf("net%d", i+1)
		}
		switch {
		case len(s.Name) > 253 || !dnsLabel.MatchString(s.Name):
			return nil, fmt.Errorf("%w: entry %d: name %q is not a DNS-1123 subdomain", ErrBadAnnotation, i, s.Name)
		case len(s.Namespace) > 63 || !dnsLabel.MatchString(s.Namespace) || strings.Contains(s.Namespace, "."):
			return nil, fmt.Errorf("%w: entry %d: namespace %q is not a DNS-1123 label", ErrBadAnnotation, i, s.Namespace)
		case !ifName.MatchString(s.Interface):
			return nil, fmt.Errorf("%w: entry %d: interface %q: want 1-15 characters of [A-Za-z0-9_.-]", ErrBadAnnotation, i, s.Interface)
		case seen[s.Interface]:
			return nil, fmt.Errorf("%w: entry %d: interface %q is used twice (eth0 is the cluster network's)", ErrBadAnnotation, i, s.Interface)
		}
		seen[s.Interface] = true
		if s.MAC != "" {
			if _, err := net.ParseMAC(s.MAC); err != nil {
				return nil, fmt.Errorf("%w: entry %d: mac %q: %v", ErrBadAnnotation, i, s.MAC, err)
			}
		}
		for _, a := range s.IPs {
			if _, _, err := net.ParseCIDR(a); err != nil && net.ParseIP(a) == nil {
				return nil, fmt.Errorf("%w: entry %d: ip %q is neither an address nor a CIDR", ErrBadAnnotation, i, a)
			}
		}
	}
	return sel, nil
}

// DNS is the dns object of a network-status entry.
type DNS struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Domain      string   `json:"domain,omitempty"`
	Search      []string `json:"search,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// NetworkStatus is one entry of the network-status annotation.
type NetworkStatus struct {
	// Name is "<namespace>/<name>" of the attachment, or the cluster
	// network's name for the default one.
	Name      string   `json:"name"`
	Interface string   `json:"interface,omitempty"`
	IPs       []string `json:"ips,omitempty"`
	MAC       string   `json:"mac,omitempty"`
	Default   bool     `json:"default,omitempty"`
	DNS       DNS      `json:"dns"`
	Gateway   []string `json:"gateway,omitempty"`
}

// StatusFromResult makes the network-status entry of interface ifname from
// a delegate's CNI result: the addresses of that interface inside the
// sandbox (or of every sandbox interface when the result names none), its
// MAC, gateways and DNS.
func StatusFromResult(name, ifname string, res cnitypes.Result, isDefault bool) (NetworkStatus, error) {
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return NetworkStatus{}, fmt.Errorf("network %s: result: %w", name, err)
	}
	st := NetworkStatus{Name: name, Interface: ifname, Default: isDefault,
		DNS: DNS{Nameservers: r.DNS.Nameservers, Domain: r.DNS.Domain, Search: r.DNS.Search, Options: r.DNS.Options}}
	match := -1
	for i, in := range r.Interfaces {
		if in.Sandbox != "" && in.Name == ifname {
			match, st.MAC = i, in.Mac
		}
	}
	for _, ipc := range r.IPs {
		if match >= 0 && ipc.Interface != nil && *ipc.Interface != match {
			continue
		}
		st.IPs = append(st.IPs, ipc.Address.IP.String())
		if ipc.Gateway != nil {
			st.Gateway = append(st.Gateway, ipc.Gateway.String())
		}
	}
	return st, nil
}

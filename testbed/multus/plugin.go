package multus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/skel"
	cnitypes "github.com/containernetworking/cni/pkg/types"
)

// NetConf is the meta-plugin's own network configuration (the conflist
// containerd loads), shaped like Multus' thin plugin configuration.
type NetConf struct {
	cnitypes.PluginConf
	// Kubeconfig is the file the plugin reads pods and
	// NetworkAttachmentDefinitions and writes network-status with.
	Kubeconfig string `json:"kubeconfig"`
	// ClusterNetwork is the path of the cluster network's conflist (eth0).
	ClusterNetwork string `json:"clusterNetwork"`
	// CacheDir keeps, per container, the delegates an ADD ran, for DEL
	// and CHECK; default /var/lib/cni/lhmultus.
	CacheDir string `json:"cacheDir,omitempty"`
	// RuntimeConfig carries the capability arguments containerd passes
	// (portMappings), handed on to the cluster network.
	RuntimeConfig map[string]any `json:"runtimeConfig,omitempty"`
}

// Cluster is what the plugin asks the API server.
type Cluster interface {
	// PodNetworks returns the pod's networks annotation ("" when the pod
	// asks for none).
	PodNetworks(ctx context.Context, namespace, name string) (string, error)
	// NADConfig returns spec.config of a NetworkAttachmentDefinition.
	NADConfig(ctx context.Context, namespace, name string) (string, error)
	// SetNetworkStatus writes the pod's network-status annotation.
	SetNetworkStatus(ctx context.Context, namespace, name, status string) error
}

// Plugin runs the meta-plugin's CNI commands.
type Plugin struct {
	// CNI executes delegates (libcni.CNIConfig over CNI_PATH).
	CNI libcni.CNI
	// Cluster reaches the API server; built from NetConf.Kubeconfig.
	Cluster func(kubeconfig string) (Cluster, error)
	// Stdout receives ADD's result; nil is os.Stdout (the runtime reads it).
	Stdout io.Writer
}

// delegate is one network the ADD ran, as the cache keeps it.
type delegate struct {
	Name      string          `json:"name"` // network-status name
	Interface string          `json:"interface"`
	Conf      json.RawMessage `json:"conf"` // the conflist
	Default   bool            `json:"default,omitempty"`
	IPs       []string        `json:"ips,omitempty"`
	MAC       string          `json:"mac,omitempty"`
}

// podRef is the pod of a CNI call, from CNI_ARGS.
type podRef struct{ Namespace, Name string }

// parseArgs reads K8S_POD_NAMESPACE and K8S_POD_NAME from CNI_ARGS
// ("K=V;K=V") and returns every pair for the delegates.
func parseArgs(args string) (podRef, [][2]string) {
	var p podRef
	var pairs [][2]string
	for _, kv := range strings.Split(args, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		pairs = append(pairs, [2]string{k, v})
		switch k {
		case "K8S_POD_NAMESPACE":
			p.Namespace = v
		case "K8S_POD_NAME":
			p.Name = v
		}
	}
	return p, pairs
}

func loadConf(stdin []byte) (*NetConf, error) {
	var c NetConf
	if err := json.Unmarshal(stdin, &c); err != nil {
		return nil, fmt.Errorf("lhmultus config: %w", err)
	}
	if c.ClusterNetwork == "" {
		return nil, errors.New("lhmultus config: clusterNetwork is required")
	}
	if c.CacheDir == "" {
		c.CacheDir = "/var/lib/cni/lhmultus"
	}
	return &c, nil
}

// confList parses a delegate configuration: a conflist, or a single
// plugin configuration made a one-plugin list (Multus accepts both in
// spec.config); a missing name becomes fallbackName.
func confList(b []byte, fallbackName string) (*libcni.NetworkConfigList, error) {
	raw := map[string]any{}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if _, ok := raw["name"]; !ok {
		raw["name"] = fallbackName
	}
	if _, ok := raw["plugins"]; !ok {
		raw = map[string]any{"name": raw["name"], "cniVersion": raw["cniVersion"], "plugins": []any{raw}}
	}
	nb, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return libcni.NetworkConfFromBytes(nb)
}

func runtimeConf(args *skel.CmdArgs, pairs [][2]string, ifname string, caps map[string]any) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: args.ContainerID, NetNS: args.Netns, IfName: ifname, Args: pairs, CapabilityArgs: caps}
}

func cachePath(c *NetConf, containerID string) string {
	return filepath.Join(c.CacheDir, filepath.Base(containerID)+".json")
}

func writeCache(c *NetConf, containerID string, ds []delegate) error {
	if err := os.MkdirAll(c.CacheDir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(ds)
	if err != nil {
		return err
	}
	tmp := cachePath(c, containerID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, cachePath(c, containerID))
}

func readCache(c *NetConf, containerID string) ([]delegate, error) {
	b, err := os.ReadFile(cachePath(c, containerID))
	if err != nil {
		return nil, err
	}
	var ds []delegate
	return ds, json.Unmarshal(b, &ds)
}

package multus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// nsExec runs CNI plugins inside a network namespace (the test's "node").
type nsExec struct {
	ns string
	version.PluginDecoder
	invoke.RawExec
}

func (e *nsExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+e.ns, "--", pluginPath)
	cmd.Env, cmd.Stdin = environ, bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s %s", filepath.Base(pluginPath), err, out.String(), errb.String())
	}
	return out.Bytes(), nil
}

// fakeCluster plays the API server for one pod.
type fakeCluster struct {
	networks string
	nads     map[string]string
	status   string
}

func (f *fakeCluster) PodNetworks(context.Context, string, string) (string, error) {
	return f.networks, nil
}
func (f *fakeCluster) NADConfig(_ context.Context, ns, name string) (string, error) {
	c, ok := f.nads[ns+"/"+name]
	if !ok {
		return "", fmt.Errorf("networkattachmentdefinition %s/%s not found", ns, name)
	}
	return c, nil
}
func (f *fakeCluster) SetNetworkStatus(_ context.Context, _, _, s string) error {
	f.status = s
	return nil
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	b, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, b)
	}
	return string(b)
}

// TestPluginAddDelWithDebianPlugins runs the meta-plugin's ADD and DEL with
// Debian's bridge, host-local and macvlan plugins in namespaces the test
// makes: a "node" namespace (with a veth eth1 as macvlan master) and a
// "pod" namespace that gets eth0 from the cluster network and lhnet1 from
// the NetworkAttachmentDefinition, and the network-status written as
// Multus writes it. DEL removes both interfaces and frees the addresses.
func TestPluginAddDelWithDebianPlugins(t *testing.T) {
	testutil.RequireTool(t, "nsenter")
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	for _, p := range []string{"bridge", "host-local", "macvlan"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/cni", p)); err != nil {
			if testutil.ToolsRequired() {
				t.Fatalf("CNI plugin %s missing: apt-get install containernetworking-plugins", p)
			}
			t.Skipf("CNI plugin %s missing", p)
		}
	}
	node, pod := fmt.Sprintf("lhmt-node-%d", os.Getpid()), fmt.Sprintf("lhmt-pod-%d", os.Getpid())
	for _, ns := range []string{node, pod} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	run(t, "ip", "-n", node, "link", "add", "eth1", "type", "veth", "peer", "name", "eth1p")
	run(t, "ip", "-n", node, "link", "set", "eth1", "up")
	dir := t.TempDir()
	clusterNet := filepath.Join(dir, "10-cluster.conflist")
	if err := os.WriteFile(clusterNet, []byte(`{"cniVersion": "1.0.0", "name": "lhcluster", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.38.0/24"}]], "dataDir": "`+dir+`/ipam0"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	kc := &fakeCluster{networks: `[{"namespace": "kube-system", "name": "storage", "interface": "lhnet1"}]`, nads: map[string]string{
		"kube-system/storage": `{"cniVersion": "0.3.1", "type": "macvlan", "master": "eth1", "mode": "bridge", "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.39.0/24", "rangeStart": "10.99.39.10", "rangeEnd": "10.99.39.20"}]], "dataDir": "` + dir + `/ipam1"}}`,
	}}
	p := &Plugin{CNI: libcni.NewCNIConfigWithCacheDir([]string{"/usr/lib/cni"}, filepath.Join(dir, "results"), &nsExec{ns: node}),
		Cluster: func(string) (Cluster, error) { return kc, nil }, Stdout: &bytes.Buffer{}}
	conf, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "lhmultus", "type": "lhmultus",
		"kubeconfig": "/dev/null", "clusterNetwork": clusterNet, "cacheDir": filepath.Join(dir, "cache")})
	args := &skel.CmdArgs{ContainerID: "c0ffee", Netns: "/run/netns/" + pod, IfName: "eth0", StdinData: conf,
		Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=longhorn-system;K8S_POD_NAME=instance-manager-x"}
	if err := p.Add(args); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	addrs := run(t, "ip", "-n", pod, "-4", "-o", "addr", "show")
	if !strings.Contains(addrs, "eth0    inet 10.99.38.") || !strings.Contains(addrs, "lhnet1    inet 10.99.39.1") {
		t.Fatalf("pod interfaces:\n%s", addrs)
	}
	var st []NetworkStatus
	if err := json.Unmarshal([]byte(kc.status), &st); err != nil || len(st) != 2 {
		t.Fatalf("network-status %q: %v", kc.status, err)
	}
	if st[0].Name != "lhcluster" || !st[0].Default || st[0].Interface != "eth0" || len(st[0].IPs) != 1 ||
		st[1].Name != "kube-system/storage" || st[1].Interface != "lhnet1" || !strings.HasPrefix(st[1].IPs[0], "10.99.39.1") || st[1].MAC == "" {
		t.Fatalf("network-status %+v", st)
	}
	if !strings.Contains(addrs, st[1].IPs[0]+"/24") {
		t.Fatalf("status IP %s is not lhnet1's:\n%s", st[1].IPs[0], addrs)
	}
	if err := p.Check(args); err != nil {
		t.Errorf("CHECK: %v", err)
	}
	if err := p.Del(args); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if err := p.Del(args); err != nil {
		t.Fatalf("second DEL: %v", err)
	}
	if links := run(t, "ip", "-n", pod, "-o", "link", "show"); strings.Contains(links, "lhnet1") || strings.Contains(links, "eth0") {
		t.Fatalf("interfaces left after DEL:\n%s", links)
	}
	// host-local freed the storage address.
	ents, _ := os.ReadDir(filepath.Join(dir, "ipam1", "storage"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "10.99.39.") {
			t.Errorf("storage address %s still allocated", e.Name())
		}
	}
}

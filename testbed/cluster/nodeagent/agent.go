// Package nodeagent is the local cluster's kubelet: a virtual-kubelet
// provider that registers a Node and runs every Pod bound to it as local
// processes. Each container runs through `lhcluster pod-exec` in a mount
// namespace of its own (volumes bind-mounted at their mountPaths, the
// service-account token at /var/run/secrets/kubernetes.io/serviceaccount)
// inside the node's network and mount namespaces, so the pod IP is the node
// IP and /var/lib/longhorn is the node's own directory. Images are mapped to
// local binaries (ImageMap). Containers are restarted per restartPolicy,
// probed (exec, httpGet, tcpSocket, grpc), killed on delete, and their logs
// are served to `kubectl logs` through the kubelet API port.
package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	"github.com/virtual-kubelet/virtual-kubelet/log/klogv2"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Config is a node agent's configuration (JSON file written by the cluster
// tool, see cluster.Up).
type Config struct {
	NodeName string `json:"nodeName"`
	// NodeIP is the node's address in its netns: the InternalIP, the pod
	// IP of every pod, and where the kubelet API listens.
	NodeIP string `json:"nodeIP"`
	// Port is the kubelet API port (logs, exec, port-forward); default 10250.
	Port       int    `json:"port,omitempty"`
	Kubeconfig string `json:"kubeconfig"`
	// ServingCert/Key: the kubelet API's certificate; ClientCA verifies the
	// apiserver's client certificate.
	ServingCert string `json:"servingCert"`
	ServingKey  string `json:"servingKey"`
	ClientCA    string `json:"clientCA"`
	// NodeDir holds pods/<uid>/{volumes,logs,exec}.
	NodeDir string `json:"nodeDir"`
	// NodeMounts are bound in the node's mount namespace at start
	// (NodeDir/longhorn on /var/lib/longhorn, NodeDir/run-longhorn on
	// /var/run/longhorn).
	NodeMounts []Mount `json:"nodeMounts"`
	// HostMountNS is the host's mount namespace ("mnt:[N]"); the agent
	// refuses to make NodeMounts in it.
	HostMountNS string `json:"hostMountNS"`
	// Images maps image patterns to binaries (see ImageMap).
	Images map[string]string `json:"images"`
	// AgentBinary is the lhcluster binary, run as `pod-exec` per container.
	AgentBinary string `json:"agentBinary"`
	// APIServerHost/Port are given to pods as KUBERNETES_SERVICE_HOST/PORT,
	// so in-cluster clients reach the apiserver without a service proxy.
	APIServerHost string `json:"apiServerHost"`
	APIServerPort int    `json:"apiServerPort"`
	// CgroupDir is the node's cgroup2 directory ("" = no cgroups); pods go
	// to CgroupDir/pods/<uid>/<container>.
	CgroupDir string `json:"cgroupDir,omitempty"`
	// MaxBackoff caps the container restart back-off; default 10 s.
	MaxBackoff time.Duration `json:"maxBackoff,omitempty"`
	// Labels are extra node labels.
	Labels map[string]string `json:"labels,omitempty"`
	// KubeletVersion is reported in the Node's nodeInfo.
	KubeletVersion string `json:"kubeletVersion,omitempty"`
}

// LoadConfig reads a Config from a JSON file and checks required fields.
func LoadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("node agent config %s: %w", path, err)
	}
	if c.Port == 0 {
		c.Port = 10250
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 10 * time.Second
	}
	if c.KubeletVersion == "" {
		c.KubeletVersion = "v0.0.0-lhcluster"
	}
	for name, v := range map[string]string{"nodeName": c.NodeName, "nodeIP": c.NodeIP, "kubeconfig": c.Kubeconfig,
		"servingCert": c.ServingCert, "servingKey": c.ServingKey, "clientCA": c.ClientCA, "nodeDir": c.NodeDir,
		"agentBinary": c.AgentBinary, "apiServerHost": c.APIServerHost} {
		if v == "" {
			return c, fmt.Errorf("node agent config %s: %s is empty", path, name)
		}
	}
	if net.ParseIP(c.NodeIP) == nil {
		return c, fmt.Errorf("node agent config %s: nodeIP %q is not an IP address", path, c.NodeIP)
	}
	return c, nil
}

// Agent is a running node agent; it implements nodeutil.Provider.
type Agent struct {
	cfg        Config
	images     ImageMap
	client     kubernetes.Interface
	podsCgroup string
	unshare    string
	nsenter    string
	capacity   corev1.ResourceList

	mu     sync.Mutex
	pods   map[string]*podRunner // namespace/name
	notify func(*corev1.Pod)
}

// Run sets up the node's mounts, registers the Node and runs its pods until
// ctx ends; then it kills every pod process of the node.
func Run(ctx context.Context, cfg Config) error {
	vklog.L = klogv2.New(nil) // virtual-kubelet logs through klog too
	a, err := newAgent(cfg)
	if err != nil {
		return err
	}
	if err := SetupNodeMounts(cfg.NodeMounts, cfg.HostMountNS); err != nil {
		return err
	}
	defer a.killPods()
	mux := newMux()
	node, err := nodeutil.NewNode(cfg.NodeName,
		func(nodeutil.ProviderConfig) (nodeutil.Provider, nodeutilNodeProvider, error) { return a, nil, nil },
		nodeutil.WithClient(a.client),
		nodeutil.WithTLSConfig(nodeutil.WithKeyPairFromPath(cfg.ServingCert, cfg.ServingKey), nodeutil.WithCAFromPath(cfg.ClientCA)),
		nodeutil.AttachProviderRoutes(mux),
		func(nc *nodeutil.NodeConfig) error {
			nc.HTTPListenAddr = net.JoinHostPort(cfg.NodeIP, strconv.Itoa(cfg.Port))
			nc.Handler = mux
			nc.SkipDownwardAPIResolution = true // env is resolved here (status.podIP is known)
			nc.NumWorkers = 4
			a.describeNode(&nc.NodeSpec)
			return nil
		},
	)
	if err != nil {
		return fmt.Errorf("node agent %s: %w", cfg.NodeName, err)
	}
	go func() { _ = node.Run(ctx) }()
	if err := node.WaitReady(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("node agent %s: not ready: %w", cfg.NodeName, err)
	}
	klog.Infof("node %s ready at %s", cfg.NodeName, cfg.NodeIP)
	go a.resyncStatuses(ctx, statusResyncInterval)
	select {
	case <-ctx.Done():
	case <-node.Done():
		if err := node.Err(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("node agent %s: %w", cfg.NodeName, err)
		}
	}
	return nil
}

func newAgent(cfg Config) (*Agent, error) {
	images, err := NewImageMap(cfg.Images)
	if err != nil {
		return nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("node agent: kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 50, 100
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, images: images, client: client, pods: map[string]*podRunner{}}
	for _, t := range []struct {
		name string
		dst  *string
	}{{"unshare", &a.unshare}, {"nsenter", &a.nsenter}} {
		p, err := exec.LookPath(t.name)
		if err != nil {
			return nil, fmt.Errorf("node agent: %s (util-linux) not found: %w", t.name, err)
		}
		*t.dst = p
	}
	if cfg.CgroupDir != "" {
		cg := &Cgroup{Path: filepath.Join(cfg.CgroupDir, "pods")}
		// Pods of a previous agent of this node: kubelet restarts them too.
		if err := cg.Remove(10 * time.Second); err != nil {
			return nil, err
		}
		if _, err := NewCgroup(cg.Path); err != nil {
			return nil, err
		}
		a.podsCgroup = cg.Path
	}
	a.capacity = nodeCapacity(cfg.NodeDir)
	return a, nil
}

// describeNode fills the Node object the agent registers.
func (a *Agent) describeNode(n *corev1.Node) {
	labels := map[string]string{
		"kubernetes.io/hostname": a.cfg.NodeName,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     runtime.GOARCH,
		"node.longhorn.io/local": "true",
	}
	for k, v := range a.cfg.Labels {
		labels[k] = v
	}
	n.Labels = labels
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: a.cfg.NodeIP},
		{Type: corev1.NodeHostName, Address: a.cfg.NodeName},
	}
	n.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "starting"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated", Message: "node netns on the cluster bridge"},
	}
	n.Status.Capacity = a.capacity
	n.Status.Allocatable = a.capacity
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(a.cfg.Port)
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		KubeletVersion:          a.cfg.KubeletVersion,
		OperatingSystem:         "linux",
		Architecture:            runtime.GOARCH,
		KernelVersion:           unix.ByteSliceToString(uts.Release[:]),
		OSImage:                 "longhorn local cluster node",
		ContainerRuntimeVersion: "lhcluster://1",
		MachineID:               a.cfg.NodeName,
		SystemUUID:              a.cfg.NodeName,
		BootID:                  strconv.FormatInt(time.Now().UnixNano(), 36),
	}
}

// nodeCapacity reports the machine's CPUs and memory, 110 pods and the
// node directory's filesystem size.
func nodeCapacity(dir string) corev1.ResourceList {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:  *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI),
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(int64(si.Totalram)*int64(si.Unit), resource.BinarySI)
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil {
		rl[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(st.Blocks)*st.Bsize, resource.BinarySI)
	}
	return rl
}

// baseEnv is the environment every container starts from.
func (a *Agent) baseEnv(pod *corev1.Pod) map[string]string {
	host, port := a.cfg.APIServerHost, strconv.Itoa(a.cfg.APIServerPort)
	hostname := pod.Name
	if pod.Spec.HostNetwork {
		hostname = a.cfg.NodeName
	}
	path := strings.Join(append(a.images.Dirs(), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"), ":")
	return map[string]string{
		"PATH":                          path,
		"HOME":                          "/root",
		"HOSTNAME":                      hostname,
		"KUBERNETES_SERVICE_HOST":       host,
		"KUBERNETES_SERVICE_PORT":       port,
		"KUBERNETES_SERVICE_PORT_HTTPS": port,
		"KUBERNETES_PORT":               "tcp://" + net.JoinHostPort(host, port),
	}
}

func (a *Agent) podContext() podContext {
	return podContext{PodIP: a.cfg.NodeIP, Capacity: a.capacity}
}

func (a *Agent) volumeEnv() volumeEnv {
	return volumeEnv{objects: a, pc: a.podContext(), tokens: apiTokens{create: a.createToken}}
}

func (a *Agent) createToken(ctx context.Context, ns, sa string, tr *authTokenRequest) (*authTokenRequest, error) {
	return a.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
}

// ConfigMap implements objectSource with a direct read (fresh data).
func (a *Agent) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

// Secret implements objectSource with a direct read.
func (a *Agent) Secret(ns, name string) (*corev1.Secret, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

// statusResyncInterval is how often every pod's status is reported again
// (kubelet's status manager syncs every 10 s).
const statusResyncInterval = 10 * time.Second

// resyncStatuses reports every pod's status again each interval until ctx
// ends. virtual-kubelet writes it only when it differs from the API
// server's copy, which is the case after someone else changed it: the node
// lifecycle controller marks every pod of a node that was NotReady (its
// link cut, say) Ready=False, and without a resync the pods would stay so
// after the node is back.
func (a *Agent) resyncStatuses(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		for _, r := range a.pods {
			r.notify()
		}
		a.mu.Unlock()
	}
}

func (a *Agent) notifyPod(p *corev1.Pod) {
	a.mu.Lock()
	cb := a.notify
	a.mu.Unlock()
	if cb != nil {
		cb(p)
	}
}

// killPods stops every pod at agent exit (as a node shutdown would).
func (a *Agent) killPods() {
	a.mu.Lock()
	runners := make([]*podRunner, 0, len(a.pods))
	for _, r := range a.pods {
		runners = append(runners, r)
	}
	a.mu.Unlock()
	for _, r := range runners {
		r.stop(0)
	}
	for _, r := range runners {
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
		}
	}
	if a.podsCgroup != "" {
		_ = (&Cgroup{Path: a.podsCgroup}).Kill(10 * time.Second)
	}
}

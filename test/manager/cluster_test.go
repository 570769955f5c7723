// Package manager_test runs three `longhorn manager` processes against a
// real kube-apiserver and etcd (testbed/testenv) as three nodes, with their
// instance managers as real local processes.
//
// Simulated nodes: node i (1..3) is the loopback address 127.R.S.i (R and S
// random per run, so parallel tests on this machine do not collide); its
// manager serves its webhook there and its instance manager listens there,
// as a pod IP would. Each node's disk is its own temporary directory, set in
// the Longhorn Node object the test creates before the managers start. The
// test plays kubelet: it runs each instance-manager Pod's command (with
// $(POD_IP) expanded), reports the Pod Running with its IP, and kills the
// process group when the Pod is deleted. Manager liveness is the managers'
// own Lease; Kubernetes Nodes are created Ready and stay so. The API server
// reaches the admission webhook at n1's address (--webhook-url): an
// EndpointSlice behind the Service longhorn-admission-webhook may not hold
// loopback addresses, and n1 is never the node the test kills.
package manager_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/engine/frontend/blockdev"
	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
	"github.com/longhorn-go/longhorn/internal/testutil"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/testbed/testenv"
)

const (
	ns    = "longhorn-system"
	image = "longhorn:test"
)

var env *testenv.Env

// envUsed: a cluster ran on the shared control plane (env) and left its
// objects there (webhook configurations, nodes, instance managers); the
// next cluster gets a control plane of its own (freshEnv).
var envUsed bool

// freshEnv makes env a new control plane for this test when a previous
// cluster used the shared one, and puts the shared one back at cleanup
// (tests of this package run one at a time).
func freshEnv(t *testing.T) {
	if !envUsed {
		envUsed = true
		return
	}
	shared := env
	fresh, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatalf("control plane: %v", err)
	}
	env = fresh
	t.Cleanup(func() {
		env = shared
		if err := fresh.Stop(); err != nil {
			t.Errorf("control plane stop: %v", err)
		}
	})
}

func TestMain(m *testing.M) {
	code := testenv.Run(m, testenv.Options{}, &env)
	// Instance managers killed by the tests leave their (empty) process
	// cgroup directories in the host's cgroups.
	if l, err := cgroup.DetectHostLayout(); err == nil {
		cgroup.SweepStale(l)
	}
	os.Exit(code)
}

// cluster is the three simulated nodes.
type cluster struct {
	t      *testing.T
	ctx    context.Context
	kube   kubernetes.Interface
	lh     versioned.Interface
	binary string
	dir    string
	nodes  []*simNode
	// managerEnv is added to the managers' environment (startManager).
	managerEnv []string
	// image is the managers' --engine-image and --instance-manager-image
	// ("" = the package's image); a new value is an upgrade to a new build.
	image string
}

type simNode struct {
	name    string
	ip      string
	diskDir string
	manager *exec.Cmd
	log     string
}

// pickIPs finds a 127.R.S.0/24 whose .1-.3 have the manager and instance
// manager ports free.
func pickIPs(t *testing.T) []string {
	ports := []string{"8500", "8501", "9500", "9501", "9502"}
	for range 20 {
		base := fmt.Sprintf("127.%d.%d.", 100+rand.IntN(150), rand.IntN(250))
		ips := []string{base + "1", base + "2", base + "3"}
		free := true
		for _, ip := range ips {
			for _, p := range ports {
				l, err := net.Listen("tcp", net.JoinHostPort(ip, p))
				if err != nil {
					free = false
					break
				}
				_ = l.Close()
			}
		}
		if free {
			return ips
		}
	}
	t.Fatal("no free loopback /24 for the simulated nodes")
	return nil
}

// newCluster starts the three nodes; managerEnv is added to the managers'
// environment.
func newCluster(t *testing.T, managerEnv ...string) *cluster {
	t.Helper()
	env.Require(t)
	testutil.RequireTool(t, "qemu-io")
	freshEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := &cluster{t: t, ctx: ctx, binary: testutil.LonghornBinary(t), dir: t.TempDir(), managerEnv: managerEnv}
	if d := os.Getenv("LONGHORN_MANAGER_TEST_DIR"); d != "" {
		// Keep logs and disks for debugging.
		c.dir = d
		_ = os.RemoveAll(d)
		_ = os.MkdirAll(d, 0o755)
	}
	var err error
	if c.kube, err = kubernetes.NewForConfig(env.Config); err != nil {
		t.Fatal(err)
	}
	if c.lh, err = versioned.NewForConfig(env.Config); err != nil {
		t.Fatal(err)
	}
	for i, ip := range pickIPs(t) {
		name := fmt.Sprintf("n%d", i+1)
		n := &simNode{name: name, ip: ip, diskDir: filepath.Join(c.dir, name, "disk")}
		c.nodes = append(c.nodes, n)
	}
	c.setupObjects()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.kubelet() }()
	for _, n := range c.nodes {
		c.startManager(n)
	}
	t.Cleanup(func() {
		vols := c.volumeNames()
		for _, n := range c.nodes {
			c.stopManager(n)
		}
		cancel()
		wg.Wait()
		c.releaseBlockdevs(vols)
		c.dumpLogsOnFailure()
	})
	c.waitInstanceManagersRunning()
	return c
}

// volumeNames lists the cluster's volumes (none when the API cannot say).
func (c *cluster) volumeNames() []string {
	l, err := c.lh.LonghornV1beta2().Volumes(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(l.Items))
	for _, v := range l.Items {
		out = append(out, v.Name)
	}
	return out
}

// releaseBlockdevs removes the loop devices and device nodes that engines
// with frontend blockdev left: a volume still attached when the cluster
// stops (a failed subtest never detaches it) has its engine killed with its
// instance manager, so no exit hook cleans up. Each node's pods keep their
// device nodes and owner records in the node's own directories (see
// startPodProcess), and blockdev.Cleanup only touches what the volume's
// owner record names, so nothing of another run on this machine is touched.
func (c *cluster) releaseBlockdevs(vols []string) {
	for _, n := range c.nodes {
		cfg := blockdev.Config{DevDir: c.nodeDevDir(n), FuseDir: filepath.Join(c.nodeRunDir(n), "blockdev")}
		for _, v := range vols {
			if err := blockdev.Cleanup(cfg, v); err != nil {
				c.t.Errorf("cleanup: blockdev of %s on %s: %v", v, n.name, err)
			}
		}
	}
}

func (c *cluster) must(err error) {
	c.t.Helper()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatal(err)
	}
}

// setupObjects creates the namespace, service account, Kubernetes nodes,
// the Longhorn nodes with one disk each, and the webhook Service.
func (c *cluster) setupObjects() {
	ctx := c.ctx
	_, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	c.must(err)
	_, err = c.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-service-account"}}, metav1.CreateOptions{})
	c.must(err)
	for _, n := range c.nodes {
		kn, err := c.kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name,
			Labels: map[string]string{"kubernetes.io/hostname": n.name}}}, metav1.CreateOptions{})
		c.must(err)
		if err == nil {
			kn.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now(), Reason: "KubeletReady"}}
			kn.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}}
			_, err = c.kube.CoreV1().Nodes().UpdateStatus(ctx, kn, metav1.UpdateOptions{})
			c.must(err)
		}
		c.must(os.MkdirAll(n.diskDir, 0o755))
		_, err = c.lh.LonghornV1beta2().Nodes(ns).Create(ctx, &longhorn.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: ns},
			Spec: longhorn.NodeSpec{Name: n.name, AllowScheduling: true, Tags: []string{},
				Disks: map[string]longhorn.DiskSpec{"disk-1": {Type: longhorn.DiskTypeFilesystem, Path: n.diskDir, AllowScheduling: true, Tags: []string{}}}},
		}, metav1.CreateOptions{})
		c.must(err)
	}
	// The machine's shared disk is often more than 75 % used, which the
	// default minimal-available percentage (25) treats as disk pressure.
	_, err = c.lh.LonghornV1beta2().Settings(ns).Create(ctx, &longhorn.Setting{
		ObjectMeta: metav1.ObjectMeta{Name: "storage-minimal-available-percentage", Namespace: ns}, Value: "5"}, metav1.CreateOptions{})
	c.must(err)
}

// startManager runs `longhorn manager` for node n.
func (c *cluster) startManager(n *simNode) {
	n.log = filepath.Join(c.dir, n.name+"-manager.log")
	f, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	c.must(err)
	img := c.image
	if img == "" {
		img = image
	}
	cmd := exec.Command(c.binary, "--log-level", "debug", "manager", "--kubeconfig", env.KubeconfigPath, "--node-name", n.name,
		"--namespace", ns, "--pod-ip", n.ip, "--engine-image", img, "--instance-manager-image", img, "--workers", "3",
		"--webhook-url", "https://"+net.JoinHostPort(c.nodes[0].ip, "9502"))
	cmd.Stdout, cmd.Stderr = f, f
	// the node's /dev/longhorn (startPodProcess), where trimFilesystem
	// finds the volume's device
	cmd.Env = append(append(os.Environ(), c.managerEnv...), "LONGHORN_BLOCKDEV_DEV_DIR="+c.nodeDevDir(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.must(cmd.Start())
	_ = f.Close()
	n.manager = cmd
}

// stopManager sends SIGTERM (graceful shutdown) and waits up to 20 s.
func (c *cluster) stopManager(n *simNode) {
	if n.manager == nil {
		return
	}
	_ = n.manager.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- n.manager.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-n.manager.Process.Pid, syscall.SIGKILL)
		<-done
		c.t.Errorf("manager %s did not stop within 20 s of SIGTERM", n.name)
	}
	n.manager = nil
}

// killManager kills node n's manager process with SIGKILL.
func (c *cluster) killManager(n *simNode) {
	_ = syscall.Kill(-n.manager.Process.Pid, syscall.SIGKILL)
	_ = n.manager.Wait()
	n.manager = nil
}

func (c *cluster) dumpLogsOnFailure() {
	if !c.t.Failed() {
		return
	}
	for _, n := range c.nodes {
		c.t.Logf("--- %s manager log (tail)\n%s", n.name, tailFile(n.log, 60))
	}
	pods, _ := filepath.Glob(filepath.Join(c.dir, "instance-manager-*.log"))
	for _, p := range pods {
		c.t.Logf("--- %s (tail)\n%s", filepath.Base(p), tailFile(p, 20))
	}
}

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func (c *cluster) node(name string) *simNode {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	c.t.Fatalf("no node %s", name)
	return nil
}

// eventually polls cond every 200 ms until it holds or timeout passes, and
// returns how long it took.
func (c *cluster) eventually(what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	c.t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < timeout {
		ok, msg := cond()
		if ok {
			return time.Since(start)
		}
		last = msg
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("%s: not reached within %v (last: %s)", what, timeout, last)
	return 0
}

func (c *cluster) waitInstanceManagersRunning() {
	c.eventually("three instance managers running", 120*time.Second, func() (bool, string) {
		ims, err := c.lh.LonghornV1beta2().InstanceManagers(ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		var states []string
		for _, im := range ims.Items {
			states = append(states, im.Spec.NodeID+"="+string(im.Status.CurrentState))
			if im.Status.CurrentState == longhorn.InstanceManagerStateRunning {
				running++
			}
		}
		return running == 3, strings.Join(states, " ")
	})
}

// Package csi_test runs the CSI driver against a real manager: a real
// kube-apiserver and etcd (testbed/testenv), one `longhorn manager` process
// as the node n1 (a random 127.R.S.1 loopback address), its instance
// manager as a real local process (this test plays kubelet for that pod),
// and engines whose blockdev frontend makes real loop devices over FUSE
// files. The device nodes go to the test's own directory
// (LONGHORN_BLOCKDEV_DEV_DIR), so parallel runs never share /dev/longhorn.
package csi_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/internal/testutil"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/testbed/testenv"
	"github.com/longhorn-go/longhorn/webhook"
)

const (
	ns    = "longhorn-system"
	image = "longhorn:test"
)

// nodeSeq numbers the simulated nodes: each test gets a fresh node (n1,
// n2, ...) so that one test's leftovers never meet the next one's manager.
var nodeSeq atomic.Int32

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}

// node is the one simulated node: a manager process and its instance manager.
type node struct {
	t       *testing.T
	ctx     context.Context
	kube    kubernetes.Interface
	lh      versioned.Interface
	binary  string
	dir     string
	ip      string
	name    string
	devDir  string
	manager *exec.Cmd
}

// pickIP finds a 127.R.S.1 whose manager and instance manager ports are free.
func pickIP(t *testing.T) string {
	for range 20 {
		ip := fmt.Sprintf("127.%d.%d.1", 100+rand.IntN(150), rand.IntN(250))
		free := true
		for _, p := range []string{"8500", "8501", "9500", "9501", "9502"} {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, p))
			if err != nil {
				free = false
				break
			}
			_ = l.Close()
		}
		if free {
			return ip
		}
	}
	t.Fatal("no free loopback address for the simulated node")
	return ""
}

// requireRoot: the node side makes loop devices, FUSE mounts and file systems.
func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireTool(t, "mkfs.ext4")
	if os.Geteuid() != 0 {
		if testutil.ToolsRequired() {
			t.Fatal("the CSI tests make loop devices and mounts: run them as root")
		}
		t.Skip("needs root")
	}
}

func newNode(t *testing.T) *node {
	t.Helper()
	env.Require(t)
	requireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{t: t, ctx: ctx, binary: testutil.LonghornBinary(t), dir: t.TempDir(), ip: pickIP(t),
		name: fmt.Sprintf("n%d", nodeSeq.Add(1))}
	n.devDir = filepath.Join(n.dir, "dev")
	var err error
	if n.kube, err = kubernetes.NewForConfig(env.Config); err != nil {
		t.Fatal(err)
	}
	if n.lh, err = versioned.NewForConfig(env.Config); err != nil {
		t.Fatal(err)
	}
	n.setupObjects()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); n.kubelet() }()
	n.startManager()
	t.Cleanup(func() {
		n.stopManager()
		// The stopped manager's webhook configurations point at its
		// address; the next test's manager makes its own.
		bg := context.Background()
		_ = n.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(bg, webhook.ValidatorConfigName, metav1.DeleteOptions{})
		_ = n.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(bg, webhook.MutatorConfigName, metav1.DeleteOptions{})
		cancel()
		wg.Wait()
		if t.Failed() {
			for _, f := range []string{"manager.log", "instance-manager.log"} {
				t.Logf("--- %s (tail)\n%s", f, tailFile(filepath.Join(n.dir, f), 40))
			}
		}
	})
	n.eventually("instance manager running", 120*time.Second, func() (bool, string) {
		ims, err := n.lh.LonghornV1beta2().InstanceManagers(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, im := range ims.Items {
			if im.Spec.NodeID == n.name {
				return im.Status.CurrentState == longhorn.InstanceManagerStateRunning, string(im.Status.CurrentState)
			}
		}
		return false, "no instance manager of " + n.name
	})
	n.eventually("manager API ready", 60*time.Second, func() (bool, string) {
		resp, err := http.Get(n.managerURL())
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return n
}

func (n *node) must(err error) {
	n.t.Helper()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		n.t.Fatal(err)
	}
}

// setupObjects creates the namespace, service account, the Ready
// Kubernetes node and the Longhorn node with one disk.
func (n *node) setupObjects() {
	ctx := n.ctx
	_, err := n.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	n.must(err)
	_, err = n.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-service-account"}}, metav1.CreateOptions{})
	n.must(err)
	kn, err := n.kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name,
		Labels: map[string]string{"kubernetes.io/hostname": n.name}}}, metav1.CreateOptions{})
	n.must(err)
	kn.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now(), Reason: "KubeletReady"}}
	kn.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}}
	_, err = n.kube.CoreV1().Nodes().UpdateStatus(ctx, kn, metav1.UpdateOptions{})
	n.must(err)
	disk := filepath.Join(n.dir, "disk")
	n.must(os.MkdirAll(disk, 0o755))
	_, err = n.lh.LonghornV1beta2().Nodes(ns).Create(ctx, &longhorn.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: ns},
		Spec: longhorn.NodeSpec{Name: n.name, AllowScheduling: true, Tags: []string{},
			Disks: map[string]longhorn.DiskSpec{"disk-1": {Type: longhorn.DiskTypeFilesystem, Path: disk, AllowScheduling: true, Tags: []string{}}}},
	}, metav1.CreateOptions{})
	n.must(err)
	for name, value := range map[string]string{"storage-minimal-available-percentage": "5", "default-replica-count": "1"} {
		_, err = n.lh.LonghornV1beta2().Settings(ns).Create(ctx, &longhorn.Setting{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Value: value}, metav1.CreateOptions{})
		n.must(err)
	}
}

func (n *node) startManager() {
	f, err := os.OpenFile(filepath.Join(n.dir, "manager.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	n.must(err)
	cmd := exec.Command(n.binary, "--log-level", "debug", "manager", "--kubeconfig", env.KubeconfigPath, "--node-name", n.name,
		"--namespace", ns, "--pod-ip", n.ip, "--engine-image", image, "--instance-manager-image", image, "--workers", "3",
		"--webhook-url", "https://"+net.JoinHostPort(n.ip, "9502"))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	n.must(cmd.Start())
	_ = f.Close()
	n.manager = cmd
}

func (n *node) stopManager() {
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
	}
	n.manager = nil
}

// managerURL is the node's REST API.
func (n *node) managerURL() string { return "http://" + net.JoinHostPort(n.ip, "9500") + "/v1" }

func (n *node) eventually(what string, timeout time.Duration, cond func() (bool, string)) {
	n.t.Helper()
	start, last := time.Now(), ""
	for time.Since(start) < timeout {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(200 * time.Millisecond)
	}
	n.t.Fatalf("%s: not reached within %v (last: %s)", what, timeout, last)
}

func tailFile(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
		if len(out) > lines {
			out = out[1:]
		}
	}
	return strings.Join(out, "\n")
}

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/internal/testutil"
	"github.com/longhorn-go/longhorn/testbed/testenv"
)

// testDaemonSet runs the info-server (lhcluster's test workload) and a
// container of the product image that prints `longhorn --version`, writes
// a file into the node's /var/lib/longhorn and sleeps.
const testDaemonSet = `apiVersion: v1
kind: Namespace
metadata: {name: infra-test}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: greeting, namespace: infra-test}
data: {hello.txt: "hello from a configmap"}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: info, namespace: infra-test}
spec:
  selector: {matchLabels: {app: info}}
  template:
    metadata: {labels: {app: info}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: server
        image: lhcluster/test:1
        command: [lhcluster, info-server, --listen, ":8080"]
        env:
        - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 1}
      - name: version
        image: longhornio/longhorn:test
        command: [sh, -c, 'longhorn --version; cat /etc/greeting/hello.txt; echo; echo "$NODE_NAME" > /var/lib/longhorn/hello-$NODE_NAME; echo "$NODE_NAME" > /var/run/longhorn/hello-$NODE_NAME; exec sleep 100000']
        env:
        - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        volumeMounts:
        - {name: lh, mountPath: /var/lib/longhorn, mountPropagation: Bidirectional}
        - {name: greeting, mountPath: /etc/greeting, readOnly: true}
        securityContext: {privileged: true}
      volumes:
      - {name: lh, hostPath: {path: /var/lib/longhorn, type: DirectoryOrCreate}}
      - {name: greeting, configMap: {name: greeting}}
`

// TestLocalCluster brings up a 2-node cluster (its own name and subnet, so
// it does not meet a user's `make cluster`), runs a DaemonSet on it and
// checks each pod runs in its node's netns with the node's IP and
// /var/lib/longhorn, logs, restarts and re-creation work, then tears it down
// and checks nothing is left.
func TestLocalCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no local cluster")
	}
	if os.Geteuid() != 0 {
		if testutil.ToolsRequired() {
			t.Fatal("the local cluster needs root (netns, mounts, cgroups)")
		}
		t.Skip("not root")
	}
	assets, err := testenv.Assets("kube-controller-manager", "kube-scheduler")
	if err != nil {
		if testutil.ToolsRequired() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	// Every worktree's `make test` runs this test with the same name and
	// subnet: take turns through a machine-wide lock.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "lhcluster-test.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	root := testutil.ModuleRoot(t)
	bin := t.TempDir()
	agent := filepath.Join(bin, "lhcluster")
	if out, err := exec.Command("go", "build", "-o", agent, filepath.Join(root, "hack", "cluster")).CombinedOutput(); err != nil {
		t.Fatalf("building lhcluster: %v\n%s", err, out)
	}
	c := Config{
		Name: "lhtest", Nodes: 2, StateDir: t.TempDir(), AssetsDir: assets, AgentBinary: agent, NodeMode: NodeModeAgent,
		Subnet: netip.MustParsePrefix("10.99.8.0/24"), ServiceCIDR: netip.MustParsePrefix("10.99.9.0/24"),
		Images: map[string]string{"longhornio/longhorn:*": testutil.LonghornBinary(t), "lhcluster/test:*": agent},
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	logf := func(format string, args ...any) { t.Logf(format, args...) }
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t0 := time.Now()
	st, err := Up(ctx, c, logf)
	defer func() {
		t1 := time.Now()
		if err := Down(c, logf); err != nil {
			t.Errorf("Down: %v", err)
		}
		t.Logf("down in %.1fs", time.Since(t1).Seconds())
		checkNothingLeft(t, &c)
	}()
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("up in %.1fs", time.Since(t0).Seconds())
	// Re-running up on a running cluster keeps it.
	if st2, err := Up(ctx, c, logf); err != nil || st2.Procs[compAPIServer].PID != st.Procs[compAPIServer].PID {
		t.Fatalf("second Up: %v (apiserver pid %d -> %d)", err, st.Procs[compAPIServer].PID, st2.Procs[compAPIServer].PID)
	}
	manifest := filepath.Join(t.TempDir(), "ds.yaml")
	if err := os.WriteFile(manifest, []byte(testDaemonSet), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ApplyManifest(ctx, &c, manifest, 3*time.Minute, logf); err != nil {
		dumpLogs(t, &c)
		t.Fatal(err)
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	pods := daemonPods(ctx, t, cs, c.Nodes)
	for i := 1; i <= c.Nodes; i++ {
		checkPod(ctx, t, &c, i, pods[c.NodeName(i)])
	}
	checkRestart(ctx, t, &c, cs, pods[c.NodeName(1)])
	checkRecreate(ctx, t, cs, pods[c.NodeName(2)])
}

func podsByNode(ctx context.Context, t *testing.T, cs kubernetes.Interface) map[string]corev1.Pod {
	t.Helper()
	pl, err := cs.CoreV1().Pods("infra-test").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]corev1.Pod{}
	for _, p := range pl.Items {
		if p.DeletionTimestamp == nil {
			m[p.Spec.NodeName] = p
		}
	}
	return m
}

// daemonPods waits until there are n live, Ready info pods and returns them by node.
func daemonPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, n int) map[string]corev1.Pod {
	t.Helper()
	var m map[string]corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		m = podsByNode(ctx, t, cs)
		if len(m) < n {
			return false, nil
		}
		for _, p := range m {
			if !podReady(&p) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("info pods not Ready: %v (%d pods)", err, len(m))
	}
	return m
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkPod: pod IP is the node IP, the server answers on it from the root
// namespace with the node's netns and its own mount namespace, the product
// binary ran, the configmap volume and token were mounted, and the file it
// wrote is in that node's directory only.
func checkPod(ctx context.Context, t *testing.T, c *Config, i int, p corev1.Pod) {
	t.Helper()
	if p.Status.PodIP != c.NodeIP(i).String() || p.Status.HostIP != c.NodeIP(i).String() {
		t.Errorf("%s: podIP %s hostIP %s, want %s", p.Name, p.Status.PodIP, p.Status.HostIP, c.NodeIP(i))
	}
	if err := CheckRoutes(c); err != nil {
		t.Fatal(err)
	}
	info := getInfo(t, c.NodeIP(i).String())
	var st syscall.Stat_t
	if err := syscall.Stat("/run/netns/"+c.Netns(i), &st); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("net:[%d]", st.Ino); info["netns"] != want {
		t.Errorf("%s: pod netns %s, want %s (node %s)", p.Name, info["netns"], want, c.Netns(i))
	}
	if self, _ := os.Readlink("/proc/self/ns/mnt"); info["mntns"] == self {
		t.Errorf("%s: pod runs in the host mount namespace", p.Name)
	}
	if info["node"] != c.NodeName(i) || info["podIP"] != c.NodeIP(i).String() || info["tokenBytes"] == "0" {
		t.Errorf("%s: info %v: want node %s, podIP %s and a service-account token", p.Name, info, c.NodeName(i), c.NodeIP(i))
	}
	out, err := c.Kubectl(ctx, "-n", "infra-test", "logs", p.Name, "-c", "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello from a configmap") || len(strings.TrimSpace(string(out))) < len("hello from a configmap")+5 {
		t.Errorf("%s: kubectl logs -c version: %v\n%s", p.Name, err, out)
	}
	hello := filepath.Join(c.NodeDir(i), "longhorn", "hello-"+c.NodeName(i))
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(hello)
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("%s: %s not written through the node's /var/lib/longhorn", p.Name, hello)
	}
	if _, err := os.Stat("/var/lib/longhorn/hello-" + c.NodeName(i)); err == nil {
		t.Errorf("%s: the pod wrote into the host's /var/lib/longhorn", p.Name)
	}
	if _, err := os.Stat(filepath.Join(c.NodeDir(i), "run-longhorn", "hello-"+c.NodeName(i))); err != nil {
		t.Errorf("%s: not written through the node's /var/run/longhorn: %v", p.Name, err)
	}
	if _, err := os.Stat("/var/run/longhorn/hello-" + c.NodeName(i)); err == nil {
		t.Errorf("%s: the pod wrote into the host's /var/run/longhorn", p.Name)
	}
}

func getInfo(t *testing.T, ip string) map[string]string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ip + ":8080/")
	if err != nil {
		t.Fatalf("GET info-server on %s: %v", ip, err)
	}
	defer resp.Body.Close()
	var m map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkRestart makes the server exit 3: the container restarts, the pod
// reports restartCount 1 with the exit code, and --previous logs work.
func checkRestart(ctx context.Context, t *testing.T, c *Config, cs kubernetes.Interface, p corev1.Pod) {
	t.Helper()
	ip := p.Status.PodIP
	if resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + ip + ":8080/exit?code=3"); err == nil {
		resp.Body.Close()
	}
	err := wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cur, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, s := range cur.Status.ContainerStatuses {
			if s.Name == "server" && s.RestartCount == 1 && s.Ready && s.LastTerminationState.Terminated != nil {
				return s.LastTerminationState.Terminated.ExitCode == 3, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("server container did not restart after exit 3: %v", err)
	}
	out, err := c.Kubectl(ctx, "-n", p.Namespace, "logs", p.Name, "-c", "server", "--previous").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "exiting with 3") {
		t.Errorf("kubectl logs --previous: %v\n%s", err, out)
	}
}

// checkRecreate deletes a pod: its processes end and the DaemonSet's new
// pod runs on the same node.
func checkRecreate(ctx context.Context, t *testing.T, cs kubernetes.Interface, p corev1.Pod) {
	t.Helper()
	if err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		np, ok := podsByNode(ctx, t, cs)[p.Spec.NodeName]
		return ok && np.UID != p.UID && podReady(&np), nil
	})
	if err != nil {
		t.Fatalf("pod %s on %s not replaced: %v", p.Name, p.Spec.NodeName, err)
	}
}

// checkNothingLeft: no netns, bridge, cgroup processes or mounts remain.
func checkNothingLeft(t *testing.T, c *Config) {
	t.Helper()
	for i := 1; i <= c.Nodes; i++ {
		if netnsExists(c.Netns(i)) {
			t.Errorf("netns %s left", c.Netns(i))
		}
	}
	if linkExists(c.Bridge()) {
		t.Errorf("bridge %s left", c.Bridge())
	}
	if cg := clusterCgroup(c); cg != nil && exists(cg.Path) {
		t.Errorf("cgroup %s left", cg.Path)
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(b), c.StateDir) {
		t.Errorf("mounts under %s left", c.StateDir)
	}
}

func dumpLogs(t *testing.T, c *Config) {
	ents, _ := os.ReadDir(filepath.Join(c.StateDir, "logs"))
	for _, e := range ents {
		t.Logf("--- %s\n%s", e.Name(), tailFile(filepath.Join(c.StateDir, "logs", e.Name()), 30))
	}
}

package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/internal/procstat"
)

var env *Env

// childEnv makes the test binary act as a child that starts an Env, prints
// its processes and waits to be killed (TestParentDeathKillsControlPlane).
const childEnv = "TESTENV_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(m.Run())
	}
	os.Exit(Run(m, Options{}, &env))
}

func TestAssetsErrors(t *testing.T) {
	t.Setenv(AssetsEnv, "")
	if _, err := Start(Options{}); !errors.Is(err, ErrNoAssets) || !strings.Contains(err.Error(), AssetsEnv) {
		t.Fatalf("Start without %s: got %v, want ErrNoAssets naming the variable", AssetsEnv, err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "etcd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(AssetsEnv, dir)
	_, err := Start(Options{})
	if !errors.Is(err, ErrNoAssets) || !strings.Contains(err.Error(), "kube-apiserver, kubectl") {
		t.Fatalf("Start with incomplete assets: got %v, want ErrNoAssets naming kube-apiserver, kubectl", err)
	}
}

func TestClientGoAndKubectl(t *testing.T) {
	env.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "testenv-smoke"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm1"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	got, err := cs.CoreV1().ConfigMaps(ns.Name).Get(ctx, "cm1", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("get configmap: %v %v", got, err)
	}
	out, err := env.KubectlCmd("get", "ns", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get ns: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "namespace/testenv-smoke") || !strings.Contains(string(out), "namespace/default") {
		t.Fatalf("kubectl get ns lacks testenv-smoke/default:\n%s", out)
	}
	out, err = env.KubectlCmd("-n", ns.Name, "get", "configmap", "cm1", "-o", "jsonpath={.data.k}").CombinedOutput()
	if err != nil || string(out) != "v" {
		t.Fatalf("kubectl get configmap: %v %q", err, out)
	}
	out, err = env.KubectlCmd("version", "-o", "json").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"gitVersion": "v1.37.2"`) {
		t.Fatalf("kubectl version: want client and server v1.37.2: %v\n%s", err, out)
	}
}

// TestControllers proves kube-controller-manager (a new namespace gets its
// default ServiceAccount) and kube-scheduler (an unschedulable pod gets a
// PodScheduled=False condition) run against the Env.
func TestControllers(t *testing.T) {
	env.Require(t)
	if err := env.StartControllers(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "testenv-ctrl"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kube-controller-manager: no default ServiceAccount in %s: %v", ns.Name, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns.Name).Get(ctx, "p1", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("kube-scheduler: pod never marked Unschedulable (no nodes): %v", err)
	}
	// Namespace deletion needs the namespace controller (KCM).
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace %s never finalized: %v", ns.Name, err)
	}
}

const testCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.testenv.example.com
spec:
  group: testenv.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// TestSecondEnvCRDsAndCleanup starts a second Env with a CRD directory and a
// missing one, uses the CRD through kubectl, stops it and checks that no
// process it started is left and its scratch directory is gone.
func TestSecondEnvCRDsAndCleanup(t *testing.T) {
	env.Require(t)
	crdDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(crdDir, "widget.yaml"), []byte(testCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	before := childPIDs(t)
	e2, err := Start(Options{CRDDirectoryPaths: []string{crdDir, filepath.Join(crdDir, "does-not-exist")}})
	if err != nil {
		t.Fatal(err)
	}
	started := newPIDs(before, childPIDs(t))
	if len(started) < 2 {
		e2.Stop()
		t.Fatalf("expected etcd and kube-apiserver as children, found new pids %v", started)
	}
	out, err := e2.KubectlCmd("get", "widgets", "-A").CombinedOutput()
	if err != nil {
		e2.Stop()
		t.Fatalf("kubectl get widgets (CRD from dir): %v\n%s", err, out)
	}
	if err := e2.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e2.Dir); !os.IsNotExist(err) {
		t.Errorf("scratch dir %s still exists after Stop", e2.Dir)
	}
	if alive := alivePIDs(started); len(alive) > 0 {
		t.Errorf("processes left after Stop: %v", alive)
	}
	if err := e2.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestParentDeathKillsControlPlane kills (SIGKILL) a child test process that
// holds an Env and checks etcd and kube-apiserver die with it.
func TestParentDeathKillsControlPlane(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		runChild(t)
		return
	}
	env.Require(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestParentDeathKillsControlPlane$", "-test.timeout=3m")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	var dir string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "PIDS "); ok {
			for _, f := range strings.Fields(rest) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "DIR "); ok {
			dir = rest
			break
		}
	}
	if len(pids) < 2 {
		t.Fatalf("child reported pids %v, want etcd and kube-apiserver", pids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	defer os.RemoveAll(dir) // the killed child could not clean its scratch dir
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(alivePIDs(pids)) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	if alive := alivePIDs(pids); len(alive) > 0 {
		for _, p := range alive {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("control-plane processes %v outlived their parent", alive)
	}
}

func runChild(t *testing.T) {
	e, err := Start(Options{CRDDirectoryPaths: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	pids := childPIDs(t)
	fmt.Print("PIDS")
	for p := range pids {
		fmt.Printf(" %d", p)
	}
	fmt.Printf("\nDIR %s\n", e.Dir)
	time.Sleep(2 * time.Minute) // the parent kills us
}

// childPIDs lists the live (non-zombie) direct children of this process.
func childPIDs(t *testing.T) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	out := map[int]bool{}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if st, err := procstat.Read(pid); err == nil && st.PPID == me && st.State != "Z" {
			out[pid] = true
		}
	}
	return out
}

func newPIDs(before, after map[int]bool) []int {
	var out []int
	for p := range after {
		if !before[p] {
			out = append(out, p)
		}
	}
	return out
}

// alivePIDs returns the pids that still exist and are not zombies.
func alivePIDs(pids []int) []int {
	var out []int
	for _, p := range pids {
		if procstat.Alive(p) {
			out = append(out, p)
		}
	}
	return out
}

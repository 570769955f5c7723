package manager_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/testenv"
)

// testUninstall is the last step of the cluster's life: `longhorn uninstall`
// refuses while deleting-confirmation-flag is false and removes nothing;
// once it is true it removes a volume with replica data on two nodes, the
// managers (a simulated longhorn-manager DaemonSet: its deletion stops the
// manager processes and deletes their pods), the webhooks, every longhorn.io
// object and CRD, and the replicas' data directories. The CRDs are installed
// again afterwards for any later test.
func testUninstall(t *testing.T, c *cluster) {
	ext, err := apiext.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := env.KubectlCmd("apply", "-f", testenv.DefaultCRDDir()).CombinedOutput(); err != nil {
			t.Errorf("reinstall the CRDs: %v\n%s", err, out)
		}
	})
	restartManager(t, c, "n3") // killed by the takeover step: a second node for the replicas
	dirs := uninstallVolume(t, c)
	simulateManagerDaemonSet(t, c)
	run := func() (string, error) {
		out, err := exec.Command(c.binary, "uninstall", "--kubeconfig", env.KubeconfigPath, "--namespace", ns, "--grace", "60s").CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err == nil || !strings.Contains(out, "deleting-confirmation-flag") {
		t.Fatalf("uninstall without confirmation: %v\n%s", err, out)
	}
	if c.volume("uninstall-me") == nil || len(productCRDs(t, ext)) == 0 {
		t.Fatal("the refused uninstall removed something")
	}
	setSetting(t, c, "deleting-confirmation-flag", "true")
	start := time.Now()
	if out, err = run(); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	t.Logf("MEASURE uninstall: %v\n%s", time.Since(start).Round(time.Millisecond), out)
	if left := productCRDs(t, ext); len(left) != 0 {
		t.Errorf("CRDs left: %v", left)
	}
	if _, err := c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(c.ctx, "longhorn-webhook-validator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("validating webhook configuration left (%v)", err)
	}
	if _, err := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(c.ctx, "longhorn-webhook-mutator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("mutating webhook configuration left (%v)", err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("replica directory %s left behind (%v)", d, err)
		}
	}
	if p := c.pids("engine", "uninstall-me"); len(p) != 0 {
		t.Errorf("processes of the volume left: %v", p)
	}
}

// restartManager starts node's manager again if an earlier step killed it
// and waits until its Longhorn node is Ready with its instance manager
// running (the takeover step leaves n3 without a manager, and the node-down
// step leaves n2 without a Kubernetes node: without this only n1 could
// hold a replica).
func restartManager(t *testing.T, c *cluster, node string) {
	n := c.node(node)
	if n.manager == nil {
		c.startManager(n)
	}
	c.eventually("Longhorn node "+node+" Ready with its instance manager running", 120*time.Second, func() (bool, string) {
		ln, err := c.lh.LonghornV1beta2().Nodes(ns).Get(c.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := longhorn.GetCondition(ln.Status.Conditions, longhorn.NodeConditionTypeReady)
		if cond.Status != longhorn.ConditionStatusTrue {
			return false, fmt.Sprintf("%+v", cond)
		}
		ims, err := c.lh.LonghornV1beta2().InstanceManagers(ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, im := range ims.Items {
			if im.Spec.NodeID == node && im.Status.CurrentState == longhorn.InstanceManagerStateRunning {
				return true, ""
			}
		}
		return false, "no running instance manager on " + node
	})
}

// uninstallVolume creates volume uninstall-me with two replicas, attaches
// and detaches it so the replicas have data directories, and returns them.
func uninstallVolume(t *testing.T, c *cluster) []string {
	const vol = "uninstall-me"
	_, err := c.lh.LonghornV1beta2().Volumes(ns).Create(c.ctx, &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: vol},
		Spec: longhorn.VolumeSpec{Size: 16 << 20, NumberOfReplicas: 2, Frontend: longhorn.VolumeFrontendBlockDev}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	c.attach(vol, "n1")
	// Healthy: both replicas running RW, so both have their data directory
	// (attached alone can mean one replica still being placed or rebuilt).
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	var dirs []string
	for _, r := range c.replicasOf(vol) {
		d := filepath.Join(r.Spec.DiskPath, "replicas", r.Spec.DataDirectoryName)
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("replica %s has no data directory: %v", r.Name, err)
		}
		dirs = append(dirs, d)
	}
	if len(dirs) != 2 {
		t.Fatalf("%d replica directories, want 2", len(dirs))
	}
	return dirs
}

// simulateManagerDaemonSet stands in for the DaemonSet controller and the
// kubelet of the managers: a longhorn-manager DaemonSet and one pod per node
// labelled app=longhorn-manager; when the DaemonSet is deleted the manager
// processes are stopped and then their pods deleted.
func simulateManagerDaemonSet(t *testing.T, c *cluster) {
	labels := map[string]string{"app": "longhorn-manager"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "longhorn-manager", Image: image}}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-manager"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
	if _, err := c.kube.AppsV1().DaemonSets(ns).Create(c.ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-manager-" + n.name, Labels: labels}, Spec: spec}
		if _, err := c.kube.CoreV1().Pods(ns).Create(c.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_, err := c.kube.AppsV1().DaemonSets(ns).Get(ctx, "longhorn-manager", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				for _, n := range c.nodes {
					c.stopManager(n)
				}
				zero := int64(0)
				_ = c.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
					metav1.ListOptions{LabelSelector: "app=longhorn-manager"})
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
}

// productCRDs lists the names of the longhorn.io CRDs.
func productCRDs(t *testing.T, ext apiext.Interface) []string {
	list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		if c.Spec.Group == "longhorn.io" {
			out = append(out, c.Name)
		}
	}
	return out
}

// setSetting sets a Setting's value through the API server (and webhook).
func setSetting(t *testing.T, c *cluster, name, value string) {
	s, err := c.lh.LonghornV1beta2().Settings(ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Value = value
	if _, err := c.lh.LonghornV1beta2().Settings(ns).Update(c.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set %s=%s: %v", name, value, err)
	}
}

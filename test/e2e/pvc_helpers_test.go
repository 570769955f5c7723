package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// PVC scenarios (issue 15): workloads in their own namespace use PVCs of
// the chart's StorageClasses; the pods run the product image (the only
// image the nodes hold), whose Debian base has sh, dd and sha256sum.
const (
	pvcNamespace = "csi-e2e"
	// podTimeout bounds a pod's way to Running (provision, attach, stage).
	podTimeout = 3 * time.Minute
	// pvcDataSize is the data set a pod writes and its successors check.
	pvcDataSize = 8 << 20
	// devicePath is where Block PVCs appear inside the pod.
	devicePath = "/dev/xvda"
)

// pvcEnv is a testEnv with the scenario namespace.
type pvcEnv struct {
	*testEnv
	image string
}

// setupPVC creates the namespace (deleted at the end with everything in it,
// which the provisioner turns into deleted Longhorn volumes) and finds the
// product image.
func setupPVC(t *testing.T, timeout time.Duration) *pvcEnv {
	t.Helper()
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	e.ctx = ctx
	kube := e.f.Kube
	ds, err := kube.AppsV1().DaemonSets(lhNamespace).Get(ctx, "longhorn-manager", metav1.GetOptions{})
	e.must(err)
	p := &pvcEnv{testEnv: e, image: ds.Spec.Template.Spec.Containers[0].Image}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pvcNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(p.cleanupNamespace)
	return p
}

// cleanupNamespace deletes the pods and PVCs of the namespace and waits
// until the Longhorn volumes behind them are gone.
func (e *pvcEnv) cleanupNamespace() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube := e.f.Kube
	pvcs, _ := kube.CoreV1().PersistentVolumeClaims(pvcNamespace).List(ctx, metav1.ListOptions{})
	zero := int64(0)
	// VolumeSnapshots, where their CRD is installed (TestPVCVolumeSnapshot).
	_, _ = e.f.Kubectl(ctx, "delete", "volumesnapshot", "--all", "-n", pvcNamespace, "--ignore-not-found", "--timeout=60s")
	_ = kube.AppsV1().StatefulSets(pvcNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = kube.CoreV1().Pods(pvcNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	_ = kube.CoreV1().PersistentVolumeClaims(pvcNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	if pvcs == nil {
		return
	}
	for _, c := range pvcs.Items {
		if c.Spec.VolumeName != "" {
			if err := e.waitVolumeGone(ctx, c.Spec.VolumeName); err != nil {
				e.t.Errorf("cleanup: %v", err)
			}
		}
	}
}

// waitVolumeGone waits until the Longhorn volume and every replica
// directory of it on the nodes' disks are gone.
func (e *pvcEnv) waitVolumeGone(ctx context.Context, vol string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.f.LH.LonghornV1beta2().Volumes(lhNamespace).Get(ctx, vol, metav1.GetOptions{})
		dirs := 0
		for i := 1; i <= e.c.Nodes; i++ {
			dirs += len(e.replicaDirs(i, vol))
		}
		last = fmt.Sprintf("volume: %v; %d replica directories", err, dirs)
		return apierrors.IsNotFound(err) && dirs == 0, nil
	})
	if err != nil {
		return fmt.Errorf("volume %s not gone: %s", vol, last)
	}
	return nil
}

// pvc returns a claim of size bytes in class sc; block selects volumeMode Block.
func pvc(name, sc string, size int64, block bool) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pvcNamespace},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc, Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)}}}}
	if block {
		mode := corev1.PersistentVolumeBlock
		c.Spec.VolumeMode = &mode
	}
	return c
}

func (e *pvcEnv) createPVC(c *corev1.PersistentVolumeClaim) {
	e.t.Helper()
	_, err := e.f.Kube.CoreV1().PersistentVolumeClaims(pvcNamespace).Create(e.ctx, c, metav1.CreateOptions{})
	e.must(err)
}

// podSpec is a pod on node (by the kubernetes.io/hostname label, through
// the scheduler) that mounts claim at /data, or exposes it at devicePath
// when block. It idles until deleted and stops at once on SIGTERM.
func (e *pvcEnv) podSpec(name, claim, node string, block bool) *corev1.Pod {
	grace := int64(5)
	ctr := corev1.Container{Name: "app", Image: e.image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"}}
	if block {
		ctr.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: devicePath}}
	} else {
		ctr.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pvcNamespace, Labels: map[string]string{"app": "csi-e2e"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}, TerminationGracePeriodSeconds: &grace,
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
	if node != "" {
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	}
	return p
}

// runPod creates the pod and waits until it is Running; it returns how long
// that took.
func (e *pvcEnv) runPod(p *corev1.Pod) time.Duration {
	e.t.Helper()
	t0 := time.Now()
	_, err := e.f.Kube.CoreV1().Pods(pvcNamespace).Create(e.ctx, p, metav1.CreateOptions{})
	e.must(err)
	e.waitPodRunning(p.Name)
	return time.Since(t0)
}

func (e *pvcEnv) waitPodRunning(name string) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 250*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := e.f.Kube.CoreV1().Pods(pvcNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%s on %q", p.Status.Phase, p.Spec.NodeName)
		return p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		e.t.Fatalf("pod %s not Running within %v: %s\n%s", name, podTimeout, last, e.podEvents(name))
	}
}

// podEvents lists the events of pod name and of the PVCs (what a user
// reads in `kubectl describe`).
func (e *pvcEnv) podEvents(name string) string {
	evs, err := e.f.Kube.CoreV1().Events(pvcNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Name == name || ev.InvolvedObject.Kind == "PersistentVolumeClaim" {
			lines = append(lines, fmt.Sprintf("%s %s/%s %s: %s", ev.Type, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message))
		}
	}
	return strings.Join(lines, "\n")
}

// deletePodWait deletes the pod and waits until it is gone.
func (e *pvcEnv) deletePodWait(name string) {
	e.t.Helper()
	kube := e.f.Kube.CoreV1().Pods(pvcNamespace)
	e.must(kube.Delete(e.ctx, name, metav1.DeleteOptions{}))
	err := wait.PollUntilContextTimeout(e.ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		e.t.Fatalf("pod %s not gone: %v", name, err)
	}
}

// exec runs a shell command in the pod's container (kubectl exec through
// the API server and the node's kubelet), with stdin when not nil.
func (e *pvcEnv) exec(pod, script string, stdin []byte) string {
	e.t.Helper()
	args := []string{"--kubeconfig", e.f.Kubeconfig, "exec", "-n", pvcNamespace, pod}
	if stdin != nil {
		args = append(args, "-i")
	}
	cmd := exec.CommandContext(e.ctx, e.f.KubectlPath, append(args, "--", "sh", "-c", script)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("exec in %s: %q: %v\n%s%s", pod, script, err, out.String(), errb.String())
	}
	return strings.TrimSpace(out.String())
}

// dataSet returns random bytes and their hex sha256.
func dataSet(n int) ([]byte, string) {
	p := make([]byte, n)
	_, _ = rand.Read(p)
	sum := sha256.Sum256(p)
	return p, hex.EncodeToString(sum[:])
}

// writeFile writes data to /data/<name> in the pod and syncs it.
func (e *pvcEnv) writeFile(pod, name string, data []byte) {
	e.t.Helper()
	e.exec(pod, "cat > /data/"+name+" && sync", data)
}

// checkSum fails unless the sha256 of what script prints in the pod is want.
func (e *pvcEnv) checkSum(pod, script, want, what string) {
	e.t.Helper()
	got := e.exec(pod, script+" | sha256sum", nil)
	if f := strings.Fields(got); len(f) == 0 || f[0] != want {
		e.t.Fatalf("%s in pod %s: sha256 %q, want %s", what, pod, got, want)
	}
}

// fsBytes is the size of the file system at /data in the pod (df).
func (e *pvcEnv) fsBytes(pod string) int64 {
	e.t.Helper()
	out := e.exec(pod, "df -B1 --output=size /data | tail -1", nil)
	n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		e.t.Fatalf("df in %s: %q", pod, out)
	}
	return n
}

// boundVolume waits until the claim is Bound and returns its PV (= Longhorn
// volume) name.
func (e *pvcEnv) boundVolume(claim string) string {
	e.t.Helper()
	var vol, last string
	err := wait.PollUntilContextTimeout(e.ctx, 250*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		c, err := e.f.Kube.CoreV1().PersistentVolumeClaims(pvcNamespace).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		vol, last = c.Spec.VolumeName, string(c.Status.Phase)
		return c.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		e.t.Fatalf("PVC %s not Bound: %s\n%s", claim, last, e.podEvents(claim))
	}
	return vol
}

// otherNode returns a node of the cluster other than node.
func (e *pvcEnv) otherNode(node string, k int) string {
	var others []string
	for i := 1; i <= e.c.Nodes; i++ {
		if n := e.c.NodeName(i); n != node {
			others = append(others, n)
		}
	}
	return others[k%len(others)]
}

// p50 is the median of ds.
func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// timingRuns is how many times the timed paths run (LONGHORN_E2E_TIMINGS,
// default 3; the README's numbers are from 10).
func timingRuns() int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("LONGHORN_E2E_TIMINGS"))); err == nil && n > 0 {
		return n
	}
	return 3
}

// statefulSet is a StatefulSet of n pods like tmpl, each with a claim
// "data" of 64 MiB in class sc mounted at /data.
func statefulSet(name string, n int32, sc string, tmpl *corev1.Pod) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	claim := pvc("data", sc, 64<<20, false)
	claim.Namespace = ""
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pvcNamespace},
		Spec: appsv1.StatefulSetSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*claim}}}
}

// scale sets the StatefulSet's replicas and waits until that many of its
// pods run (none left for 0).
func (e *pvcEnv) scale(name string, n int32) {
	e.t.Helper()
	sets := e.f.Kube.AppsV1().StatefulSets(pvcNamespace)
	// The StatefulSet controller writes the object's status meanwhile: an
	// update from an older read is a conflict, read again and retry.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sets.Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = &n
		_, err = sets.Update(e.ctx, s, metav1.UpdateOptions{})
		return err
	})
	e.must(err)
	var last string
	err = wait.PollUntilContextTimeout(e.ctx, 500*time.Millisecond, podTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := e.f.Kube.CoreV1().Pods(pvcNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		last = fmt.Sprintf("%d pods, %d running", len(pods.Items), running)
		return (n == 0 && len(pods.Items) == 0) || (n > 0 && running == int(n)), nil
	})
	if err != nil {
		e.t.Fatalf("StatefulSet %s scaled to %d: %s", name, n, last)
	}
}

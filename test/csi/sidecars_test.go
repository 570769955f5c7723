package csi_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// sidecarsDir is where make csi-sidecars put the real sidecars
// (LONGHORN_CSI_SIDECARS, set by make test).
func sidecarsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LONGHORN_CSI_SIDECARS")
	if dir == "" || testing.Short() {
		if testutil.ToolsRequired() && !testing.Short() {
			t.Fatal("LONGHORN_CSI_SIDECARS is not set: run make csi-sidecars (make test sets it)")
		}
		t.Skip("LONGHORN_CSI_SIDECARS not set (make csi-sidecars)")
	}
	return dir
}

// startSidecar runs one real sidecar against the test's API server and the
// driver's socket, with Longhorn's flags.
func startSidecar(t *testing.T, n *node, dir, name, sock string, extra ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(n.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--v=2", "--csi-address=" + strings.TrimPrefix(sock, "unix://"), "--kubeconfig=" + env.KubeconfigPath,
		"--timeout=1m50s", "--leader-election=false"}, extra...)
	cmd := exec.Command(filepath.Join(dir, name), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			t.Logf("--- %s (tail)\n%s", name, tailFile(log.Name(), 30))
		}
	})
}

// TestSidecarsProvisionAttachExpand: the real csi-provisioner, csi-attacher
// and csi-resizer (with kube-controller-manager's PV binder and expander)
// turn a PVC of a Longhorn-shaped StorageClass into a bound PV and a
// Longhorn volume, a VolumeAttachment into an attached volume, a PVC size
// edit into a grown volume, and the PVC's deletion into the volume's.
func TestSidecarsProvisionAttachExpand(t *testing.T) {
	dir := sidecarsDir(t)
	n := newNode(t)
	sock := startDriver(t, n)
	if err := env.StartControllerManager("--controllers=persistentvolume-binder-controller,persistentvolume-expander-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller"); err != nil {
		t.Fatal(err)
	}
	startSidecar(t, n, dir, "csi-provisioner", sock, "--immediate-topology=false", "--extra-create-metadata=true", "--default-fstype=ext4")
	startSidecar(t, n, dir, "csi-attacher", sock)
	startSidecar(t, n, dir, "csi-resizer", sock, "--handle-volume-inuse-error=false")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kube := n.kube
	allow := true
	_, err := kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-sidecars"},
		Provisioner: "driver.longhorn.io", AllowVolumeExpansion: &allow,
		Parameters: map[string]string{"numberOfReplicas": "1", "staleReplicaTimeout": "30", "fromBackup": "", "fsType": "ext4"}},
		metav1.CreateOptions{})
	n.must(err)
	sc := "longhorn-sidecars"
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc, Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("64Mi")}}}}
	start := time.Now()
	if _, err := kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pv string
	n.eventually("PVC bound", 2*time.Minute, func() (bool, string) {
		c, err := kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pv = c.Spec.VolumeName
		return c.Status.Phase == corev1.ClaimBound, string(c.Status.Phase)
	})
	t.Logf("PVC create -> Bound in %v (PV %s)", time.Since(start).Round(time.Millisecond), pv)
	if _, err := n.lh.LonghornV1beta2().Volumes(ns).Get(ctx, pv, metav1.GetOptions{}); err != nil {
		t.Fatalf("no Longhorn volume %s for the PV: %v", pv, err)
	}

	// What kubelet records when the node plugin registers (GetInfo answer):
	// the attacher looks the node's driver id up here.
	_, err = kube.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n.name},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "driver.longhorn.io", NodeID: n.name,
			TopologyKeys: []string{"kubernetes.io/hostname"}}}}}, metav1.CreateOptions{})
	n.must(err)
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-" + pv},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "driver.longhorn.io", NodeName: n.name,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	if _, err := kube.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.eventually("VolumeAttachment attached", 2*time.Minute, func() (bool, string) {
		got, err := kube.StorageV1().VolumeAttachments().Get(ctx, va.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Attached, fmt.Sprintf("%+v", got.Status)
	})
	n.waitVolume(ctx, pv, func(state, node string, size int64) bool { return state == "attached" && node == n.name })

	c, err := kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("128Mi")
	if _, err := kube.CoreV1().PersistentVolumeClaims("default").Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitVolume(ctx, pv, func(_, _ string, size int64) bool { return size == 128<<20 })

	if err := kube.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitVolume(ctx, pv, func(state, _ string, _ int64) bool { return state == "detached" })
	if err := kube.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n.eventually("PV and Longhorn volume deleted", 2*time.Minute, func() (bool, string) {
		_, perr := kube.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		_, verr := n.lh.LonghornV1beta2().Volumes(ns).Get(ctx, pv, metav1.GetOptions{})
		return apierrors.IsNotFound(perr) && apierrors.IsNotFound(verr), fmt.Sprintf("pv: %v, volume: %v", perr, verr)
	})
}

// waitVolume polls the Longhorn volume until cond(state, node, size) holds.
func (n *node) waitVolume(ctx context.Context, name string, cond func(state, node string, size int64) bool) {
	n.t.Helper()
	n.eventually("volume "+name, 2*time.Minute, func() (bool, string) {
		v, err := n.lh.LonghornV1beta2().Volumes(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(string(v.Status.State), v.Status.CurrentNodeID, v.Spec.Size),
			fmt.Sprintf("state %s node %s size %d", v.Status.State, v.Status.CurrentNodeID, v.Spec.Size)
	})
}

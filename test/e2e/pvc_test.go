package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// TestPVCExamples applies Longhorn's example manifests unchanged:
// examples/storageclass.yaml (class longhorn-test) and examples/pvc.yaml
// (a 2 GiB claim of the chart's default class longhorn). A pod writes a
// data set into the claim; the pod is deleted and a new one on another
// node reads the same bytes, several times (the timings of both paths go to
// the log; LONGHORN_E2E_TIMINGS=10 gives the README's p50). Deleting the
// claim removes the Longhorn volume and its replica data on every node.
func TestPVCExamples(t *testing.T) {
	e := setupPVC(t, 12*time.Minute)
	root := moduleRoot()
	for _, f := range []string{"storageclass.yaml", "pvc.yaml"} {
		out, err := e.f.Kubectl(e.ctx, "apply", "-n", pvcNamespace, "-f", filepath.Join(root, "examples", f))
		e.must(err)
		t.Logf("kubectl apply -f examples/%s: %s", f, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		_, _ = e.f.Kubectl(context.Background(), "delete", "--ignore-not-found", "-f", filepath.Join(root, "examples", "storageclass.yaml"))
	})
	sc, err := e.f.Kube.StorageV1().StorageClasses().Get(e.ctx, "longhorn-test", metav1.GetOptions{})
	e.must(err)
	if sc.Provisioner != "driver.longhorn.io" || sc.Parameters["numberOfReplicas"] != "3" {
		t.Fatalf("examples/storageclass.yaml: %+v", sc)
	}
	claim := "longhorn-volv-pvc"
	node := e.c.NodeName(1)
	runs := timingRuns()
	first := e.runPod(e.podSpec("volume-test-0", claim, node, false))
	vol := e.boundVolume(claim)
	t.Logf("PVC create -> pod Running: %.1fs (volume %s on %s)", first.Seconds(), vol, node)
	data, sum := dataSet(pvcDataSize)
	e.writeFile("volume-test-0", "data.bin", data)
	e.checkSum("volume-test-0", "cat /data/data.bin", sum, "data set after write")
	var moves []time.Duration
	for i := 1; i <= runs; i++ {
		prev, name := fmt.Sprintf("volume-test-%d", i-1), fmt.Sprintf("volume-test-%d", i)
		to := e.otherNode(node, i)
		t0 := time.Now()
		e.deletePodWait(prev)
		e.runPod(e.podSpec(name, claim, to, false))
		d := time.Since(t0)
		moves = append(moves, d)
		e.checkSum(name, "cat /data/data.bin", sum, fmt.Sprintf("data set after move %d (%s -> %s)", i, node, to))
		t.Logf("move %d: pod deleted on %s -> new pod Running on %s in %.1fs, %d MiB intact", i, node, to, d.Seconds(), pvcDataSize>>20)
		node = to
	}
	t.Logf("TIMING pod delete -> new pod Running on another node: p50 %.1fs of %d (%v)", p50(moves).Seconds(), len(moves), roundAll(moves))
	e.deletePodWait(fmt.Sprintf("volume-test-%d", runs))
	e.must(e.f.Kube.CoreV1().PersistentVolumeClaims(pvcNamespace).Delete(e.ctx, claim, metav1.DeleteOptions{}))
	e.must(e.waitVolumeGone(e.ctx, vol))
	t.Logf("PVC deleted: volume %s and its replica directories gone from every node", vol)

	// PVC create -> pod Running, on fresh claims of longhorn-test.
	var creates []time.Duration
	for i := range runs {
		c := fmt.Sprintf("timing-%d", i)
		e.createPVC(pvc(c, "longhorn-test", 64<<20, false))
		d := e.runPod(e.podSpec(c, c, "", false))
		creates = append(creates, d)
		e.deletePodWait(c)
		e.must(e.f.Kube.CoreV1().PersistentVolumeClaims(pvcNamespace).Delete(e.ctx, c, metav1.DeleteOptions{}))
	}
	t.Logf("TIMING PVC create -> pod Running: p50 %.1fs of %d (%v)", p50(creates).Seconds(), len(creates), roundAll(creates))
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Millisecond)
	}
	return out
}

// storageClass creates a class of the driver with Longhorn's parameters and
// deletes it at the end.
func (e *pvcEnv) storageClass(name string, params map[string]string) {
	e.t.Helper()
	allow := true
	del := corev1.PersistentVolumeReclaimDelete
	_, err := e.f.Kube.StorageV1().StorageClasses().Create(e.ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Provisioner: "driver.longhorn.io", AllowVolumeExpansion: &allow, ReclaimPolicy: &del, Parameters: params}, metav1.CreateOptions{})
	e.must(err)
	e.t.Cleanup(func() {
		_ = e.f.Kube.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// TestPVCXFSExpandOnline: an xfs PVC is written by a pod; editing the PVC's
// size grows the volume and the file system inside the running pod
// (csi-resizer, ControllerExpand, NodeExpand with xfs_growfs), and the data
// set is intact; the pod moves to another node and reads the same bytes.
func TestPVCXFSExpandOnline(t *testing.T) {
	e := setupPVC(t, 8*time.Minute)
	e.storageClass("lh-e2e-xfs", map[string]string{"numberOfReplicas": "2", "staleReplicaTimeout": "30", "fsType": "xfs"})
	e.createPVC(pvc("xfs", "lh-e2e-xfs", 320<<20, false))
	node := e.c.NodeName(2)
	e.runPod(e.podSpec("xfs-0", "xfs", node, false))
	vol := e.boundVolume("xfs")
	if fs := e.exec("xfs-0", "stat -f -c %T /data", nil); fs != "xfs" {
		t.Fatalf("file system at /data is %q, want xfs", fs)
	}
	data, sum := dataSet(pvcDataSize)
	e.writeFile("xfs-0", "data.bin", data)
	before := e.fsBytes("xfs-0")

	claims := e.f.Kube.CoreV1().PersistentVolumeClaims(pvcNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // controllers write the claim too
		c, err := claims.Get(e.ctx, "xfs", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("640Mi")
		_, err = claims.Update(e.ctx, c, metav1.UpdateOptions{})
		return err
	})
	e.must(err)
	t0 := time.Now()
	var after int64
	err = wait.PollUntilContextTimeout(e.ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		after = e.fsBytes("xfs-0")
		return after >= before+250<<20, nil
	})
	if err != nil {
		t.Fatalf("file system in the pod: %d bytes after the PVC edit, %d before\n%s", after, before, e.podEvents("xfs"))
	}
	t.Logf("PVC 320Mi -> 640Mi: file system in the running pod %d -> %d bytes in %.1fs (volume %s)", before, after, time.Since(t0).Seconds(), vol)
	e.checkSum("xfs-0", "cat /data/data.bin", sum, "data set after the expansion")
	e.deletePodWait("xfs-0")
	e.runPod(e.podSpec("xfs-1", "xfs", e.otherNode(node, 0), false))
	e.checkSum("xfs-1", "cat /data/data.bin", sum, "data set on another node")
	if got := e.fsBytes("xfs-1"); got < after {
		t.Fatalf("file system %d bytes on the new node, %d before", got, after)
	}
}

// TestPVCBlockMode: a volumeMode Block PVC is a raw device in the pod,
// written and read with O_DIRECT, and the same bytes are read by a pod on
// another node.
func TestPVCBlockMode(t *testing.T) {
	e := setupPVC(t, 6*time.Minute)
	e.createPVC(pvc("raw", "longhorn", 64<<20, true))
	node := e.c.NodeName(3)
	e.runPod(e.podSpec("raw-0", "raw", node, true))
	vol := e.boundVolume("raw")
	if size := e.exec("raw-0", "blockdev --getsize64 "+devicePath, nil); size != fmt.Sprint(64<<20) {
		t.Fatalf("device %s is %s bytes, want %d", devicePath, size, 64<<20)
	}
	data, sum := dataSet(pvcDataSize)
	// At 16 MiB into the device, 1 MiB blocks, direct I/O both ways.
	e.exec("raw-0", fmt.Sprintf("dd of=%s bs=1M seek=16 oflag=direct iflag=fullblock status=none && sync", devicePath), data)
	read := fmt.Sprintf("dd if=%s bs=1M skip=16 count=%d iflag=direct status=none", devicePath, pvcDataSize>>20)
	e.checkSum("raw-0", read, sum, "raw bytes after write")
	e.deletePodWait("raw-0")
	to := e.otherNode(node, 1)
	e.runPod(e.podSpec("raw-1", "raw", to, true))
	e.checkSum("raw-1", read, sum, "raw bytes on "+to)
	t.Logf("Block PVC (volume %s): %d MiB written raw on %s, read back on %s", vol, pvcDataSize>>20, node, to)
}

// TestPVCStatefulSet: a StatefulSet of 3 pods with volumeClaimTemplates
// gets 3 bound claims of the default class, each pod writes its own data
// set; after the StatefulSet is scaled to 0 and back to 3, each pod reads
// its own bytes again. Deleting the claims removes the volumes.
func TestPVCStatefulSet(t *testing.T) {
	e := setupPVC(t, 10*time.Minute)
	three, zero := int32(3), int32(0)
	sc := "longhorn"
	tmpl := e.podSpec("", "", "", false)
	tmpl.Spec.Volumes = nil
	ss := statefulSet("web", three, sc, tmpl)
	_, err := e.f.Kube.AppsV1().StatefulSets(pvcNamespace).Create(e.ctx, ss, metav1.CreateOptions{})
	e.must(err)
	sums := map[string]string{}
	for i := range 3 {
		pod := fmt.Sprintf("web-%d", i)
		e.waitPodRunning(pod)
		data, sum := dataSet(pvcDataSize / 2)
		e.writeFile(pod, "id.bin", data)
		sums[pod] = sum
	}
	vols := map[string]string{}
	for i := range 3 {
		vols[fmt.Sprintf("data-web-%d", i)] = e.boundVolume(fmt.Sprintf("data-web-%d", i))
	}
	t.Logf("StatefulSet web: 3 pods Running, claims bound to %v", vols)
	e.scale("web", zero)
	e.scale("web", three)
	for pod, sum := range sums {
		e.waitPodRunning(pod)
		e.checkSum(pod, "cat /data/id.bin", sum, "data set after scale 0 -> 3")
	}
	e.scale("web", zero)
	e.must(e.f.Kube.AppsV1().StatefulSets(pvcNamespace).Delete(e.ctx, "web", metav1.DeleteOptions{}))
	for c, vol := range vols {
		e.must(e.f.Kube.CoreV1().PersistentVolumeClaims(pvcNamespace).Delete(e.ctx, c, metav1.DeleteOptions{}))
		e.must(e.waitVolumeGone(e.ctx, vol))
	}
}

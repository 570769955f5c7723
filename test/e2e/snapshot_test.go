package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// snapshotControllerYAML is external-snapshotter's snapshot-controller as a
// cluster admin installs it beside Longhorn (Longhorn leaves the
// VolumeSnapshot CRDs and this controller to the cluster): its RBAC and a
// Deployment running the real snapshot-controller from the product image
// (hack/make/csi.mk puts it there). %s is the image.
const snapshotControllerYAML = `apiVersion: v1
kind: ServiceAccount
metadata: {name: snapshot-controller, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: snapshot-controller-runner}
rules:
- {apiGroups: [""], resources: [persistentvolumes], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [persistentvolumeclaims], verbs: [get, list, watch, update]}
- {apiGroups: [""], resources: [events], verbs: [list, watch, create, update, patch]}
- {apiGroups: [snapshot.storage.k8s.io], resources: [volumesnapshotclasses], verbs: [get, list, watch]}
- {apiGroups: [snapshot.storage.k8s.io], resources: [volumesnapshotcontents], verbs: [create, get, list, watch, update, delete, patch]}
- {apiGroups: [snapshot.storage.k8s.io], resources: [volumesnapshotcontents/status], verbs: [patch]}
- {apiGroups: [snapshot.storage.k8s.io], resources: [volumesnapshots], verbs: [create, get, list, watch, update, patch, delete]}
- {apiGroups: [snapshot.storage.k8s.io], resources: [volumesnapshots/status], verbs: [update, patch]}
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, watch, list, delete, update, create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: snapshot-controller-role}
subjects: [{kind: ServiceAccount, name: snapshot-controller, namespace: kube-system}]
roleRef: {kind: ClusterRole, name: snapshot-controller-runner, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: snapshot-controller, namespace: kube-system}
spec:
  replicas: 1
  selector: {matchLabels: {app: snapshot-controller}}
  template:
    metadata: {labels: {app: snapshot-controller}}
    spec:
      serviceAccountName: snapshot-controller
      containers:
      - name: snapshot-controller
        image: %s
        imagePullPolicy: IfNotPresent
        command: [snapshot-controller, --v=2, --leader-election=true, --leader-election-namespace=kube-system]
`

// snapshotClassYAML is a VolumeSnapshotClass of Longhorn snapshots (type snap).
const snapshotClassYAML = `apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: longhorn-snapshot-vsc}
driver: driver.longhorn.io
deletionPolicy: Delete
parameters: {type: snap}
`

// installSnapshotter installs the VolumeSnapshot CRDs (external-snapshotter
// client/v8, from make csi-sidecars) and the snapshot-controller once per
// cluster, and the VolumeSnapshotClass.
func (e *pvcEnv) installSnapshotter() {
	e.t.Helper()
	dir := os.Getenv("LONGHORN_CSI_SIDECARS")
	if dir == "" {
		if testutil.ToolsRequired() {
			e.t.Fatal("LONGHORN_CSI_SIDECARS is not set (make e2e sets it)")
		}
		e.t.Skip("LONGHORN_CSI_SIDECARS not set: no VolumeSnapshot CRDs")
	}
	_, err := e.f.Kubectl(e.ctx, "apply", "--server-side", "-f", filepath.Join(dir, "crd"))
	e.must(err)
	_, err = e.f.Kubectl(e.ctx, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/volumesnapshots.snapshot.storage.k8s.io", "crd/volumesnapshotcontents.snapshot.storage.k8s.io",
		"crd/volumesnapshotclasses.snapshot.storage.k8s.io")
	e.must(err)
	e.applyYAML(fmt.Sprintf(snapshotControllerYAML, e.image))
	e.applyYAML(snapshotClassYAML)
}

// applyYAML runs kubectl apply -f - with doc.
func (e *pvcEnv) applyYAML(doc string) {
	e.t.Helper()
	cmd := exec.CommandContext(e.ctx, e.f.KubectlPath, "--kubeconfig", e.f.Kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(doc)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// jsonpath reads one field of an object with kubectl get -o jsonpath.
func (e *pvcEnv) jsonpath(kind, name, path string) string {
	out, err := e.f.Kubectl(e.ctx, "get", "-n", pvcNamespace, kind, name, "-o", "jsonpath={"+path+"}")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(out))
}

// TestPVCVolumeSnapshot: a VolumeSnapshot (class of type snap) of a PVC in
// use by a pod becomes ready to use and is a Longhorn snapshot of the
// volume; a second one of the same PVC after its pod is gone (a detached
// volume, attached by the snapshot controller for it) too; a PVC restored
// from the first VolumeSnapshot and a PVC cloned from the PVC (Longhorn
// clones) hold the same bytes (sha256 of the data set); deleting the
// VolumeSnapshots removes the Longhorn snapshots.
func TestPVCVolumeSnapshot(t *testing.T) {
	e := setupPVC(t, 8*time.Minute)
	e.installSnapshotter()
	e.createPVC(pvc("snapsrc", "longhorn", 64<<20, false))
	e.runPod(e.podSpec("snapsrc-0", "snapsrc", e.c.NodeName(1), false))
	vol := e.boundVolume("snapsrc")
	data, sum := dataSet(pvcDataSize)
	e.writeFile("snapsrc-0", "data.bin", data)

	snap := func(name string) string {
		e.applyYAML(fmt.Sprintf(`apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: %s, namespace: %s}
spec:
  volumeSnapshotClassName: longhorn-snapshot-vsc
  source: {persistentVolumeClaimName: snapsrc}
`, name, pvcNamespace))
		t0 := time.Now()
		var last string
		err := wait.PollUntilContextTimeout(e.ctx, 500*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
			last = e.jsonpath("volumesnapshot", name, ".status")
			return e.jsonpath("volumesnapshot", name, ".status.readyToUse") == "true", nil
		})
		if err != nil {
			t.Fatalf("VolumeSnapshot %s not ready to use: %s\n%s", name, last, e.podEvents(name))
		}
		handle := e.jsonpath("volumesnapshotcontent", e.jsonpath("volumesnapshot", name, ".status.boundVolumeSnapshotContentName"), ".status.snapshotHandle")
		t.Logf("VolumeSnapshot %s ready to use in %.1fs: %s", name, time.Since(t0).Seconds(), handle)
		want := "snap://" + vol + "/"
		if !strings.HasPrefix(handle, want) {
			t.Fatalf("snapshot handle %q, want %s<snapshot>", handle, want)
		}
		lh := strings.TrimPrefix(handle, want)
		// The API answers ready from the engine's list; the Snapshot
		// object's status follows within a sync.
		err = wait.PollUntilContextTimeout(e.ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			s, err := e.f.LH.LonghornV1beta2().Snapshots(lhNamespace).Get(ctx, lh, metav1.GetOptions{})
			last = fmt.Sprintf("%+v %v", s, err)
			return err == nil && s.Spec.Volume == vol && s.Status.ReadyToUse && s.Status.CreationTime != "", nil
		})
		if err != nil {
			t.Fatalf("Longhorn snapshot %s: %s", lh, last)
		}
		return lh
	}
	attached := snap("snap-attached")
	e.deletePodWait("snapsrc-0")
	e.waitDetached(vol)
	detached := snap("snap-detached")
	e.waitDetached(vol) // the snapshot controller's ticket is gone again

	// A PVC restored from the VolumeSnapshot taken while the pod wrote,
	// and a PVC cloned from the (detached) PVC: Longhorn clones
	// (dataSource snap:// and vol://), each read by a pod on another node.
	var clones []string
	for i, c := range []struct{ name, source string }{
		{"restored", "{name: snap-attached, kind: VolumeSnapshot, apiGroup: snapshot.storage.k8s.io}"},
		{"cloned", "{name: snapsrc, kind: PersistentVolumeClaim}"},
	} {
		t0 := time.Now()
		e.applyYAML(fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %s, namespace: %s}
spec:
  storageClassName: longhorn
  dataSource: %s
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 64Mi}}
`, c.name, pvcNamespace, c.source))
		pod := c.name + "-0"
		e.runPod(e.podSpec(pod, c.name, e.c.NodeName(2+i%2), false))
		e.checkSum(pod, "cat /data/data.bin", sum, "data set in PVC "+c.name)
		cv := e.boundVolume(c.name)
		clones = append(clones, cv)
		lv, err := e.f.LH.LonghornV1beta2().Volumes(lhNamespace).Get(e.ctx, cv, metav1.GetOptions{})
		e.must(err)
		if lv.Status.CloneStatus.State != "completed" || lv.Status.CloneStatus.SourceVolume != vol {
			t.Fatalf("PVC %s: volume %s clone status %+v, want completed from %s", c.name, cv, lv.Status.CloneStatus, vol)
		}
		t.Logf("PVC %s (dataSource %s): pod Running %.1fs after the claim, %d MiB identical to the source", c.name, lv.Spec.DataSource,
			time.Since(t0).Seconds(), pvcDataSize>>20)
		e.deletePodWait(pod)
	}
	_, err := e.f.Kubectl(e.ctx, "delete", "-n", pvcNamespace, "pvc/restored", "pvc/cloned", "volumesnapshot/snap-attached", "volumesnapshot/snap-detached")
	e.must(err)
	for _, lh := range []string{attached, detached} {
		err := wait.PollUntilContextTimeout(e.ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := e.f.LH.LonghornV1beta2().Snapshots(lhNamespace).Get(ctx, lh, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("Longhorn snapshot %s left after its VolumeSnapshot was deleted", lh)
		}
	}
	// The claims' volumes go with them (reclaim policy Delete): the next
	// scenarios expect no volume of this one attached.
	for _, cv := range clones {
		e.must(e.waitVolumeGone(e.ctx, cv))
	}
}

// waitDetached waits until the Longhorn volume is detached.
func (e *pvcEnv) waitDetached(vol string) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		v, err := e.f.LH.LonghornV1beta2().Volumes(lhNamespace).Get(ctx, vol, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = string(v.Status.State)
		return v.Status.State == "detached", nil
	})
	if err != nil {
		e.t.Fatalf("volume %s not detached: %s", vol, last)
	}
}

package rest_test

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/gdapi"
)

// setVolumeStatus writes the volume's status as the volume controller
// would (no controller runs here) and waits for the API to show it.
func (f *fixture) setVolumeStatus(t *testing.T, name string, edit func(*longhorn.VolumeStatus)) gdapi.Object {
	t.Helper()
	v, err := f.lh.LonghornV1beta2().Volumes(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edit(&v.Status)
	if v, err = f.lh.LonghornV1beta2().Volumes(ns).UpdateStatus(f.ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "volume status in the API's cache", func() bool {
		c, err := f.ds.GetVolumeRO(f.ctx, name)
		return err == nil && reflect.DeepEqual(c.Status, v.Status)
	})
	o, err := f.cli.ByID("volume", name)
	if err != nil || o == nil {
		t.Fatalf("volume %s: %v", name, err)
	}
	return o
}

// volumeSpec reads the stored volume spec once the API cache has caught up
// with cond.
func (f *fixture) volumeSpec(t *testing.T, name, what string, cond func(longhorn.VolumeSpec) bool) {
	t.Helper()
	eventually(t, what, func() bool {
		v, err := f.ds.GetVolumeRO(f.ctx, name)
		return err == nil && cond(v.Spec)
	})
}

// TestVolumeLifecycleAndActions drives a volume through create, every
// action a detached volume offers, the attach tickets, snapshot objects,
// recurring jobs, PV/PVC, salvage and delete, checking what lands in the
// API server after the webhook.
func TestVolumeLifecycleAndActions(t *testing.T) {
	f := setup(t)
	if _, err := f.lh.LonghornV1beta2().Nodes(ns).Create(f.ctx, newNode("rest-node-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := f.cli.Create("volume", map[string]any{"name": "rest-vol", "size": "10Mi", "numberOfReplicas": 2, "frontend": "iscsi",
		"recurringJobSelector": []map[string]any{{"name": "daily", "isGroup": true}}})
	if err != nil || v.Str("size") != "10485760" || v.Str("frontend") != "iscsi" {
		t.Fatalf("create: %v %v", v, err)
	}
	stored, err := f.lh.LonghornV1beta2().Volumes(ns).Get(f.ctx, "rest-vol", metav1.GetOptions{})
	if err != nil || stored.Spec.Image != engineImage || len(stored.Finalizers) == 0 || stored.Labels["recurring-job-group.longhorn.io/daily"] != "enabled" {
		t.Fatalf("stored after the webhook: %+v %v", stored, err)
	}
	if _, err := f.cli.Create("volume", map[string]any{"name": "rest-rwx", "size": "10Mi", "accessMode": "rwx"}); apiStatus(err) != 501 {
		t.Errorf("create rwx: %v", err)
	}
	v = f.setVolumeStatus(t, "rest-vol", func(st *longhorn.VolumeStatus) {
		st.State, st.Robustness = longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown
		st.Conditions = []longhorn.Condition{{Type: longhorn.VolumeConditionTypeScheduled, Status: longhorn.ConditionStatusTrue}}
	})
	if v["ready"] != true || v.Actions()["snapshotCreate"] != "" || v.Actions()["expand"] == "" {
		t.Fatalf("detached volume: ready=%v actions %v", v["ready"], v.Actions())
	}
	t.Run("attach tickets", func(t *testing.T) { testAttachTickets(t, f, v) })
	t.Run("field updates", func(t *testing.T) { testFieldUpdates(t, f) })
	t.Run("recurring jobs", func(t *testing.T) { testVolumeRecurringJobs(t, f) })
	t.Run("snapshot objects", func(t *testing.T) { testSnapshotCRs(t, f) })
	t.Run("pv and pvc", func(t *testing.T) { testPVAndPVC(t, f) })
	t.Run("unsupported and invalid", func(t *testing.T) { testRefusedActions(t, f) })
	t.Run("cancel expansion and activate", func(t *testing.T) { testCancelExpansion(t, f) })
	t.Run("replica remove and salvage", func(t *testing.T) { testReplicasAndSalvage(t, f) })
	v, _ = f.cli.ByID("volume", "rest-vol")
	if err := f.cli.Delete(v); err != nil {
		t.Fatal(err)
	}
	eventually(t, "volume marked for deletion", func() bool {
		got, err := f.lh.LonghornV1beta2().Volumes(ns).Get(f.ctx, "rest-vol", metav1.GetOptions{})
		return err != nil || got.DeletionTimestamp != nil
	})
}

func testAttachTickets(t *testing.T, f *fixture, v gdapi.Object) {
	if _, err := f.cli.Action(v, "attach", map[string]any{"hostId": "rest-node-2", "disableFrontend": true, "attachedBy": "ui"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cli.Action(v, "attach", map[string]any{"hostId": "rest-node-2", "attacherType": "csi-attacher", "attachmentID": "csi-abc"}); err != nil {
		t.Fatal(err)
	}
	var va gdapi.Object
	eventually(t, "two tickets", func() bool {
		va, _ = f.cli.ByID("volumeAttachment", "rest-vol")
		return va != nil && len(va.Map("attachments")) == 2
	})
	csi := va.Map("attachments").Map("csi-attacher-csi-abc")
	if csi.Str("attachmentID") != "csi-attacher-csi-abc" || csi.Str("attachmentType") != "csi-attacher" || csi.Str("nodeID") != "rest-node-2" || csi["satisfied"] != false {
		t.Errorf("csi ticket %v", csi)
	}
	if _, err := f.cli.Action(v, "attach", map[string]any{"hostId": "nowhere"}); apiStatus(err) != 422 || !strings.Contains(err.Error(), "hostId") {
		t.Errorf("attach to an unknown node: %v", err)
	}
	// Longhorn's CSI driver detaches with the attachmentID it attached with.
	if _, err := f.cli.Action(v, "detach", map[string]any{"attachmentID": "csi-abc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cli.Action(v, "detach", map[string]any{"hostId": "rest-node-2"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "tickets removed", func() bool {
		va, _ = f.cli.ByID("volumeAttachment", "rest-vol")
		return va != nil && len(va.Map("attachments")) == 0
	})
}

// testFieldUpdates runs the update actions and checks the stored spec.
func testFieldUpdates(t *testing.T, f *fixture) {
	v, _ := f.cli.ByID("volume", "rest-vol")
	steps := []struct {
		action string
		body   map[string]any
		check  func(longhorn.VolumeSpec) bool
	}{
		{"expand", map[string]any{"size": "21Mi"}, func(s longhorn.VolumeSpec) bool { return s.Size == 22<<20 }}, // rounded up to 2 MiB
		{"updateReplicaCount", map[string]any{"replicaCount": 3}, func(s longhorn.VolumeSpec) bool { return s.NumberOfReplicas == 3 }},
		{"updateDataLocality", map[string]any{"dataLocality": "best-effort"}, func(s longhorn.VolumeSpec) bool { return s.DataLocality == "best-effort" }},
		{"updateAccessMode", map[string]any{"accessMode": "rwop"}, func(s longhorn.VolumeSpec) bool { return s.AccessMode == "rwop" }},
		{"updateReplicaAutoBalance", map[string]any{"replicaAutoBalance": "least-effort"}, func(s longhorn.VolumeSpec) bool { return s.ReplicaAutoBalance == "least-effort" }},
		{"updateSnapshotMaxCount", map[string]any{"snapshotMaxCount": 5}, func(s longhorn.VolumeSpec) bool { return s.SnapshotMaxCount == 5 }},
		{"updateSnapshotMaxSize", map[string]any{"snapshotMaxSize": "1Gi"}, func(s longhorn.VolumeSpec) bool { return s.SnapshotMaxSize == 1<<30 }},
		{"updateRebuildConcurrentSyncLimit", map[string]any{"rebuildConcurrentSyncLimit": 2}, func(s longhorn.VolumeSpec) bool { return s.RebuildConcurrentSyncLimit == 2 }},
		{"updateReplicaSoftAntiAffinity", map[string]any{"replicaSoftAntiAffinity": "enabled"}, func(s longhorn.VolumeSpec) bool { return s.ReplicaSoftAntiAffinity == "enabled" }},
		{"updateReplicaZoneSoftAntiAffinity", map[string]any{"replicaZoneSoftAntiAffinity": "disabled"}, func(s longhorn.VolumeSpec) bool { return s.ReplicaZoneSoftAntiAffinity == "disabled" }},
		{"updateReplicaDiskSoftAntiAffinity", map[string]any{"replicaDiskSoftAntiAffinity": "enabled"}, func(s longhorn.VolumeSpec) bool { return s.ReplicaDiskSoftAntiAffinity == "enabled" }},
		{"updateUnmapMarkSnapChainRemoved", map[string]any{"unmapMarkSnapChainRemoved": "disabled"}, func(s longhorn.VolumeSpec) bool { return s.UnmapMarkSnapChainRemoved == "disabled" }},
		{"updateSnapshotDataIntegrity", map[string]any{"snapshotDataIntegrity": "disabled"}, func(s longhorn.VolumeSpec) bool { return s.SnapshotDataIntegrity == "disabled" }},
		{"updateFreezeFilesystemForSnapshot", map[string]any{"freezeFilesystemForSnapshot": "disabled"}, func(s longhorn.VolumeSpec) bool { return s.FreezeFilesystemForSnapshot == "disabled" }},
		{"updateOfflineReplicaRebuilding", map[string]any{"offlineRebuilding": "disabled"}, func(s longhorn.VolumeSpec) bool { return s.OfflineRebuilding == "disabled" }},
		{"updateReplicaRebuildingBandwidthLimit", map[string]any{"replicaRebuildingBandwidthLimit": 32}, func(s longhorn.VolumeSpec) bool { return s.ReplicaRebuildingBandwidthLimit == 32 }},
	}
	for _, s := range steps {
		if _, err := f.cli.Action(v, s.action, s.body); err != nil {
			t.Fatalf("%s: %v", s.action, err)
		}
		f.volumeSpec(t, "rest-vol", s.action, s.check)
	}
	// The webhook's limits hold behind the API's.
	if _, err := f.cli.Action(v, "updateRebuildConcurrentSyncLimit", map[string]any{"rebuildConcurrentSyncLimit": 9}); apiStatus(err) != 422 ||
		!strings.Contains(err.Error(), "between 0 and 5") {
		t.Errorf("sync limit 9: %v", err)
	}
	if _, err := f.cli.Action(v, "expand", map[string]any{"size": "1Mi"}); apiStatus(err) != 422 {
		t.Errorf("shrink: %v", err)
	}
}

func testVolumeRecurringJobs(t *testing.T, f *fixture) {
	if _, err := f.cli.Create("recurringJob", map[string]any{"name": "rest-hourly", "task": "snapshot", "cron": "0 * * * *", "retain": 2, "concurrency": 1}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "job cached", func() bool { _, err := f.ds.GetRecurringJobRO(f.ctx, "rest-hourly"); return err == nil })
	v, _ := f.cli.ByID("volume", "rest-vol")
	list, err := f.cli.Action(v, "recurringJobAdd", map[string]any{"name": "rest-hourly"})
	if err != nil || len(list.Data()) != 2 {
		t.Fatalf("recurringJobAdd: %v %v", list, err)
	}
	if _, err := f.cli.Action(v, "recurringJobAdd", map[string]any{"name": "no-such-job"}); apiStatus(err) != 422 {
		t.Errorf("add a missing job: %v", err)
	}
	if list, err = f.cli.Action(v, "recurringJobDelete", map[string]any{"name": "daily", "isGroup": true}); err != nil || len(list.Data()) != 1 {
		t.Fatalf("recurringJobDelete: %v %v", list, err)
	}
	eventually(t, "labels", func() bool {
		got, err := f.ds.GetVolumeRO(f.ctx, "rest-vol")
		return err == nil && got.Labels["recurring-job.longhorn.io/rest-hourly"] == "enabled" && got.Labels["recurring-job-group.longhorn.io/daily"] == ""
	})
	v, _ = f.cli.ByID("volume", "rest-vol")
	if list, err = f.cli.Action(v, "recurringJobList", nil); err != nil || len(list.Data()) != 1 || list.Data()[0].Str("name") != "rest-hourly" {
		t.Errorf("recurringJobList: %v %v", list, err)
	}
}

// testSnapshotCRs: on a detached volume snapshotCRCreate writes a Snapshot
// object with spec.createSnapshot for the snapshot controller, which
// attaches the volume and takes it (as Longhorn's; test/manager takes them
// on a real engine); a Snapshot object made by another client (as a
// controller would write it) is listed and read with its status.
func testSnapshotCRs(t *testing.T, f *fixture) {
	v, _ := f.cli.ByID("volume", "rest-vol")
	if _, listed := v.Actions()["snapshotCRCreate"]; !listed {
		t.Error("snapshotCRCreate not listed on a detached volume")
	}
	if st, body := post(t, f.base+"/v1/volumes/rest-vol?action=snapshotCRCreate", `{"name":"rest-detached-snap"}`); st != 200 {
		t.Errorf("snapshotCRCreate on a detached volume = %d %s", st, body)
	}
	if sn, err := f.lh.LonghornV1beta2().Snapshots(ns).Get(f.ctx, "rest-detached-snap", metav1.GetOptions{}); err != nil || !sn.Spec.CreateSnapshot || sn.Spec.Volume != "rest-vol" {
		t.Errorf("Snapshot object of snapshotCRCreate on a detached volume: %+v %v", sn, err)
	} else if err := f.lh.LonghornV1beta2().Snapshots(ns).Delete(f.ctx, sn.Name, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
	sn := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "rest-snap-1", Namespace: ns, Labels: map[string]string{"longhornvolume": "rest-vol"}},
		Spec: longhorn.SnapshotSpec{Volume: "rest-vol", Labels: map[string]string{"app": "db"}}}
	obj, err := f.lh.LonghornV1beta2().Snapshots(ns).Create(f.ctx, sn, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj.Status = longhorn.SnapshotStatus{CreationTime: "2026-12-01T10:00:00Z", Size: 4096, ReadyToUse: true, RestoreSize: 10 << 20}
	if _, err := f.lh.LonghornV1beta2().Snapshots(ns).UpdateStatus(f.ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "snapshot listed", func() bool {
		list, err := f.cli.Action(v, "snapshotCRList", nil)
		return err == nil && len(list.Data()) == 1 && list.Data()[0]["readyToUse"] == true
	})
	if got, err := f.cli.Action(v, "snapshotCRGet", map[string]any{"name": "rest-snap-1"}); err != nil || got.Str("volume") != "rest-vol" ||
		got.Map("labels").Str("app") != "db" {
		t.Errorf("snapshotCRGet: %v %v", got, err)
	}
	if _, err := f.cli.Action(v, "snapshotCRGet", map[string]any{"name": "nope"}); apiStatus(err) != 404 {
		t.Errorf("snapshotCRGet nope: %v", err)
	}
}

func testPVAndPVC(t *testing.T, f *fixture) {
	v, _ := f.cli.ByID("volume", "rest-vol")
	if _, err := f.cli.Action(v, "pvCreate", map[string]any{"pvName": "rest-pv", "fsType": "xfs"}); err != nil {
		t.Fatal(err)
	}
	pv, err := f.kube.CoreV1().PersistentVolumes().Get(f.ctx, "rest-pv", metav1.GetOptions{})
	if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != "driver.longhorn.io" || pv.Spec.CSI.VolumeHandle != "rest-vol" ||
		pv.Spec.CSI.FSType != "xfs" || pv.Spec.StorageClassName != "longhorn-static" {
		t.Fatalf("PV %+v %v", pv, err)
	}
	if _, err := f.cli.Action(v, "pvCreate", nil); apiStatus(err) != 409 {
		t.Errorf("second pvCreate: %v", err)
	}
	if _, err := f.cli.Action(v, "pvcCreate", map[string]any{"namespace": "default", "pvcName": "rest-pvc"}); err != nil {
		t.Fatal(err)
	}
	pvc, err := f.kube.CoreV1().PersistentVolumeClaims("default").Get(f.ctx, "rest-pvc", metav1.GetOptions{})
	if err != nil || pvc.Spec.VolumeName != "rest-pv" || *pvc.Spec.StorageClassName != "longhorn-static" {
		t.Errorf("PVC %+v %v", pvc, err)
	}
}

// testRefusedActions: features that do not exist answer 501 and are not
// listed; engineUpgrade (offline) refuses an image that is not an engine image; actions the state does not allow answer 409; bad values 422.
func testRefusedActions(t *testing.T, f *fixture) {
	v, _ := f.cli.ByID("volume", "rest-vol")
	if _, listed := v.Actions()["engineUpgrade"]; !listed {
		t.Errorf("engineUpgrade (offline) is not listed for a detached volume")
	}
	for body, want := range map[string]string{`{}`: "image", `{"image":"no-such:v0"}`: "not an engine image"} {
		if st, out := post(t, f.base+"/v1/volumes/rest-vol?action=engineUpgrade", body); st != 422 || !strings.Contains(out, want) {
			t.Errorf("engineUpgrade %s = %d %s", body, st, out)
		}
	}
	for _, a := range []string{"offlineReplicaRebuilding"} {
		if _, listed := v.Actions()[a]; listed {
			t.Errorf("%s is listed", a)
		}
		if st, body := post(t, f.base+"/v1/volumes/rest-vol?action="+a, "{}"); st != 501 || !strings.Contains(body, "not supported yet") {
			t.Errorf("%s = %d %s", a, st, body)
		}
	}
	if _, err := f.cli.Action(v, "updateAccessMode", map[string]any{"accessMode": "rwx"}); apiStatus(err) != 501 {
		t.Errorf("rwx: %v", err)
	}
	if _, err := f.cli.Action(v, "updateDataLocality", map[string]any{"dataLocality": "nearby"}); apiStatus(err) != 422 ||
		!strings.Contains(err.Error(), "dataLocality") {
		t.Errorf("bad locality: %v", err)
	}
	for _, a := range []string{"snapshotCreate", "snapshotBackup", "trimFilesystem"} {
		if st, body := post(t, f.base+"/v1/volumes/rest-vol?action="+a, "{}"); st != 409 || !strings.Contains(body, "detached") {
			t.Errorf("%s on a detached volume = %d %s", a, st, body)
		}
	}
	if st, body := post(t, f.base+"/v1/volumes/rest-vol?action=frobnicate", "{}"); st != 400 || !strings.Contains(body, "attach") {
		t.Errorf("unknown action = %d %s", st, body)
	}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func testReplicasAndSalvage(t *testing.T, f *fixture) {
	for _, name := range []string{"rest-vol-r-1", "rest-vol-r-2"} {
		r := &longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"longhornvolume": "rest-vol"}},
			Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "rest-vol", Image: engineImage, DataEngine: "v1"},
				FailedAt: "2026-12-01T00:00:00Z"}}
		if _, err := f.lh.LonghornV1beta2().Replicas(ns).Create(f.ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	v := f.setVolumeStatus(t, "rest-vol", func(st *longhorn.VolumeStatus) { st.Robustness = longhorn.VolumeRobustnessFaulted })
	if len(v.Actions()) != 3 || v.Actions()["salvage"] == "" {
		t.Fatalf("faulted volume actions %v", v.Actions())
	}
	eventually(t, "replicas listed", func() bool { v, _ = f.cli.ByID("volume", "rest-vol"); return len(v["replicas"].([]any)) == 2 })
	if _, err := f.cli.Action(v, "salvage", map[string]any{"names": []string{"rest-vol-r-1", "not-mine"}}); apiStatus(err) != 422 {
		t.Errorf("salvage with a foreign name: %v", err)
	}
	if r, _ := f.lh.LonghornV1beta2().Replicas(ns).Get(f.ctx, "rest-vol-r-1", metav1.GetOptions{}); r.Spec.FailedAt == "" {
		t.Error("a refused salvage changed a replica")
	}
	if _, err := f.cli.Action(v, "salvage", map[string]any{"names": []string{"rest-vol-r-1"}}); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.lh.LonghornV1beta2().Replicas(ns).Get(f.ctx, "rest-vol-r-1", metav1.GetOptions{}); r.Spec.FailedAt != "" {
		t.Error("salvage did not clear failedAt")
	}
	v = f.setVolumeStatus(t, "rest-vol", func(st *longhorn.VolumeStatus) { st.Robustness = longhorn.VolumeRobustnessUnknown })
	if _, err := f.cli.Action(v, "replicaRemove", map[string]any{"name": "rest-vol-r-2"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica removed", func() bool {
		_, err := f.lh.LonghornV1beta2().Replicas(ns).Get(f.ctx, "rest-vol-r-2", metav1.GetOptions{})
		return err != nil
	})
}

// testCancelExpansion: an expansion the engine has not started is given up
// (the size goes back to the engine's); activate is for standby volumes.
func testCancelExpansion(t *testing.T, f *fixture) {
	e := &longhorn.Engine{ObjectMeta: metav1.ObjectMeta{Name: "rest-vol-e-0", Namespace: ns, Labels: map[string]string{"longhornvolume": "rest-vol"}},
		Spec: longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "rest-vol", Image: engineImage, DataEngine: "v1"}, Active: true}}
	e, err := f.lh.LonghornV1beta2().Engines(ns).Create(f.ctx, e, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.Status.CurrentSize = 10 << 20
	if _, err := f.lh.LonghornV1beta2().Engines(ns).UpdateStatus(f.ctx, e, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "engine cached", func() bool {
		got, err := f.ds.GetEngineRO(f.ctx, "rest-vol-e-0")
		return err == nil && got.Status.CurrentSize == 10<<20
	})
	v := f.setVolumeStatus(t, "rest-vol", func(st *longhorn.VolumeStatus) { st.ExpansionRequired = true })
	if _, err := f.cli.Action(v, "cancelExpansion", nil); err != nil {
		t.Fatal(err)
	}
	f.volumeSpec(t, "rest-vol", "size back to the engine's", func(s longhorn.VolumeSpec) bool { return s.Size == 10<<20 })
	v = f.setVolumeStatus(t, "rest-vol", func(st *longhorn.VolumeStatus) { st.ExpansionRequired = false })
	if _, listed := v.Actions()["cancelExpansion"]; listed {
		t.Error("cancelExpansion listed without an expansion")
	}
	if st, body := post(t, f.base+"/v1/volumes/rest-vol?action=activate", `{"frontend":"blockdev"}`); st != 409 || !strings.Contains(body, "activate is not available") {
		t.Errorf("activate a normal volume = %d %s", st, body)
	}
}

package api

import (
	"errors"
	"strings"
	"testing"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestSnapshotCRActions: snapshotCRCreate takes the snapshot with the
// engine and records the Snapshot object; get/list show the engine's view
// (readyToUse) while no controller fills the status; delete removes it from
// the engine, purges and deletes the object; a failed engine call leaves no
// object; a detached volume does not offer create or delete.
func TestSnapshotCRActions(t *testing.T) {
	ops := &fakeSnapshots{snaps: map[string]*engineapi.Snapshot{"volume-head": {Name: "volume-head"}}}
	e := newFakeEnv(t, Options{Snapshots: ops}, testVolume("att", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy),
		testVolume("det", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown))
	var cr SnapshotCR
	if st := e.do("POST", "/v1/volumes/att?action=snapshotCRCreate", SnapshotCRInput{Name: "csi-snap", Labels: map[string]string{"app": "db"}}, &cr); st != 200 ||
		cr.Name != "csi-snap" || !cr.ReadyToUse || cr.Size != 4096 || cr.RestoreSize != 1<<30 || cr.Type != "snapshotCR" {
		t.Fatalf("snapshotCRCreate = %d %+v", st, cr)
	}
	obj, err := e.client.LonghornV1beta2().Snapshots(ns).Get(t.Context(), "csi-snap", metavOpts)
	if err != nil || obj.Spec.Volume != "att" || !obj.Spec.CreateSnapshot || obj.Spec.Labels["app"] != "db" || ops.snaps["csi-snap"] == nil {
		t.Fatalf("object %+v (%v), engine %v", obj, err, ops.snaps)
	}
	eventually(t, "listed", func() bool {
		var list struct{ Data []SnapshotCR }
		return e.do("POST", "/v1/volumes/att?action=snapshotCRList", nil, &list) == 200 && len(list.Data) == 1 && list.Data[0].ReadyToUse
	})
	var apiErr Error
	if st := e.do("POST", "/v1/volumes/att?action=snapshotCRCreate", SnapshotCRInput{Name: "csi-snap"}, &apiErr); st != 409 {
		t.Errorf("duplicate = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/att?action=snapshotCRCreate", SnapshotCRInput{Name: "Bad Name"}, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "name") {
		t.Errorf("bad name = %d %+v", st, apiErr)
	}
	ops.createErr = errors.New("engine busy")
	if st := e.do("POST", "/v1/volumes/att?action=snapshotCRCreate", SnapshotCRInput{Name: "later"}, &apiErr); st < 500 {
		t.Errorf("engine failure = %d", st)
	}
	if _, err := e.client.LonghornV1beta2().Snapshots(ns).Get(t.Context(), "later", metavOpts); err == nil {
		t.Error("a failed snapshot left an object")
	}
	ops.createErr = nil
	if st := e.do("POST", "/v1/volumes/att?action=snapshotCRDelete", SnapshotCRInput{Name: "csi-snap"}, nil); st != 200 || !ops.snaps["csi-snap"].Removed || !ops.purged {
		t.Errorf("snapshotCRDelete = %d, engine %+v purged %v", st, ops.snaps["csi-snap"], ops.purged)
	}
	eventually(t, "object deleted", func() bool {
		_, err := e.client.LonghornV1beta2().Snapshots(ns).Get(t.Context(), "csi-snap", metavOpts)
		return err != nil
	})
	var det Volume
	if st := e.do("GET", "/v1/volumes/det", nil, &det); st != 200 || det.Actions["snapshotCRCreate"] == "" || det.Actions["snapshotCRList"] == "" {
		t.Errorf("detached volume actions %v", det.Actions)
	}
	// A detached volume: the object is created for the snapshot controller
	// (which attaches the volume and takes it); nothing is taken yet.
	var made SnapshotCR
	if st := e.do("POST", "/v1/volumes/det?action=snapshotCRCreate", SnapshotCRInput{Name: "x"}, &made); st != 200 || made.ReadyToUse || !made.CreateSnapshot {
		t.Errorf("create on detached = %d %+v", st, made)
	}
	if o, err := e.client.LonghornV1beta2().Snapshots(ns).Get(t.Context(), "x", metavOpts); err != nil || !o.Spec.CreateSnapshot || o.Spec.Volume != "det" {
		t.Errorf("object of the detached volume's snapshot: %+v %v", o, err)
	}
	if _, taken := ops.snaps["x"]; taken {
		t.Error("the engine was asked for a detached volume's snapshot")
	}
	if st := e.do("POST", "/v1/volumes/det?action=snapshotCRDelete", SnapshotCRInput{Name: "x"}, nil); st != 200 {
		t.Errorf("delete on detached = %d", st)
	}
}

package rest_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/gdapi"
	"github.com/longhorn-go/longhorn/types"
)

// TestEveryCollectionThroughSchemas: every type with a listable collection
// lists (a gdapi collection, [] when empty), by id of a missing object is a
// 404 (nil), and the client refuses methods the schemas do not offer.
func TestEveryCollectionThroughSchemas(t *testing.T) {
	f := setup(t)
	want := []string{"setting", "volume", "node", "engineImage", "instanceManager", "volumeAttachment", "event", "recurringJob",
		"orphan", "backupTarget", "backupVolume", "backingImage", "backupBackingImage", "systemBackup", "systemRestore",
		"supportBundle", "shareManager"}
	for _, typ := range want {
		s, ok := f.cli.Types[typ]
		if !ok || s.Links["collection"] == "" {
			t.Errorf("schema %s: %+v", typ, s)
			continue
		}
		if _, err := f.cli.List(typ, nil); err != nil {
			t.Errorf("list %s: %v", typ, err)
		}
		if typ == "event" {
			continue // events have no resource URL in Longhorn's router
		}
		if o, err := f.cli.ByID(typ, "no-such-object"); err != nil || o != nil {
			t.Errorf("by id %s: %v %v", typ, o, err)
		}
	}
	if _, err := f.cli.Create("node", map[string]any{"name": "x"}); !errors.Is(err, gdapi.ErrNoMethod) {
		t.Errorf("create node: %v, want ErrNoMethod", err)
	}
	if _, err := f.cli.Create("backingImage", map[string]any{"name": "bi", "sourceType": "download"}); apiStatus(err) != 501 ||
		!strings.Contains(err.Error(), "backing images is not supported yet") {
		t.Errorf("create backing image: %v, want 501 not supported yet", err)
	}
}

// TestSettingsThroughWebhook: a per-data-engine setting written through the
// API, or with kubectl (the webhook), is stored per engine; invalid values
// fail with Longhorn's text naming the limit.
func TestSettingsThroughWebhook(t *testing.T) {
	f := setup(t)
	s, err := f.cli.ByID("setting", "default-replica-count")
	if err != nil || s.Str("value") != `{"v1":"3","v2":"3"}` {
		t.Fatalf("setting %v %v", s, err)
	}
	if s, err = f.cli.Update(s, map[string]any{"value": "2"}); err != nil || s.Str("value") != `{"v1":"2","v2":"2"}` {
		t.Fatalf("update 2: %v %v", s, err)
	}
	_, err = f.cli.Update(s, map[string]any{"value": "21"})
	if apiStatus(err) != 422 || !strings.Contains(err.Error(), "failed to set the setting default-replica-count with invalid value 21: must be at most 20") {
		t.Errorf("update 21: %v", err)
	}
	// As kubectl writes it: the webhook stores the plain value per engine.
	obj := &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: "replica-rebuild-concurrent-sync-limit", Namespace: ns}, Value: "2"}
	got, err := f.lh.LonghornV1beta2().Settings(ns).Create(f.ctx, obj, metav1.CreateOptions{})
	if err != nil || got.Value != `{"v1":"2"}` {
		t.Fatalf("kubectl-style create: %v %v", got, err)
	}
	obj.Value = `{"v1":"2","v2":"9"}`
	obj.Name = "default-data-locality"
	if _, err := f.lh.LonghornV1beta2().Settings(ns).Create(f.ctx, obj, metav1.CreateOptions{}); err == nil {
		t.Error("a per-engine value for a plain setting was accepted")
	}
}

// TestNodesTagsAndDisks: qualified-name tags pass API and webhook, removing
// an enabled disk is refused with Longhorn's text, a ready node cannot be
// deleted, a gone one can.
func TestNodesTagsAndDisks(t *testing.T) {
	f := setup(t)
	node := newNode("rest-node-1")
	if _, err := f.lh.LonghornV1beta2().Nodes(ns).Create(f.ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var n gdapi.Object
	eventually(t, "node listed", func() bool { n, _ = f.cli.ByID("node", "rest-node-1"); return n != nil })
	n, err := f.cli.Update(n, map[string]any{"tags": []string{"example.com/fast", "zone_a"}, "allowScheduling": false})
	if err != nil || n["tags"].([]any)[0] != "example.com/fast" {
		t.Fatalf("update tags: %v %v", n, err)
	}
	if _, err := f.cli.Update(n, map[string]any{"tags": []string{"a b"}}); apiStatus(err) != 422 {
		t.Errorf("bad tag: %v", err)
	}
	tags, err := f.cli.List("node", nil)
	if err != nil || len(tags) == 0 {
		t.Fatalf("nodes %v %v", tags, err)
	}
	_, err = f.cli.Action(n, "diskUpdate", map[string]any{"disks": map[string]any{}})
	if apiStatus(err) != 422 || !strings.Contains(err.Error(), "Please disable the disk /var/lib/longhorn-rest and remove all replicas") {
		t.Errorf("remove enabled disk: %v", err)
	}
	disabled := map[string]any{"disk-1": map[string]any{"path": "/var/lib/longhorn-rest", "allowScheduling": false, "diskType": "filesystem"}}
	if n, err = f.cli.Action(n, "diskUpdate", map[string]any{"disks": disabled}); err != nil {
		t.Fatalf("disable disk: %v", err)
	}
	eventually(t, "disk disabled", func() bool {
		nd, err := f.ds.GetNodeRO(f.ctx, "rest-node-1")
		return err == nil && !nd.Spec.Disks["disk-1"].AllowScheduling
	})
	if n, err = f.cli.Action(n, "diskUpdate", map[string]any{"disks": map[string]any{}}); err != nil {
		t.Errorf("remove disabled disk: %v", err)
	}
	if err := f.cli.Delete(n); apiStatus(err) != 409 {
		t.Errorf("delete a node that is not gone: %v", err)
	}
	// The Kubernetes node is gone: now it may go.
	cur, err := f.lh.LonghornV1beta2().Nodes(ns).Get(f.ctx, "rest-node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Conditions = []longhorn.Condition{{Type: longhorn.NodeConditionTypeReady, Status: longhorn.ConditionStatusFalse,
		Reason: longhorn.NodeConditionReasonKubernetesNodeGone}}
	if _, err := f.lh.LonghornV1beta2().Nodes(ns).UpdateStatus(f.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node gone in cache", func() bool {
		nd, err := f.ds.GetNodeRO(f.ctx, "rest-node-1")
		return err == nil && len(nd.Status.Conditions) == 1
	})
	if err := f.cli.Delete(n); err != nil {
		t.Errorf("delete a gone node: %v", err)
	}
}

func newNode(name string) *longhorn.Node {
	return &longhorn.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: longhorn.NodeSpec{Name: name, AllowScheduling: true,
		Tags:  []string{},
		Disks: map[string]longhorn.DiskSpec{"disk-1": {Type: longhorn.DiskTypeFilesystem, Path: "/var/lib/longhorn-rest", AllowScheduling: true, Tags: []string{}}}}}
}

// TestRecurringJobsCRUD: create, list, by id, update and delete through the
// schemas; the webhook refuses a bad cron with the field.
func TestRecurringJobsCRUD(t *testing.T) {
	f := setup(t)
	job := map[string]any{"name": "rest-snap", "task": "snapshot", "cron": "0 2 * * *", "retain": 3, "concurrency": 1,
		"groups": []string{"nightly"}, "labels": map[string]string{"team": "storage"}}
	j, err := f.cli.Create("recurringJob", job)
	if err != nil || j.Str("cron") != "0 2 * * *" {
		t.Fatalf("create: %v %v", j, err)
	}
	eventually(t, "job listed", func() bool { o, _ := f.cli.ByID("recurringJob", "rest-snap"); return o != nil })
	job["cron"] = "*/30 * * * *"
	if j, err = f.cli.Update(j, job); err != nil || j.Str("cron") != "*/30 * * * *" {
		t.Fatalf("update: %v %v", j, err)
	}
	job["cron"] = "every day"
	if _, err := f.cli.Update(j, job); apiStatus(err) != 422 || !strings.Contains(err.Error(), "spec.cron") {
		t.Errorf("bad cron: %v", err)
	}
	if err := f.cli.Delete(j); err != nil {
		t.Fatal(err)
	}
	eventually(t, "job gone", func() bool { o, err := f.cli.ByID("recurringJob", "rest-snap"); return o == nil && err == nil })
}

// TestEngineImagesAndEvents: the default engine image is flagged and cannot
// be deleted, another cannot be deployed yet; /v1/events lists the
// namespace's Events.
func TestEngineImagesAndEvents(t *testing.T) {
	f := setup(t)
	name := types.EngineImageName(engineImage)
	ei := &longhorn.EngineImage{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: longhorn.EngineImageSpec{Image: engineImage}}
	if _, err := f.lh.LonghornV1beta2().EngineImages(ns).Create(f.ctx, ei, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var o gdapi.Object
	eventually(t, "engine image listed", func() bool { o, _ = f.cli.ByID("engineImage", name); return o != nil })
	if o["default"] != true || o.Str("image") != engineImage {
		t.Errorf("engine image %v", o)
	}
	if err := f.cli.Delete(o); apiStatus(err) != 409 {
		t.Errorf("delete default engine image: %v", err)
	}
	if _, err := f.cli.Create("engineImage", map[string]any{"image": "other:v2"}); apiStatus(err) != 501 {
		t.Errorf("create engine image: %v", err)
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "rest-vol.1", Namespace: ns}, Type: corev1.EventTypeNormal, Reason: "Attached",
		Message: "volume attached", InvolvedObject: corev1.ObjectReference{Kind: "Volume", Name: "rest-vol", Namespace: ns}}
	if _, err := f.kube.CoreV1().Events(ns).Create(f.ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "event listed", func() bool {
		events, err := f.cli.List("event", nil)
		for _, e := range events {
			if e.Str("eventType") == "Normal" && e.Map("event").Str("reason") == "Attached" {
				return true
			}
		}
		return err == nil && false
	})
}

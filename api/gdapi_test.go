package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// getRaw sends a GET with headers and returns status, headers and body.
func (e *apiEnv) getRaw(path string, headers map[string]string) (int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestEveryCollectionListsEmpty: every collection of Longhorn's router
// answers a gdapi collection with "data": [] when empty (Longhorn's UI threw
// on the 404s), with links.self, and every stream exists.
func TestEveryCollectionListsEmpty(t *testing.T) {
	e := newFakeEnv(t, Options{})
	for _, c := range collectionTypes {
		st, hdr, body := e.getRaw("/v1/"+c.coll, nil)
		var coll struct {
			Type, ResourceType string
			Links              map[string]string
			Data               json.RawMessage
		}
		if err := json.Unmarshal(body, &coll); err != nil || st != 200 {
			t.Errorf("GET /v1/%s = %d %s (%v)", c.coll, st, body, err)
			continue
		}
		if coll.Type != "collection" || coll.ResourceType != c.typ || coll.Links["self"] != e.srv.URL+"/v1/"+c.coll {
			t.Errorf("GET /v1/%s: %+v", c.coll, coll)
		}
		if c.coll != "settings" && string(coll.Data) != "[]" {
			t.Errorf("GET /v1/%s data = %s, want []", c.coll, coll.Data)
		}
		if hdr.Get("X-API-Schemas") != e.srv.URL+"/v1/schemas" || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Errorf("GET /v1/%s headers %v", c.coll, hdr)
		}
		conn := dialStream(t, e, "/v1/ws/1s/"+c.coll)
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		var msg string
		if err := websocket.Message.Receive(conn, &msg); err != nil || !strings.Contains(msg, `"resourceType":"`+c.typ+`"`) {
			t.Errorf("stream %s: %v %.100s", c.coll, err, msg)
		}
		conn.Close()
	}
}

// TestUnknownRoutesAnswerGdapiErrors: unknown paths 404, wrong methods 405
// (with Allow), both as gdapi error objects; a trailing slash and unknown
// query parameters are ignored.
func TestUnknownRoutesAnswerGdapiErrors(t *testing.T) {
	e := newFakeEnv(t, Options{})
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/nothing", 404}, {"GET", "/v1/volumes/a/b/c", 404}, {"GET", "/nope", 404},
		{"PUT", "/v1/volumes", 405}, {"DELETE", "/v1/settings/auto-salvage", 405}, {"PATCH", "/v1/nodes", 405},
	} {
		var apiErr Error
		if st := e.do(c.method, c.path, nil, &apiErr); st != c.status || apiErr.Type != "error" || apiErr.Status != c.status || apiErr.Message == "" {
			t.Errorf("%s %s = %d %+v, want gdapi %d", c.method, c.path, st, apiErr, c.status)
		}
	}
	for _, p := range []string{"/v1/volumes/", "/v1/volumes?", "/v1/volumes?limit=5&sort=name&x=", "/v1/settings/auto-salvage/?a=b"} {
		if st, _, body := e.getRaw(p, nil); st != 200 {
			t.Errorf("GET %s = %d %s", p, st, body)
		}
	}
	var apiErr Error
	if st := e.do("POST", "/v1/volumes/nope", nil, &apiErr); st != 400 || apiErr.Code != CodeInvalidAction || !strings.Contains(apiErr.Message, "attach") {
		t.Errorf("POST without action = %d %+v", st, apiErr)
	}
}

// TestBootstrapFromV1: a client started from /v1 (not /v1/schemas) finds
// the schemas through X-API-Schemas; / and /v1/apiversions list v1; the
// schema type exists; links follow X-Forwarded-Host/Proto.
func TestBootstrapFromV1(t *testing.T) {
	e := newFakeEnv(t, Options{})
	st, hdr, body := e.getRaw("/v1", nil)
	var root Resource
	if err := json.Unmarshal(body, &root); err != nil || st != 200 || root.Type != "apiVersion" || root.Links["volumes"] != e.srv.URL+"/v1/volumes" {
		t.Fatalf("GET /v1 = %d %s", st, body)
	}
	if hdr.Get("X-API-Schemas") != e.srv.URL+"/v1/schemas" {
		t.Fatalf("X-API-Schemas = %q", hdr.Get("X-API-Schemas"))
	}
	for _, p := range []string{"/", "/v1/apiversions"} {
		var c struct {
			Data  []Resource
			Links map[string]string
		}
		if st := e.do("GET", p, nil, &c); st != 200 || len(c.Data) != 1 || c.Data[0].ID != "v1" || c.Links["latest"] != e.srv.URL+"/v1" {
			t.Errorf("GET %s = %d %+v", p, st, c)
		}
	}
	var sc Schema
	if st := e.do("GET", "/v1/schemas/schema", nil, &sc); st != 200 || sc.ResourceFields["resourceFields"].Type == "" {
		t.Errorf("schema schema = %d %+v", st, sc)
	}
	_, _, body = e.getRaw("/v1/volumes", map[string]string{"X-Forwarded-Host": "longhorn.example.com", "X-Forwarded-Proto": "https"})
	var coll struct{ Links map[string]string }
	if err := json.Unmarshal(body, &coll); err != nil || coll.Links["self"] != "https://longhorn.example.com/v1/volumes" {
		t.Errorf("forwarded links %s", body)
	}
}

// TestTimestampsInGoForm: created is Go's time.Time.String() form, which
// Longhorn's UI parses.
func TestTimestampsInGoForm(t *testing.T) {
	v := testVolume("vol", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown)
	v.CreationTimestamp.Time = time.Date(2026, 12, 1, 18, 49, 0, 0, time.UTC)
	e := newFakeEnv(t, Options{}, v)
	var res Volume
	if st := e.do("GET", "/v1/volumes/vol", nil, &res); st != 200 || res.Created != "2026-12-01 18:49:00 +0000 UTC" {
		t.Errorf("created = %q (%d)", res.Created, st)
	}
}

// TestVolumeAttachmentShape: tickets show Longhorn's attachmentID,
// attachmentType, nodeID, parameters, satisfied and conditions.
func TestVolumeAttachmentShape(t *testing.T) {
	va := &longhorn.VolumeAttachment{ObjectMeta: objMeta("vol"), Spec: longhorn.VolumeAttachmentSpec{Volume: "vol",
		AttachmentTickets: map[string]*longhorn.AttachmentTicket{"csi-abc": {ID: "csi-abc", Type: longhorn.AttacherTypeCSIAttacher,
			NodeID: "n1", Parameters: map[string]string{"disableFrontend": "false"}, Generation: 2}}},
		Status: longhorn.VolumeAttachmentStatus{AttachmentTicketStatuses: map[string]*longhorn.AttachmentTicketStatus{
			"csi-abc": {ID: "csi-abc", Satisfied: true, Generation: 2, Conditions: []longhorn.Condition{{Type: "Satisfied", Status: "True"}}}}}}
	e := newFakeEnv(t, Options{}, va, testVolume("vol", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy))
	var got VolumeAttachment
	if st := e.do("GET", "/v1/volumeattachments/vol", nil, &got); st != 200 {
		t.Fatalf("GET = %d", st)
	}
	a := got.Attachments["csi-abc"]
	if a.AttachmentID != "csi-abc" || a.AttachmentType != "csi-attacher" || a.NodeID != "n1" || !a.Satisfied ||
		a.Parameters["disableFrontend"] != "false" || len(a.Conditions) != 1 {
		t.Errorf("attachment %+v", a)
	}
	var v Volume
	if st := e.do("GET", "/v1/volumes/vol", nil, &v); st != 200 || !v.VolumeAttachment.Attachments["csi-abc"].Satisfied {
		t.Errorf("volume's attachment = %d %+v", st, v.VolumeAttachment)
	}
}

// TestEventsAndTags: /v1/events lists the namespace's Events; disktags and
// nodetags the distinct tags of all nodes.
func TestEventsAndTags(t *testing.T) {
	kube := kubefake.NewClientset(&corev1.Event{ObjectMeta: objMeta("vol.1"), Type: "Normal", Reason: "Attached", Message: "attached"})
	events := NewEventInformer(kube, ns, 0)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go events.Run(stop)
	if !cache.WaitForCacheSync(stop, events.HasSynced) {
		t.Fatal("event informer not synced")
	}
	n1, n2 := testNode("n1"), testNode("n2")
	n1.Spec.Tags, n2.Spec.Tags = []string{"fast", "b"}, []string{"fast"}
	d := n2.Spec.Disks["default-disk"]
	d.Tags = []string{"ssd"}
	n2.Spec.Disks["default-disk"] = d
	e := newFakeEnv(t, Options{Events: events}, n1, n2)
	var ev struct{ Data []Event }
	if st := e.do("GET", "/v1/events", nil, &ev); st != 200 || len(ev.Data) != 1 || ev.Data[0].EventType != "Normal" || ev.Data[0].Event.Reason != "Attached" {
		t.Errorf("events = %d %+v", st, ev)
	}
	var tags struct{ Data []Tag }
	if st := e.do("GET", "/v1/nodetags", nil, &tags); st != 200 || len(tags.Data) != 2 || tags.Data[0].Name != "b" || tags.Data[1].TagType != "node" {
		t.Errorf("nodetags = %d %+v", st, tags)
	}
	if st := e.do("GET", "/v1/disktags", nil, &tags); st != 200 || len(tags.Data) != 1 || tags.Data[0].Name != "ssd" || tags.Data[0].TagType != "disk" {
		t.Errorf("disktags = %d %+v", st, tags)
	}
}

// TestVolumeProgressFields: rebuild, purge and restore progress keyed by
// replica address in the engine's status show with replica names, with the
// backup block size and the controllers' actual size.
func TestVolumeProgressFields(t *testing.T) {
	v := testVolume("vol", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessDegraded)
	eng := &longhorn.Engine{ObjectMeta: objMeta("vol-e-0"), Spec: longhorn.EngineSpec{
		InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol", NodeID: "n1"}, Active: true,
		ReplicaAddressMap: map[string]string{"vol-r-1": "10.0.0.1:10000", "vol-r-2": "10.0.0.2:10000"}},
		Status: longhorn.EngineStatus{
			RebuildStatus: map[string]*longhorn.RebuildStatus{"tcp://10.0.0.2:10000": {IsRebuilding: true, Progress: 40,
				State: "in_progress", FromReplicaAddress: "tcp://10.0.0.1:10000"}},
			PurgeStatus:    map[string]*longhorn.PurgeStatus{"tcp://10.0.0.1:10000": {IsPurging: true, Progress: 10}},
			RestoreStatus:  map[string]*longhorn.RestoreStatus{"tcp://10.0.0.1:10000": {IsRestoring: false, LastRestored: "b1"}},
			Snapshots:      map[string]*longhorn.SnapshotInfo{"s1": {Name: "s1", Size: "4096"}, "volume-head": {Name: "volume-head", Size: "8192"}},
			ReplicaModeMap: map[string]longhorn.ReplicaMode{"vol-r-1": "RW", "vol-r-2": "WO"}}}
	rep := func(name string) *longhorn.Replica {
		return &longhorn.Replica{ObjectMeta: objMeta(name), Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol"}}}
	}
	e := newFakeEnv(t, Options{}, v, eng, rep("vol-r-1"), rep("vol-r-2"))
	var got Volume
	if st := e.do("GET", "/v1/volumes/vol", nil, &got); st != 200 {
		t.Fatalf("GET = %d", st)
	}
	if len(got.RebuildStatus) != 1 || got.RebuildStatus[0].Replica != "vol-r-2" || got.RebuildStatus[0].FromReplica != "vol-r-1" ||
		got.RebuildStatus[0].Progress != 40 || !got.RebuildStatus[0].IsRebuilding {
		t.Errorf("rebuildStatus %+v", got.RebuildStatus)
	}
	if len(got.PurgeStatus) != 1 || got.PurgeStatus[0].Replica != "vol-r-1" || len(got.RestoreStatus) != 1 || got.RestoreStatus[0].LastRestored != "b1" {
		t.Errorf("purge %+v restore %+v", got.PurgeStatus, got.RestoreStatus)
	}
	if got.BackupBlockSize != "2097152" || got.BackupStatus == nil || len(got.Controllers) != 1 || got.Controllers[0].ActualSize != "12288" {
		t.Errorf("backupBlockSize %q backupStatus %v controllers %+v", got.BackupBlockSize, got.BackupStatus, got.Controllers)
	}
	if got.Replicas[1].Mode != "WO" {
		t.Errorf("replicas %+v", got.Replicas)
	}
}

func TestBaseURLFromForwardedHeaders(t *testing.T) {
	for _, c := range []struct {
		host  string
		hdr   map[string]string
		wants string
	}{
		{"10.0.0.1:9500", nil, "http://10.0.0.1:9500"},
		{"10.0.0.1:9500", map[string]string{"X-Forwarded-Host": "ui.example.com", "X-Forwarded-Proto": "https"}, "https://ui.example.com"},
		{"10.0.0.1:9500", map[string]string{"X-Forwarded-Host": "ui.example.com:8443, proxy", "X-Forwarded-Proto": "https, http"}, "https://ui.example.com:8443"},
		{"10.0.0.1:9500", map[string]string{"X-Forwarded-Port": "443", "X-Forwarded-Proto": "https"}, "https://10.0.0.1"},
		{"[fd00::1]:9500", map[string]string{"X-Forwarded-Port": "8080"}, "http://[fd00::1]:8080"},
		{"10.0.0.1:9500", map[string]string{"X-Forwarded-Host": "evil/path", "X-Forwarded-Proto": "gopher"}, "http://10.0.0.1:9500"},
	} {
		r := &http.Request{Host: c.host, Header: http.Header{}}
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if got := baseURL(r); got != c.wants {
			t.Errorf("baseURL(%s %v) = %s, want %s", c.host, c.hdr, got, c.wants)
		}
	}
}

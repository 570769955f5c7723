package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func TestAttachDetachTickets(t *testing.T) {
	e := newFakeEnv(t, Options{}, testNode("n1"), testNode("n2"),
		testVolume("vol", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown))
	var v Volume
	st := e.do("POST", "/v1/volumes/vol?action=attach", AttachInput{HostID: "n1", DisableFrontend: true, AttachedBy: "me"}, &v)
	if st != 200 || v.ID != "vol" {
		t.Fatalf("attach = %d %+v", st, v)
	}
	va, err := e.client.LonghornV1beta2().VolumeAttachments(ns).Get(t.Context(), "vol", metavOpts)
	if err != nil {
		t.Fatal(err)
	}
	tk := va.Spec.AttachmentTickets["longhorn-api-n1"]
	if va.Spec.Volume != "vol" || tk == nil || tk.Type != longhorn.AttacherTypeLonghornAPI || tk.NodeID != "n1" ||
		tk.Parameters[longhorn.AttachmentParameterDisableFrontend] != "true" || tk.Parameters[longhorn.AttachmentParameterLastAttachedBy] != "me" {
		t.Fatalf("VolumeAttachment %+v ticket %+v", va.Spec, tk)
	}
	// A second ticket with its own ID on another node; the first stays.
	eventually(t, "attachment cached", func() bool { _, err := e.ds.GetVolumeAttachmentRO(t.Context(), "vol"); return err == nil })
	if st := e.do("POST", "/v1/volumes/vol?action=attach", AttachInput{HostID: "n2", AttachmentID: "job-7"}, &v); st != 200 {
		t.Fatalf("attach 2 = %d", st)
	}
	eventually(t, "two tickets", func() bool {
		va, err := e.ds.GetVolumeAttachmentRO(t.Context(), "vol")
		return err == nil && len(va.Spec.AttachmentTickets) == 2 && va.Spec.AttachmentTickets["longhorn-api-job-7"] != nil
	})
	var apiErr Error
	if st := e.do("POST", "/v1/volumes/vol?action=attach", AttachInput{HostID: "nowhere"}, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "hostId") {
		t.Errorf("attach to unknown node = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=attach", AttachInput{}, &apiErr); st != 422 {
		t.Errorf("attach without host = %d", st)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=detach", DetachInput{HostID: "n1"}, &v); st != 200 {
		t.Fatalf("detach = %d", st)
	}
	eventually(t, "n1 ticket removed", func() bool {
		va, err := e.ds.GetVolumeAttachmentRO(t.Context(), "vol")
		return err == nil && len(va.Spec.AttachmentTickets) == 1 && va.Spec.AttachmentTickets["longhorn-api-job-7"] != nil
	})
	if st := e.do("POST", "/v1/volumes/vol?action=detach", DetachInput{AttachmentID: "job-7"}, &v); st != 200 {
		t.Fatalf("detach job-7 = %d", st)
	}
	eventually(t, "no tickets", func() bool {
		va, err := e.ds.GetVolumeAttachmentRO(t.Context(), "vol")
		return err == nil && len(va.Spec.AttachmentTickets) == 0
	})
	if st := e.do("POST", "/v1/volumes/vol?action=bogus", nil, &apiErr); st != 400 || apiErr.Code != CodeInvalidAction {
		t.Errorf("bogus action = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/missing?action=attach", AttachInput{HostID: "n1"}, &apiErr); st != 404 {
		t.Errorf("attach missing volume = %d", st)
	}
}

func TestExpandReplicaCountSalvage(t *testing.T) {
	failed := &longhorn.Replica{ObjectMeta: objMeta("faulty-r-1"), Spec: longhorn.ReplicaSpec{
		InstanceSpec: longhorn.InstanceSpec{VolumeName: "faulty"}, FailedAt: "2026-01-01T00:00:00Z"}}
	other := &longhorn.Replica{ObjectMeta: objMeta("x-r-1"), Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "x"}}}
	e := newFakeEnv(t, Options{}, testVolume("vol", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown),
		testVolume("faulty", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessFaulted), failed, other)
	var v Volume
	var apiErr Error
	if st := e.do("POST", "/v1/volumes/vol?action=expand", ExpandInput{Size: "512Mi"}, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "larger than the current size 1073741824") {
		t.Errorf("shrink = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=expand", ExpandInput{Size: "2Gi"}, &v); st != 200 || v.Size != "2147483648" {
		t.Errorf("expand = %d size %s", st, v.Size)
	}
	eventually(t, "expanded volume cached", func() bool {
		vol, err := e.ds.GetVolumeRO(t.Context(), "vol")
		return err == nil && vol.Spec.Size == 2<<30
	})
	if st := e.do("POST", "/v1/volumes/vol?action=updateReplicaCount", UpdateReplicaCountInput{ReplicaCount: 21}, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "between 1 and 20") {
		t.Errorf("replicaCount 21 = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=updateReplicaCount", UpdateReplicaCountInput{ReplicaCount: 2}, &v); st != 200 || v.NumberOfReplicas != 2 {
		t.Errorf("replicaCount 2 = %d %d", st, v.NumberOfReplicas)
	}
	// salvage: only on a faulted volume, only its own replicas.
	if st := e.do("POST", "/v1/volumes/vol?action=salvage", SalvageInput{Names: []string{"x"}}, &apiErr); st != 409 || !strings.Contains(apiErr.Message, "detached") {
		t.Errorf("salvage healthy = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/faulty?action=salvage", SalvageInput{Names: []string{"x-r-1"}}, &apiErr); st != 422 {
		t.Errorf("salvage foreign replica = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/faulty?action=expand", ExpandInput{Size: "4Gi"}, &apiErr); st != 409 {
		t.Errorf("expand faulted = %d", st)
	}
	if st := e.do("POST", "/v1/volumes/faulty?action=salvage", SalvageInput{Names: []string{"faulty-r-1"}}, &v); st != 200 {
		t.Fatalf("salvage = %d", st)
	}
	r, err := e.client.LonghornV1beta2().Replicas(ns).Get(t.Context(), "faulty-r-1", metavOpts)
	if err != nil || r.Spec.FailedAt != "" {
		t.Errorf("salvaged replica failedAt %q (%v)", r.Spec.FailedAt, err)
	}
}

// fakeSnapshots is an in-memory SnapshotOps for the handler tests.
type fakeSnapshots struct {
	snaps     map[string]*engineapi.Snapshot
	reverted  string
	purged    bool
	createErr error
}

func (f *fakeSnapshots) Create(_ context.Context, v *longhorn.Volume, name string, labels map[string]string) (string, error) {
	if v.Status.State != longhorn.VolumeStateAttached {
		return "", ErrNoEngine // as EngineSnapshots: no running engine
	}
	if f.createErr != nil {
		return "", f.createErr
	}
	if name == "" {
		name = "auto-1"
	}
	f.snaps[name] = &engineapi.Snapshot{Name: name, Parent: "", UserCreated: true, Size: 4096, Labels: maps.Clone(labels)}
	return name, nil
}
func (f *fakeSnapshots) List(context.Context, *longhorn.Volume) (map[string]*engineapi.Snapshot, error) {
	return f.snaps, nil
}
func (f *fakeSnapshots) Delete(_ context.Context, v *longhorn.Volume, name string) error {
	if v.Status.State != longhorn.VolumeStateAttached {
		return ErrNoEngine
	}
	s, ok := f.snaps[name]
	if !ok {
		return errors.New("no such snapshot")
	}
	s.Removed = true
	return nil
}
func (f *fakeSnapshots) Revert(_ context.Context, _ *longhorn.Volume, name string) error {
	f.reverted = name
	return nil
}
func (f *fakeSnapshots) Purge(context.Context, *longhorn.Volume) error { f.purged = true; return nil }

func TestSnapshotActions(t *testing.T) {
	ops := &fakeSnapshots{snaps: map[string]*engineapi.Snapshot{"volume-head": {Name: "volume-head"}}}
	attached := testVolume("att", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy)
	maint := testVolume("maint", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy)
	maint.Spec.DisableFrontend = true
	e := newFakeEnv(t, Options{Snapshots: ops}, attached, maint,
		testVolume("det", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown))
	var snap Snapshot
	if st := e.do("POST", "/v1/volumes/att?action=snapshotCreate", SnapshotInput{Name: "s1", Labels: map[string]string{"k": "v"}}, &snap); st != 200 ||
		snap.Name != "s1" || snap.Type != "snapshot" || snap.Labels["k"] != "v" || snap.Size != "4096" {
		t.Fatalf("snapshotCreate = %d %+v", st, snap)
	}
	var list struct {
		ResourceType string
		Data         []Snapshot
	}
	if st := e.do("POST", "/v1/volumes/att?action=snapshotList", nil, &list); st != 200 || list.ResourceType != "snapshot" || len(list.Data) != 2 {
		t.Fatalf("snapshotList = %d %+v", st, list)
	}
	if st := e.do("POST", "/v1/volumes/att?action=snapshotGet", SnapshotInput{Name: "s1"}, &snap); st != 200 || snap.Name != "s1" {
		t.Errorf("snapshotGet = %d", st)
	}
	var apiErr Error
	if st := e.do("POST", "/v1/volumes/att?action=snapshotGet", SnapshotInput{Name: "nope"}, &apiErr); st != 404 {
		t.Errorf("snapshotGet missing = %d", st)
	}
	if st := e.do("POST", "/v1/volumes/att?action=snapshotDelete", SnapshotInput{Name: "s1"}, nil); st != 200 || !ops.snaps["s1"].Removed {
		t.Errorf("snapshotDelete = %d", st)
	}
	if st := e.do("POST", "/v1/volumes/att?action=snapshotRevert", SnapshotInput{Name: "s1"}, &apiErr); st != 409 || !strings.Contains(apiErr.Message, "maintenance") {
		t.Errorf("revert with frontend = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/maint?action=snapshotRevert", SnapshotInput{Name: "s1"}, nil); st != 200 || ops.reverted != "s1" {
		t.Errorf("revert in maintenance = %d reverted %q", st, ops.reverted)
	}
	if st := e.do("POST", "/v1/volumes/att?action=snapshotPurge", nil, nil); st != 200 || !ops.purged {
		t.Errorf("purge = %d", st)
	}
	if st := e.do("POST", "/v1/volumes/det?action=snapshotCreate", SnapshotInput{Name: "s2"}, &apiErr); st != 409 || !strings.Contains(apiErr.Message, "detached") {
		t.Errorf("snapshot of detached = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/att?action=snapshotDelete", SnapshotInput{}, &apiErr); st != 422 {
		t.Errorf("delete without name = %d", st)
	}
	// A name in use is the client's mistake, not a server error: 409 with the reason.
	if st := e.do("POST", "/v1/volumes/att?action=snapshotCreate", SnapshotInput{Name: "s1"}, &apiErr); st != 409 ||
		!strings.Contains(apiErr.Message, `snapshot "s1" already exists`) {
		t.Errorf("duplicate snapshot name = %d %+v", st, apiErr)
	}
	// The engine's refusals keep their meaning (a race past the check above).
	for _, c := range []struct {
		err  error
		want int
	}{
		{status.Error(codes.FailedPrecondition, "precondition failed: snapshot already exists"), 409},
		{status.Error(codes.AlreadyExists, "snapshot already exists"), 409},
		{status.Error(codes.InvalidArgument, "bad name"), 400},
		{errors.New("engine crashed"), 500},
	} {
		ops.createErr = fmt.Errorf("10.0.0.1:8501: VolumeSnapshot: %w", c.err)
		if st := e.do("POST", "/v1/volumes/att?action=snapshotCreate", SnapshotInput{Name: "s9"}, &apiErr); st != c.want {
			t.Errorf("engine error %v = %d, want %d", c.err, st, c.want)
		}
	}
	ops.createErr = nil
	noOps := newFakeEnv(t, Options{}, testVolume("att", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy))
	if st := noOps.do("POST", "/v1/volumes/att?action=snapshotList", nil, &apiErr); st != http.StatusServiceUnavailable {
		t.Errorf("no snapshot ops = %d", st)
	}
}

func TestEngineSnapshotsNeedsARunningEngine(t *testing.T) {
	e := newFakeEnv(t, Options{}, testVolume("att", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy),
		&longhorn.Engine{ObjectMeta: objMeta("att-e-0"), Spec: longhorn.EngineSpec{Active: true,
			InstanceSpec: longhorn.InstanceSpec{VolumeName: "att"}},
			Status: longhorn.EngineStatus{InstanceStatus: longhorn.InstanceStatus{CurrentState: longhorn.InstanceStateStopped}}})
	h := engineapi.NewHandler(engineapi.HandlerOptions{})
	defer h.Close()
	ops := EngineSnapshots{DS: e.ds, Handler: h}
	v, _ := e.ds.GetVolumeRO(t.Context(), "att")
	if _, err := ops.List(t.Context(), v); !errors.Is(err, ErrNoEngine) {
		t.Errorf("List with a stopped engine: %v, want ErrNoEngine", err)
	}
	srv := newFakeEnv(t, Options{Snapshots: ops}, testVolume("att", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy))
	var apiErr Error
	if st := srv.do("POST", "/v1/volumes/att?action=snapshotList", nil, &apiErr); st != 409 || !strings.Contains(apiErr.Message, "no running engine") {
		t.Errorf("snapshotList without engine = %d %+v", st, apiErr)
	}
}

// A detach can stop the engine while a snapshot call is in flight: the
// call's error becomes the 409 of "no running engine" once the engine is
// no longer running, and stays as it was while the engine still runs.
func TestSnapshotCallErrorEngineStopped(t *testing.T) {
	running := func(desire, current longhorn.InstanceState, active bool) *longhorn.Engine {
		return &longhorn.Engine{Spec: longhorn.EngineSpec{Active: active, InstanceSpec: longhorn.InstanceSpec{DesireState: desire}},
			Status: longhorn.EngineStatus{InstanceStatus: longhorn.InstanceStatus{CurrentState: current}}}
	}
	up, stopped := longhorn.InstanceStateRunning, longhorn.InstanceStateStopped
	callErr := status.Error(codes.Unavailable, "connection refused")
	for _, c := range []struct {
		name    string
		engines []*longhorn.Engine
		noEng   bool
	}{
		{"still running", []*longhorn.Engine{running(up, up, true)}, false},
		{"asked to stop", []*longhorn.Engine{running(stopped, up, true)}, true},
		{"stopped", []*longhorn.Engine{running(stopped, stopped, true)}, true},
		{"inactive twin runs", []*longhorn.Engine{running(up, up, false)}, true},
		{"gone", nil, true},
	} {
		err := callError("v", callErr, c.engines)
		if errors.Is(err, ErrNoEngine) != c.noEng {
			t.Errorf("%s: %v, want ErrNoEngine %v", c.name, err, c.noEng)
		}
		var he *httpError
		if c.noEng && (!errors.As(snapshotErr(err), &he) || he.status != http.StatusConflict) {
			t.Errorf("%s: snapshotErr = %v, want 409", c.name, snapshotErr(err))
		}
	}
}

func TestNodes(t *testing.T) {
	e := newFakeEnv(t, Options{}, testNode("n1"),
		&longhorn.InstanceManager{ObjectMeta: objMeta("instance-manager-x"), Spec: longhorn.InstanceManagerSpec{NodeID: "n1"},
			Status: longhorn.InstanceManagerStatus{IP: "10.0.0.1"}})
	var n Node
	if st := e.do("GET", "/v1/nodes/n1", nil, &n); st != 200 || n.Address != "10.0.0.1" || !n.AllowScheduling ||
		n.Disks["default-disk"].Path != "/var/lib/longhorn" || n.Actions["diskUpdate"] == "" {
		t.Fatalf("GET node = %d %+v", st, n)
	}
	no := false
	tags := []string{"ssd", " fast", "ssd"}
	if st := e.do("PUT", "/v1/nodes/n1", NodeInput{AllowScheduling: &no, Tags: &tags}, &n); st != 200 || n.AllowScheduling ||
		strings.Join(n.Tags, ",") != "fast,ssd" {
		t.Fatalf("PUT node = %d %+v", st, n)
	}
	var apiErr Error
	bad := []string{"a b"}
	if st := e.do("PUT", "/v1/nodes/n1", NodeInput{Tags: &bad}, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "qualified name") {
		t.Errorf("bad tag = %d %+v", st, apiErr)
	}
	eventually(t, "node update cached", func() bool {
		nd, err := e.ds.GetNodeRO(t.Context(), "n1")
		return err == nil && !nd.Spec.AllowScheduling
	})
	// Tags are Kubernetes qualified names, prefix/name included (Longhorn's
	// util.ValidateTags). (The fake clientset has no resource versions: each
	// read-modify-write waits for the cache to hold the previous write.)
	qualified := []string{"example.com/fast", "zone_a.1"}
	if st := e.do("PUT", "/v1/nodes/n1", NodeInput{Tags: &qualified}, &n); st != 200 || strings.Join(n.Tags, ",") != "example.com/fast,zone_a.1" {
		t.Errorf("qualified-name tags = %d %+v", st, n.Tags)
	}
	eventually(t, "tags cached", func() bool {
		nd, err := e.ds.GetNodeRO(t.Context(), "n1")
		return err == nil && len(nd.Spec.Tags) == 2 && nd.Spec.Tags[0] == "example.com/fast"
	})
	// Removing a disk that still allows scheduling is refused with Longhorn's text.
	disks := DiskUpdateInput{Disks: map[string]longhorn.DiskSpec{"d2": {Path: "/mnt/d2", AllowScheduling: true, StorageReserved: 1 << 20}}}
	if st := e.do("POST", "/v1/nodes/n1?action=diskUpdate", disks, &apiErr); st != 422 ||
		!strings.Contains(apiErr.Message, "Please disable the disk /var/lib/longhorn and remove all replicas") {
		t.Fatalf("removing an enabled disk = %d %+v", st, apiErr)
	}
	off := DiskUpdateInput{Disks: map[string]longhorn.DiskSpec{"default-disk": {Path: "/var/lib/longhorn", AllowScheduling: false}}}
	if st := e.do("POST", "/v1/nodes/n1?action=diskUpdate", off, &n); st != 200 || n.Disks["default-disk"].AllowScheduling {
		t.Fatalf("disabling the disk = %d %+v", st, n.Disks)
	}
	eventually(t, "disk disabled in cache", func() bool {
		nd, err := e.ds.GetNodeRO(t.Context(), "n1")
		return err == nil && !nd.Spec.Disks["default-disk"].AllowScheduling
	})
	n = Node{}
	if st := e.do("POST", "/v1/nodes/n1?action=diskUpdate", disks, &n); st != 200 || len(n.Disks) != 1 ||
		n.Disks["d2"].DiskType != longhorn.DiskTypeFilesystem || n.Disks["d2"].StorageReserved != 1<<20 {
		t.Fatalf("diskUpdate = %d %+v", st, n.Disks)
	}
	if st := e.do("POST", "/v1/nodes/n1?action=diskUpdate", DiskUpdateInput{Disks: map[string]longhorn.DiskSpec{"x": {}}}, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "disks.x.path") {
		t.Errorf("disk without path = %d %+v", st, apiErr)
	}
	var ims struct{ Data []InstanceManager }
	if st := e.do("GET", "/v1/instancemanagers", nil, &ims); st != 200 || len(ims.Data) != 1 || ims.Data[0].IP != "10.0.0.1" {
		t.Errorf("instancemanagers = %d %+v", st, ims)
	}
	var eis struct{ Data []EngineImage }
	if st := e.do("GET", "/v1/engineimages", nil, &eis); st != 200 || eis.Data == nil {
		t.Errorf("engineimages = %d %+v", st, eis)
	}
}

func TestReplicaRemoveAndFieldUpdates(t *testing.T) {
	rep := &longhorn.Replica{ObjectMeta: objMeta("vol-r-1"), Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol"}}}
	e := newFakeEnv(t, Options{}, testVolume("vol", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy), rep,
		testVolume("other", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown))
	var apiErr Error
	if st := e.do("POST", "/v1/volumes/other?action=replicaRemove", ReplicaRemoveInput{Name: "vol-r-1"}, &apiErr); st != 422 {
		t.Errorf("remove foreign replica = %d", st)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=replicaRemove", ReplicaRemoveInput{Name: "vol-r-1"}, nil); st != 200 {
		t.Fatalf("replicaRemove = %d", st)
	}
	if _, err := e.client.LonghornV1beta2().Replicas(ns).Get(t.Context(), "vol-r-1", metavOpts); err == nil {
		t.Error("replica still exists")
	}
	var v Volume
	if st := e.do("POST", "/v1/volumes/vol?action=updateDataLocality", map[string]string{"dataLocality": "strict-local"}, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "exactly 1 replica") {
		t.Errorf("strict-local with 3 replicas = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=updateDataLocality", map[string]string{"dataLocality": "nearby"}, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "best-effort") {
		t.Errorf("bad locality = %d %+v", st, apiErr)
	}
	if st := e.do("POST", "/v1/volumes/vol?action=updateDataLocality", map[string]string{"dataLocality": "best-effort"}, &v); st != 200 || v.DataLocality != "best-effort" {
		t.Errorf("updateDataLocality = %d %s", st, v.DataLocality)
	}
	eventually(t, "locality cached", func() bool {
		vol, err := e.ds.GetVolumeRO(t.Context(), "vol")
		return err == nil && vol.Spec.DataLocality == "best-effort"
	})
	if st := e.do("POST", "/v1/volumes/vol?action=updateReplicaAutoBalance", map[string]string{"replicaAutoBalance": "least-effort"}, &v); st != 200 || v.ReplicaAutoBalance != "least-effort" {
		t.Errorf("updateReplicaAutoBalance = %d %s", st, v.ReplicaAutoBalance)
	}
}

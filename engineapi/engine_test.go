package engineapi

import (
	"context"
	"google.golang.org/protobuf/types/known/emptypb"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// stubEngine answers the engine's ControllerService with fixed data and
// records the last request and the proxy's metadata.
type stubEngine struct {
	enginerpc.UnimplementedControllerServiceServer
	md   metadata.MD
	last any
}

func (s *stubEngine) note(ctx context.Context, r any) {
	s.md, _ = metadata.FromIncomingContext(ctx)
	s.last = r
}

func (s *stubEngine) VersionDetailGet(ctx context.Context, _ *emptypb.Empty) (*enginerpc.VersionDetailGetReply, error) {
	return &enginerpc.VersionDetailGetReply{Version: &enginerpc.VersionOutput{Version: "v9", ControllerAPIVersion: 3, ControllerAPIMinVersion: 1}}, nil
}

func (s *stubEngine) VolumeGet(ctx context.Context, _ *emptypb.Empty) (*enginerpc.Volume, error) {
	s.note(ctx, nil)
	return &enginerpc.Volume{Name: "vol", Size: 1 << 20, ReplicaCount: 2, Endpoint: "nbd+unix:///vol?socket=/x", Frontend: "nbd", FrontendState: "up", State: "running"}, nil
}

func (s *stubEngine) VolumeExpand(ctx context.Context, r *enginerpc.VolumeExpandRequest) (*enginerpc.Volume, error) {
	s.note(ctx, r)
	return &enginerpc.Volume{}, nil
}

func (s *stubEngine) VolumeFrontendStart(ctx context.Context, r *enginerpc.VolumeFrontendStartRequest) (*enginerpc.Volume, error) {
	s.note(ctx, r)
	return &enginerpc.Volume{}, nil
}

func (s *stubEngine) VolumeFrontendShutdown(ctx context.Context, _ *emptypb.Empty) (*enginerpc.Volume, error) {
	s.note(ctx, "shutdown")
	return &enginerpc.Volume{}, nil
}

func (s *stubEngine) VolumeSnapshot(ctx context.Context, r *enginerpc.VolumeSnapshotRequest) (*enginerpc.VolumeSnapshotReply, error) {
	s.note(ctx, r)
	return &enginerpc.VolumeSnapshotReply{Name: "snap-" + r.GetName()}, nil
}

func (s *stubEngine) VolumeRevert(ctx context.Context, r *enginerpc.VolumeRevertRequest) (*enginerpc.Volume, error) {
	s.note(ctx, r)
	return nil, status.Error(codes.NotFound, "no snapshot "+r.GetName())
}

func (s *stubEngine) SnapshotList(ctx context.Context, _ *emptypb.Empty) (*enginerpc.SnapshotListReply, error) {
	return &enginerpc.SnapshotListReply{Snapshots: map[string]*enginerpc.Snapshot{
		"s1": {Name: "s1", Usercreated: true, Size: 8192, Labels: map[string]string{"a": "b"}},
	}}, nil
}

func (s *stubEngine) SnapshotRemove(ctx context.Context, r *enginerpc.SnapshotRemoveRequest) (*emptypb.Empty, error) {
	s.note(ctx, r)
	return &emptypb.Empty{}, nil
}

func (s *stubEngine) SnapshotPurge(ctx context.Context, r *enginerpc.SnapshotPurgeRequest) (*emptypb.Empty, error) {
	s.note(ctx, r)
	return &emptypb.Empty{}, nil
}

func (s *stubEngine) SnapshotPurgeStatus(context.Context, *emptypb.Empty) (*enginerpc.SnapshotPurgeStatusReply, error) {
	return &enginerpc.SnapshotPurgeStatusReply{Status: map[string]*enginerpc.SnapshotPurgeStatus{"tcp://r1": {IsPurging: true, Progress: 50}}}, nil
}

func (s *stubEngine) SnapshotClone(ctx context.Context, r *enginerpc.EngineSnapshotCloneRequest) (*emptypb.Empty, error) {
	s.note(ctx, r)
	return &emptypb.Empty{}, nil
}

func (s *stubEngine) SnapshotCloneStatus(context.Context, *emptypb.Empty) (*enginerpc.SnapshotCloneStatusReply, error) {
	return &enginerpc.SnapshotCloneStatusReply{Status: map[string]*enginerpc.SnapshotCloneStatus{"tcp://r1": {IsCloning: true, SnapshotName: "s1"}}}, nil
}

func (s *stubEngine) ReplicaAdd(ctx context.Context, r *enginerpc.ReplicaAddRequest) (*emptypb.Empty, error) {
	s.note(ctx, r)
	return &emptypb.Empty{}, nil
}

func (s *stubEngine) ReplicaList(context.Context, *emptypb.Empty) (*enginerpc.ReplicaListReply, error) {
	return &enginerpc.ReplicaListReply{Replicas: []*enginerpc.ControllerReplica{
		{Address: &enginerpc.ReplicaAddress{Address: "tcp://r1", InstanceName: "r-1"}, Mode: enginerpc.ReplicaMode_RW},
		{Address: &enginerpc.ReplicaAddress{Address: "tcp://r2"}, Mode: enginerpc.ReplicaMode_ERR},
	}}, nil
}

func (s *stubEngine) ReplicaDelete(ctx context.Context, r *enginerpc.ReplicaAddress) (*emptypb.Empty, error) {
	s.note(ctx, r)
	return &emptypb.Empty{}, nil
}

func (s *stubEngine) ReplicaRebuildingStatus(context.Context, *emptypb.Empty) (*enginerpc.ReplicaRebuildingStatusReply, error) {
	return &enginerpc.ReplicaRebuildingStatusReply{Status: map[string]*enginerpc.ReplicaRebuildStatus{"tcp://r3": {IsRebuilding: true, Progress: 10, FromReplicaAddressList: []string{"tcp://r1"}}}}, nil
}

func (s *stubEngine) ReplicaVerifyRebuild(ctx context.Context, r *enginerpc.ReplicaAddress) (*enginerpc.ControllerReplica, error) {
	s.note(ctx, r)
	return &enginerpc.ControllerReplica{Address: r, Mode: enginerpc.ReplicaMode_RW}, nil
}

func TestEngineClientThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	srv := startInProcessIM(t, "127.0.0.1:0", "127.0.0.1:0")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	eng := &stubEngine{}
	gs := grpc.NewServer()
	enginerpc.RegisterControllerServiceServer(gs, eng)
	enginerpc.RegisterControllerExtServiceServer(gs, stubExt{stubEngine: eng})
	go gs.Serve(l)
	defer gs.Stop()

	h := NewHandler(HandlerOptions{})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ec, err := h.Engine(ctx, IMAddress{Address: srv.Addr(), ProxyAddress: srv.ProxyAddr()}, EngineRef{Name: "vol-e-0", VolumeName: "vol", Address: l.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	v, err := ec.VolumeGet(ctx)
	check("VolumeGet", err)
	if v.Name != "vol" || v.Size != 1<<20 || v.ReplicaCount != 2 || v.FrontendState != "up" || eng.md.Get("volume-name")[0] != "vol" {
		t.Fatalf("volume %+v, metadata %v", v, eng.md)
	}
	ver, err := ec.VersionGet(ctx)
	check("VersionGet", err)
	if ver.Version != "v9" || ver.ControllerAPIVersion != 3 {
		t.Fatalf("version %+v", ver)
	}
	check("VolumeExpand", ec.VolumeExpand(ctx, 2<<20))
	if eng.last.(*enginerpc.VolumeExpandRequest).GetSize() != 2<<20 {
		t.Fatal("expand size not forwarded")
	}
	check("VolumeFrontendStart", ec.VolumeFrontendStart(ctx, "nbd"))
	check("VolumeFrontendShutdown", ec.VolumeFrontendShutdown(ctx))
	name, err := ec.VolumeSnapshot(ctx, "x", map[string]string{"k": "v"})
	check("VolumeSnapshot", err)
	if name != "snap-x" {
		t.Fatalf("snapshot name %q", name)
	}
	snaps, err := ec.SnapshotList(ctx)
	check("SnapshotList", err)
	if s := snaps["s1"]; s == nil || !s.UserCreated || s.Size != 8192 || s.Labels["a"] != "b" {
		t.Fatalf("snapshots %+v", snaps)
	}
	check("SnapshotRemove", ec.SnapshotRemove(ctx, "s1", "s2"))
	if got := eng.last.(*enginerpc.SnapshotRemoveRequest).GetNames(); !slices.Equal(got, []string{"s1", "s2"}) {
		t.Fatalf("removed %v", got)
	}
	if err := ec.SnapshotRevert(ctx, "nope"); !IsNotFound(err) {
		t.Fatalf("revert to missing snapshot: %v", err)
	}
	check("SnapshotPurge", ec.SnapshotPurge(ctx, true))
	ps, err := ec.SnapshotPurgeStatus(ctx)
	check("SnapshotPurgeStatus", err)
	if ps["tcp://r1"].Progress != 50 {
		t.Fatalf("purge status %+v", ps)
	}
	check("SnapshotClone", ec.SnapshotClone(ctx, SnapshotCloneRequest{FromEngineAddress: "127.0.0.1:1", SnapshotName: "s1", FromVolumeName: "src"}))
	cs, err := ec.SnapshotCloneStatus(ctx)
	check("SnapshotCloneStatus", err)
	if !cs["tcp://r1"].IsCloning {
		t.Fatalf("clone status %+v", cs)
	}
	check("ReplicaAdd", ec.ReplicaAdd(ctx, ReplicaAddRequest{Address: "tcp://r3", InstanceName: "r-3", Size: 1 << 20, FastSync: true}))
	if ra := eng.last.(*enginerpc.ReplicaAddRequest); ra.GetInstanceName() != "r-3" || !ra.GetFastSync() {
		t.Fatalf("replica add %v", ra)
	}
	reps, err := ec.ReplicaList(ctx)
	check("ReplicaList", err)
	if len(reps) != 2 || reps[0] != (Replica{Address: "tcp://r1", InstanceName: "r-1", Mode: ReplicaModeRW}) || reps[1].Mode != ReplicaModeERR {
		t.Fatalf("replicas %+v", reps)
	}
	rs, err := ec.ReplicaRebuildingStatus(ctx)
	check("ReplicaRebuildingStatus", err)
	if r := rs["tcp://r3"]; r == nil || !r.IsRebuilding || r.Progress != 10 || r.FromReplicaAddressList[0] != "tcp://r1" {
		t.Fatalf("rebuild status %+v", rs)
	}
	check("ReplicaVerifyRebuild", ec.ReplicaVerifyRebuild(ctx, "tcp://r3", "r-3"))
	check("ReplicaRemove", ec.ReplicaRemove(ctx, "tcp://r2", ""))
	if eng.last.(*enginerpc.ReplicaAddress).GetAddress() != "tcp://r2" {
		t.Fatal("replica remove not forwarded")
	}
}

// stubExt serves the stub's ControllerExtService methods; the embedded
// Unimplemented server sits one level deeper, so the stub's methods win.
type stubExt struct {
	extBase
	*stubEngine
}

type extBase struct {
	enginerpc.UnimplementedControllerExtServiceServer
}

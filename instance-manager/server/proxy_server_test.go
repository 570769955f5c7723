package server

import (
	"context"
	"google.golang.org/protobuf/types/known/emptypb"
	"net"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// fakeEngine is a ControllerService that records what it was asked.
type fakeEngine struct {
	enginerpc.UnimplementedControllerServiceServer
	mu    sync.Mutex
	calls []string
	md    metadata.MD
	last  any
}

func (f *fakeEngine) record(ctx context.Context, call string, req any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	f.md, _ = metadata.FromIncomingContext(ctx)
	f.last = req
}

func (f *fakeEngine) VolumeGet(ctx context.Context, _ *emptypb.Empty) (*enginerpc.Volume, error) {
	f.record(ctx, "VolumeGet", nil)
	return &enginerpc.Volume{Name: "vol1", Size: 1 << 30, ReplicaCount: 2, Frontend: "nbd", FrontendState: "up", State: "running"}, nil
}

func (f *fakeEngine) VolumeSnapshot(ctx context.Context, r *enginerpc.VolumeSnapshotRequest) (*enginerpc.VolumeSnapshotReply, error) {
	f.record(ctx, "VolumeSnapshot", r)
	return &enginerpc.VolumeSnapshotReply{Name: r.GetName() + "-taken"}, nil
}

func (f *fakeEngine) VolumeExpand(ctx context.Context, r *enginerpc.VolumeExpandRequest) (*enginerpc.Volume, error) {
	f.record(ctx, "VolumeExpand", r)
	return nil, status.Error(codes.FailedPrecondition, "cannot shrink")
}

func (f *fakeEngine) SnapshotList(ctx context.Context, _ *emptypb.Empty) (*enginerpc.SnapshotListReply, error) {
	f.record(ctx, "SnapshotList", nil)
	return &enginerpc.SnapshotListReply{Snapshots: map[string]*enginerpc.Snapshot{
		"s1":          {Name: "s1", Children: map[string]bool{"volume-head": true}, Usercreated: true, Size: 4096},
		"volume-head": {Name: "volume-head", Parent: "s1"},
	}}, nil
}

func (f *fakeEngine) ReplicaList(ctx context.Context, _ *emptypb.Empty) (*enginerpc.ReplicaListReply, error) {
	f.record(ctx, "ReplicaList", nil)
	return &enginerpc.ReplicaListReply{Replicas: []*enginerpc.ControllerReplica{
		{Address: &enginerpc.ReplicaAddress{Address: "tcp://127.0.0.1:1", InstanceName: "r1"}, Mode: enginerpc.ReplicaMode_RW},
		{Address: &enginerpc.ReplicaAddress{Address: "tcp://127.0.0.1:2", InstanceName: "r2"}, Mode: enginerpc.ReplicaMode_WO},
	}}, nil
}

func (f *fakeEngine) ReplicaAdd(ctx context.Context, r *enginerpc.ReplicaAddRequest) (*emptypb.Empty, error) {
	f.record(ctx, "ReplicaAdd", r)
	return &emptypb.Empty{}, nil
}

func (f *fakeEngine) ReplicaRebuildingStatus(ctx context.Context, _ *emptypb.Empty) (*enginerpc.ReplicaRebuildingStatusReply, error) {
	f.record(ctx, "ReplicaRebuildingStatus", nil)
	return &enginerpc.ReplicaRebuildingStatusReply{Status: map[string]*enginerpc.ReplicaRebuildStatus{
		"tcp://127.0.0.1:2": {IsRebuilding: true, Progress: 42, State: "in_progress", FromReplicaAddress: "tcp://127.0.0.1:1"},
	}}, nil
}

func (f *fakeEngine) ReplicaDelete(ctx context.Context, r *enginerpc.ReplicaAddress) (*emptypb.Empty, error) {
	f.record(ctx, "ReplicaDelete", r)
	return &emptypb.Empty{}, nil
}

func startFakeEngine(t *testing.T) (*fakeEngine, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fe := &fakeEngine{}
	s := grpc.NewServer()
	enginerpc.RegisterControllerServiceServer(s, fe)
	enginerpc.RegisterControllerExtServiceServer(s, fakeExt{fakeEngine: fe})
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return fe, l.Addr().String()
}

func TestProxyForwards(t *testing.T) {
	im := startIM(t, 1)
	fe, addr := startFakeEngine(t)
	ctx := ctxT(t)
	per := &imrpc.ProxyEngineRequest{Address: addr, EngineName: "vol1-e-0", VolumeName: "vol1"}

	v, err := im.proxy.VolumeGet(ctx, per)
	if err != nil || v.GetVolume().GetName() != "vol1" || v.GetVolume().GetSize() != 1<<30 || v.GetVolume().GetFrontendState() != "up" {
		t.Fatalf("VolumeGet %v %v", v, err)
	}
	if got := fe.md.Get(MetadataVolumeName); len(got) != 1 || got[0] != "vol1" || fe.md.Get(MetadataInstanceName)[0] != "vol1-e-0" {
		t.Fatalf("metadata %v", fe.md)
	}
	snap, err := im.proxy.VolumeSnapshot(ctx, &imrpc.EngineVolumeSnapshotRequest{ProxyEngineRequest: per, Name: "s2", Labels: map[string]string{"k": "v"}})
	if err != nil || snap.GetName() != "s2-taken" || fe.last.(*enginerpc.VolumeSnapshotRequest).GetLabels()["k"] != "v" {
		t.Fatalf("VolumeSnapshot %v %v", snap, err)
	}
	list, err := im.proxy.SnapshotList(ctx, per)
	if err != nil || list.GetDisks()["s1"].GetSize() != 4096 || !list.GetDisks()["s1"].GetChildren()["volume-head"] {
		t.Fatalf("SnapshotList %v %v", list, err)
	}
	reps, err := im.proxy.ReplicaList(ctx, per)
	if err != nil || len(reps.GetReplicaList()) != 2 || reps.GetReplicaList()[1].GetMode() != imrpc.ReplicaMode_WO || reps.GetReplicaList()[0].GetInstanceName() != "r1" {
		t.Fatalf("ReplicaList %v %v", reps, err)
	}
	if _, err := im.proxy.ReplicaAdd(ctx, &imrpc.EngineReplicaAddRequest{ProxyEngineRequest: per, ReplicaAddress: "tcp://127.0.0.1:3", ReplicaName: "r3", Size: 4096, FastSync: true}); err != nil {
		t.Fatal(err)
	}
	if ra := fe.last.(*enginerpc.ReplicaAddRequest); ra.GetAddress() != "tcp://127.0.0.1:3" || ra.GetInstanceName() != "r3" || !ra.GetFastSync() || ra.GetSize() != 4096 {
		t.Fatalf("forwarded ReplicaAdd %v", ra)
	}
	rs, err := im.proxy.ReplicaRebuildingStatus(ctx, per)
	if err != nil || rs.GetStatus()["tcp://127.0.0.1:2"].GetProgress() != 42 {
		t.Fatalf("ReplicaRebuildingStatus %v %v", rs, err)
	}
	if _, err := im.proxy.ReplicaRemove(ctx, &imrpc.EngineReplicaRemoveRequest{ProxyEngineRequest: per, ReplicaAddress: "tcp://127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	// Engine errors keep their code.
	_, err = im.proxy.VolumeExpand(ctx, &imrpc.EngineVolumeExpandRequest{ProxyEngineRequest: per, Size: 1})
	wantCode(t, "engine error", err, codes.FailedPrecondition, "cannot shrink")
	_, err = im.proxy.SnapshotPurge(ctx, &imrpc.EngineSnapshotPurgeRequest{ProxyEngineRequest: per})
	wantCode(t, "method the engine lacks", err, codes.Unimplemented, "SnapshotPurge")
}

func TestProxyRefusals(t *testing.T) {
	im := startIM(t, 1)
	ctx := ctxT(t)
	dead := testutil.FreePort(t)
	cases := []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"no request", func() error { _, err := im.proxy.VolumeGet(ctx, nil); return err }, codes.InvalidArgument, "address is required"},
		{"bad address", func() error {
			_, err := im.proxy.VolumeGet(ctx, &imrpc.ProxyEngineRequest{Address: "nohost"})
			return err
		}, codes.InvalidArgument, "want HOST:PORT"},
		{"bad port", func() error {
			_, err := im.proxy.VolumeGet(ctx, &imrpc.ProxyEngineRequest{Address: "127.0.0.1:70000"})
			return err
		}, codes.InvalidArgument, "1..65535"},
		{"v2", func() error {
			_, err := im.proxy.VolumeGet(ctx, &imrpc.ProxyEngineRequest{Address: "127.0.0.1:1", DataEngine: imrpc.DataEngine_DATA_ENGINE_V2})
			return err
		}, codes.InvalidArgument, "v1"},
		{"unreachable engine", func() error {
			_, err := im.proxy.VolumeGet(ctx, &imrpc.ProxyEngineRequest{Address: net.JoinHostPort("127.0.0.1", itoa(dead))})
			return err
		}, codes.Unavailable, "engine 127.0.0.1"},
		{"expand to 0", func() error {
			_, err := im.proxy.VolumeExpand(ctx, &imrpc.EngineVolumeExpandRequest{})
			return err
		}, codes.InvalidArgument, "size 0"},
		{"remove nothing", func() error {
			_, err := im.proxy.SnapshotRemove(ctx, &imrpc.EngineSnapshotRemoveRequest{})
			return err
		}, codes.InvalidArgument, "names is required"},
		{"backup", func() error {
			_, err := im.proxy.SnapshotBackup(ctx, &imrpc.EngineSnapshotBackupRequest{})
			return err
		}, codes.InvalidArgument, "snapshot_name, target.url"},
		{"backup cancel", func() error {
			_, err := imrpc.NewProxyEngineExtServiceClient(im.pconn).SnapshotBackupCancel(ctx, &imrpc.EngineSnapshotBackupCancelRequest{})
			return err
		}, codes.InvalidArgument, "backup_name is required"},
		{"backup cancel, unreachable engine", func() error {
			_, err := imrpc.NewProxyEngineExtServiceClient(im.pconn).SnapshotBackupCancel(ctx, &imrpc.EngineSnapshotBackupCancelRequest{
				ProxyEngineRequest: &imrpc.ProxyEngineRequest{Address: net.JoinHostPort("127.0.0.1", itoa(dead))}, BackupName: "b"})
			return err
		}, codes.Unavailable, "engine replica list"},
		{"backup volume list", func() error {
			_, err := im.proxy.BackupVolumeList(ctx, &imrpc.EngineBackupVolumeListRequest{})
			return err
		}, codes.InvalidArgument, "target.url is required"},
		{"backup volume list, bad target", func() error {
			_, err := im.proxy.BackupVolumeList(ctx, &imrpc.EngineBackupVolumeListRequest{Target: &imrpc.BackupTarget{Url: "ftp://x/"}})
			return err
		}, codes.InvalidArgument, "unknown scheme"},
	}
	for _, c := range cases {
		wantCode(t, c.name, c.call(), c.code, c.msg)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestProxyMethodMap calls every forwarding method against an engine that
// implements nothing: each must reach the engine method it stands for (the
// engine names it in its Unimplemented answer) and keep the engine's code.
func TestProxyMethodMap(t *testing.T) {
	im := startIM(t, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	enginerpc.RegisterControllerServiceServer(s, enginerpc.UnimplementedControllerServiceServer{})
	enginerpc.RegisterControllerExtServiceServer(s, enginerpc.UnimplementedControllerExtServiceServer{})
	go s.Serve(l)
	t.Cleanup(s.Stop)
	ctx := ctxT(t)
	per := &imrpc.ProxyEngineRequest{Address: l.Addr().String()}
	p := im.proxy
	calls := map[string]func() error{
		"VersionDetailGet": func() error { _, err := p.ServerVersionGet(ctx, per); return err },
		"VolumeGet":        func() error { _, err := p.VolumeGet(ctx, per); return err },
		"VolumeExpand": func() error {
			_, err := p.VolumeExpand(ctx, &imrpc.EngineVolumeExpandRequest{ProxyEngineRequest: per, Size: 1})
			return err
		},
		"VolumeFrontendStart": func() error {
			_, err := p.VolumeFrontendStart(ctx, &imrpc.EngineVolumeFrontendStartRequest{ProxyEngineRequest: per})
			return err
		},
		"VolumeFrontendShutdown": func() error { _, err := p.VolumeFrontendShutdown(ctx, per); return err },
		"VolumeSnapshot": func() error {
			_, err := p.VolumeSnapshot(ctx, &imrpc.EngineVolumeSnapshotRequest{ProxyEngineRequest: per})
			return err
		},
		"SnapshotList": func() error { _, err := p.SnapshotList(ctx, per); return err },
		"VolumeRevert": func() error {
			_, err := p.SnapshotRevert(ctx, &imrpc.EngineSnapshotRevertRequest{ProxyEngineRequest: per, Name: "s"})
			return err
		},
		"SnapshotPurge": func() error {
			_, err := p.SnapshotPurge(ctx, &imrpc.EngineSnapshotPurgeRequest{ProxyEngineRequest: per})
			return err
		},
		"SnapshotPurgeStatus": func() error { _, err := p.SnapshotPurgeStatus(ctx, per); return err },
		"SnapshotClone": func() error {
			_, err := p.SnapshotClone(ctx, &imrpc.EngineSnapshotCloneRequest{ProxyEngineRequest: per, SnapshotName: "s", FromEngineAddress: "a:1"})
			return err
		},
		"SnapshotCloneStatus": func() error { _, err := p.SnapshotCloneStatus(ctx, per); return err },
		"SnapshotRemove": func() error {
			_, err := p.SnapshotRemove(ctx, &imrpc.EngineSnapshotRemoveRequest{ProxyEngineRequest: per, Names: []string{"s"}})
			return err
		},
		"ReplicaAdd": func() error {
			_, err := p.ReplicaAdd(ctx, &imrpc.EngineReplicaAddRequest{ProxyEngineRequest: per, ReplicaAddress: "tcp://a:1"})
			return err
		},
		"ReplicaList":             func() error { _, err := p.ReplicaList(ctx, per); return err },
		"ReplicaRebuildingStatus": func() error { _, err := p.ReplicaRebuildingStatus(ctx, per); return err },
		"ReplicaVerifyRebuild": func() error {
			_, err := p.ReplicaVerifyRebuild(ctx, &imrpc.EngineReplicaVerifyRebuildRequest{ProxyEngineRequest: per, ReplicaAddress: "tcp://a:1"})
			return err
		},
		"ReplicaDelete": func() error {
			_, err := p.ReplicaRemove(ctx, &imrpc.EngineReplicaRemoveRequest{ProxyEngineRequest: per, ReplicaAddress: "tcp://a:1"})
			return err
		},
	}
	for method, call := range calls {
		wantCode(t, method, call(), codes.Unimplemented, "method "+method+" not implemented")
	}
}

// fakeExt serves the fake's ControllerExtService methods; the embedded
// Unimplemented server sits one level deeper, so the fake's methods win.
type fakeExt struct {
	extBase
	*fakeEngine
}

type extBase struct {
	enginerpc.UnimplementedControllerExtServiceServer
}

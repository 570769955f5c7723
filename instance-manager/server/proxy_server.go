package server

import (
	"context"
	"net"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// gRPC metadata keys the proxy sets on forwarded calls so an engine can refuse
// a call meant for another volume or instance that reused its address
// (longhorn-engine's interceptor reads the same keys).
const (
	MetadataVolumeName   = "volume-name"
	MetadataInstanceName = "instance-name"
)

// proxyServer is imrpc.ProxyEngineService: a thin forwarder to the engine
// named in each request. Rebuild, snapshot list/remove/purge and clone are
// orchestrated by the engine itself (its ControllerExtService,
// engine/rpc/extensions.proto).
type proxyServer struct {
	imrpc.UnimplementedProxyEngineServiceServer
	conns *engineConns
}

// engine validates req and returns the context (with the forwarding metadata)
// and client for the engine it names.
func (s *proxyServer) engine(ctx context.Context, req *imrpc.ProxyEngineRequest) (context.Context, engineClient, error) {
	if req == nil {
		return nil, nil, invalidArg("proxy_engine_request is required")
	}
	if err := checkDataEngine(req.GetDataEngine()); err != nil {
		return nil, nil, err
	}
	if err := validateEngineAddress(req.GetAddress()); err != nil {
		return nil, nil, err
	}
	c, err := s.conns.client(req.GetAddress())
	if err != nil {
		return nil, nil, status.Errorf(codes.Unavailable, "engine %s: %v", req.GetAddress(), err)
	}
	var md []string
	if v := req.GetVolumeName(); v != "" {
		md = append(md, MetadataVolumeName, v)
	}
	if n := req.GetEngineName(); n != "" {
		md = append(md, MetadataInstanceName, n)
	}
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	return ctx, c, nil
}

// validateEngineAddress accepts "HOST:PORT" with a port in 1..65535.
func validateEngineAddress(addr string) error {
	if addr == "" {
		return invalidArg("proxy_engine_request.address is required")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return invalidArg("proxy_engine_request.address %q: want HOST:PORT", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return invalidArg("proxy_engine_request.address %q: port must be 1..65535", addr)
	}
	return nil
}

// fromEngine keeps the engine's status code and says which engine answered.
func fromEngine(addr string, err error) error {
	st, _ := status.FromError(err)
	return status.Errorf(st.Code(), "engine %s: %s", addr, st.Message())
}

// engineCall is an engineClient method taken as a method expression
// (engineClient.VolumeGet, ...).
type engineCall[In, Out any] func(engineClient, context.Context, In, ...grpc.CallOption) (Out, error)

// forward is the body of every proxy method: it resolves the engine named
// in pr (validation, connection, forwarding metadata), calls it with in and
// converts its reply with out. An engine error keeps its gRPC code and names
// the engine's address.
func forward[In, EngineOut, Out any](ctx context.Context, s *proxyServer, pr *imrpc.ProxyEngineRequest,
	call engineCall[In, EngineOut], in In, out func(EngineOut) Out) (Out, error) {
	var zero Out
	ctx, c, err := s.engine(ctx, pr)
	if err != nil {
		return zero, err
	}
	r, err := call(c, ctx, in)
	if err != nil {
		return zero, fromEngine(pr.GetAddress(), err)
	}
	return out(r), nil
}

// empty is the conversion of calls whose proxy answer is imrpc.Empty.
func empty[T any](T) *imrpc.Empty { return &imrpc.Empty{} }

// none is the engine request of calls that take no arguments.
var none = &emptypb.Empty{}

func (s *proxyServer) Ping(context.Context, *imrpc.Empty) (*imrpc.Empty, error) {
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) ServerVersionGet(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineVersionProxyResponse, error) {
	return forward(ctx, s, req, engineClient.VersionDetailGet, none,
		func(v *enginerpc.VersionDetailGetReply) *imrpc.EngineVersionProxyResponse {
			return &imrpc.EngineVersionProxyResponse{Version: versionFromEngine(v)}
		})
}

func (s *proxyServer) VolumeGet(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineVolumeGetProxyResponse, error) {
	return forward(ctx, s, req, engineClient.VolumeGet, none,
		func(v *enginerpc.Volume) *imrpc.EngineVolumeGetProxyResponse {
			return &imrpc.EngineVolumeGetProxyResponse{Volume: volumeFromEngine(v)}
		})
}

func (s *proxyServer) VolumeExpand(ctx context.Context, req *imrpc.EngineVolumeExpandRequest) (*imrpc.Empty, error) {
	if req.GetSize() <= 0 {
		return nil, invalidArg("size %d: must be > 0 bytes", req.GetSize())
	}
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.VolumeExpand,
		&enginerpc.VolumeExpandRequest{Size: req.GetSize()}, empty)
}

func (s *proxyServer) VolumeFrontendStart(ctx context.Context, req *imrpc.EngineVolumeFrontendStartRequest) (*imrpc.Empty, error) {
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.VolumeFrontendStart,
		&enginerpc.VolumeFrontendStartRequest{Frontend: req.GetFrontend()}, empty)
}

func (s *proxyServer) VolumeFrontendShutdown(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.Empty, error) {
	return forward(ctx, s, req, engineClient.VolumeFrontendShutdown, none, empty)
}

func (s *proxyServer) VolumeSnapshot(ctx context.Context, req *imrpc.EngineVolumeSnapshotRequest) (*imrpc.EngineVolumeSnapshotProxyResponse, error) {
	in := &enginerpc.VolumeSnapshotRequest{Name: req.GetName(), Labels: req.GetLabels(), FreezeFilesystem: req.GetFreezeFilesystem()}
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.VolumeSnapshot, in,
		func(r *enginerpc.VolumeSnapshotReply) *imrpc.EngineVolumeSnapshotProxyResponse {
			return &imrpc.EngineVolumeSnapshotProxyResponse{Name: r.GetName()}
		})
}

func (s *proxyServer) SnapshotList(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineSnapshotListProxyResponse, error) {
	return forward(ctx, s, req, engineClient.SnapshotList, none,
		func(r *enginerpc.SnapshotListReply) *imrpc.EngineSnapshotListProxyResponse {
			return &imrpc.EngineSnapshotListProxyResponse{Disks: snapshotsFromEngine(r)}
		})
}

func (s *proxyServer) SnapshotRevert(ctx context.Context, req *imrpc.EngineSnapshotRevertRequest) (*imrpc.Empty, error) {
	if req.GetName() == "" {
		return nil, invalidArg("name is required")
	}
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.VolumeRevert,
		&enginerpc.VolumeRevertRequest{Name: req.GetName()}, empty)
}

func (s *proxyServer) SnapshotPurge(ctx context.Context, req *imrpc.EngineSnapshotPurgeRequest) (*imrpc.Empty, error) {
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.SnapshotPurge,
		&enginerpc.SnapshotPurgeRequest{SkipIfInProgress: req.GetSkipIfInProgress()}, empty)
}

func (s *proxyServer) SnapshotPurgeStatus(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineSnapshotPurgeStatusProxyResponse, error) {
	return forward(ctx, s, req, engineClient.SnapshotPurgeStatus, none,
		func(r *enginerpc.SnapshotPurgeStatusReply) *imrpc.EngineSnapshotPurgeStatusProxyResponse {
			return &imrpc.EngineSnapshotPurgeStatusProxyResponse{Status: purgeStatusFromEngine(r)}
		})
}

func (s *proxyServer) SnapshotClone(ctx context.Context, req *imrpc.EngineSnapshotCloneRequest) (*imrpc.Empty, error) {
	if req.GetSnapshotName() == "" || req.GetFromEngineAddress() == "" {
		return nil, invalidArg("snapshot_name and from_engine_address are required")
	}
	in := &enginerpc.EngineSnapshotCloneRequest{
		FromEngineAddress: req.GetFromEngineAddress(), FromVolumeName: req.GetFromVolumeName(),
		SnapshotName: req.GetSnapshotName(), ExportBackingImageIfExist: req.GetExportBackingImageIfExist(),
		FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout(),
	}
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.SnapshotClone, in, empty)
}

func (s *proxyServer) SnapshotCloneStatus(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineSnapshotCloneStatusProxyResponse, error) {
	return forward(ctx, s, req, engineClient.SnapshotCloneStatus, none,
		func(r *enginerpc.SnapshotCloneStatusReply) *imrpc.EngineSnapshotCloneStatusProxyResponse {
			return &imrpc.EngineSnapshotCloneStatusProxyResponse{Status: cloneStatusFromEngine(r)}
		})
}

func (s *proxyServer) SnapshotRemove(ctx context.Context, req *imrpc.EngineSnapshotRemoveRequest) (*imrpc.Empty, error) {
	if len(req.GetNames()) == 0 {
		return nil, invalidArg("names is required")
	}
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.SnapshotRemove,
		&enginerpc.SnapshotRemoveRequest{Names: req.GetNames()}, empty)
}

func (s *proxyServer) ReplicaAdd(ctx context.Context, req *imrpc.EngineReplicaAddRequest) (*imrpc.Empty, error) {
	if req.GetReplicaAddress() == "" {
		return nil, invalidArg("replica_address is required")
	}
	in := &enginerpc.ReplicaAddRequest{
		Address: req.GetReplicaAddress(), InstanceName: req.GetReplicaName(), Restore: req.GetRestore(),
		FastSync: req.GetFastSync(), FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout(),
		ConcurrentSyncLimit: req.GetConcurrentSyncLimit(), Size: req.GetSize(), CurrentSize: req.GetCurrentSize(),
		ReplicaRebuildingBandwidthLimit: req.GetReplicaRebuildingBandwidthLimit(),
	}
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.ReplicaAdd, in, empty)
}

func (s *proxyServer) ReplicaList(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineReplicaListProxyResponse, error) {
	return forward(ctx, s, req, engineClient.ReplicaList, none,
		func(r *enginerpc.ReplicaListReply) *imrpc.EngineReplicaListProxyResponse {
			return &imrpc.EngineReplicaListProxyResponse{ReplicaList: replicasFromEngine(r)}
		})
}

func (s *proxyServer) ReplicaRebuildingStatus(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineReplicaRebuildStatusProxyResponse, error) {
	return forward(ctx, s, req, engineClient.ReplicaRebuildingStatus, none,
		func(r *enginerpc.ReplicaRebuildingStatusReply) *imrpc.EngineReplicaRebuildStatusProxyResponse {
			return &imrpc.EngineReplicaRebuildStatusProxyResponse{Status: rebuildStatusFromEngine(r)}
		})
}

func (s *proxyServer) ReplicaVerifyRebuild(ctx context.Context, req *imrpc.EngineReplicaVerifyRebuildRequest) (*imrpc.Empty, error) {
	if req.GetReplicaAddress() == "" {
		return nil, invalidArg("replica_address is required")
	}
	ra := &enginerpc.ReplicaAddress{Address: req.GetReplicaAddress(), InstanceName: req.GetReplicaName()}
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.ReplicaVerifyRebuild, ra, empty)
}

func (s *proxyServer) ReplicaRemove(ctx context.Context, req *imrpc.EngineReplicaRemoveRequest) (*imrpc.Empty, error) {
	if req.GetReplicaAddress() == "" {
		return nil, invalidArg("replica_address is required")
	}
	ra := &enginerpc.ReplicaAddress{Address: req.GetReplicaAddress(), InstanceName: req.GetReplicaName()}
	return forward(ctx, s, req.GetProxyEngineRequest(), engineClient.ReplicaDelete, ra, empty)
}

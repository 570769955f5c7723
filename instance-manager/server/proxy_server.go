package server

import (
	"context"
	"net"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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

// errBackupsUnimplemented answers every backup method until the backupstore exists.
var errBackupsUnimplemented = status.Error(codes.Unimplemented, "backups are not implemented yet")

// proxyServer is imrpc.ProxyEngineService: a thin forwarder to the engine
// named in each request. Rebuild, snapshot list/remove/purge and clone are
// orchestrated by the engine itself (engine/rpc/controller.proto).
type proxyServer struct {
	imrpc.UnimplementedProxyEngineServiceServer
	conns *engineConns
}

// engine validates req and returns the context (with the forwarding metadata)
// and client for the engine it names.
func (s *proxyServer) engine(ctx context.Context, req *imrpc.ProxyEngineRequest) (context.Context, enginerpc.ControllerServiceClient, error) {
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

func (s *proxyServer) Ping(context.Context, *imrpc.Empty) (*imrpc.Empty, error) {
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) ServerVersionGet(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineVersionProxyResponse, error) {
	ctx, c, err := s.engine(ctx, req)
	if err != nil {
		return nil, err
	}
	v, err := c.VersionDetailGet(ctx, &enginerpc.Empty{})
	if err != nil {
		return nil, fromEngine(req.GetAddress(), err)
	}
	return &imrpc.EngineVersionProxyResponse{Version: versionFromEngine(v)}, nil
}

func (s *proxyServer) VolumeGet(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineVolumeGetProxyResponse, error) {
	ctx, c, err := s.engine(ctx, req)
	if err != nil {
		return nil, err
	}
	v, err := c.VolumeGet(ctx, &enginerpc.Empty{})
	if err != nil {
		return nil, fromEngine(req.GetAddress(), err)
	}
	return &imrpc.EngineVolumeGetProxyResponse{Volume: volumeFromEngine(v)}, nil
}

func (s *proxyServer) VolumeExpand(ctx context.Context, req *imrpc.EngineVolumeExpandRequest) (*imrpc.Empty, error) {
	if req.GetSize() <= 0 {
		return nil, invalidArg("size %d: must be > 0 bytes", req.GetSize())
	}
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	if _, err := c.VolumeExpand(ctx, &enginerpc.VolumeExpandRequest{Size: req.GetSize()}); err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) VolumeFrontendStart(ctx context.Context, req *imrpc.EngineVolumeFrontendStartRequest) (*imrpc.Empty, error) {
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	if _, err := c.VolumeFrontendStart(ctx, &enginerpc.VolumeFrontendStartRequest{Frontend: req.GetFrontend()}); err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) VolumeFrontendShutdown(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.Empty, error) {
	ctx, c, err := s.engine(ctx, req)
	if err != nil {
		return nil, err
	}
	if _, err := c.VolumeFrontendShutdown(ctx, &enginerpc.Empty{}); err != nil {
		return nil, fromEngine(req.GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) VolumeSnapshot(ctx context.Context, req *imrpc.EngineVolumeSnapshotRequest) (*imrpc.EngineVolumeSnapshotProxyResponse, error) {
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	r, err := c.VolumeSnapshot(ctx, &enginerpc.VolumeSnapshotRequest{
		Name: req.GetName(), Labels: req.GetLabels(), FreezeFilesystem: req.GetFreezeFilesystem(),
	})
	if err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.EngineVolumeSnapshotProxyResponse{Name: r.GetName()}, nil
}

func (s *proxyServer) SnapshotList(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineSnapshotListProxyResponse, error) {
	ctx, c, err := s.engine(ctx, req)
	if err != nil {
		return nil, err
	}
	r, err := c.SnapshotList(ctx, &enginerpc.Empty{})
	if err != nil {
		return nil, fromEngine(req.GetAddress(), err)
	}
	return &imrpc.EngineSnapshotListProxyResponse{Disks: snapshotsFromEngine(r)}, nil
}

func (s *proxyServer) SnapshotRevert(ctx context.Context, req *imrpc.EngineSnapshotRevertRequest) (*imrpc.Empty, error) {
	if req.GetName() == "" {
		return nil, invalidArg("name is required")
	}
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	if _, err := c.VolumeRevert(ctx, &enginerpc.VolumeRevertRequest{Name: req.GetName()}); err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) SnapshotPurge(ctx context.Context, req *imrpc.EngineSnapshotPurgeRequest) (*imrpc.Empty, error) {
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	if _, err := c.SnapshotPurge(ctx, &enginerpc.SnapshotPurgeRequest{SkipIfInProgress: req.GetSkipIfInProgress()}); err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) SnapshotPurgeStatus(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineSnapshotPurgeStatusProxyResponse, error) {
	ctx, c, err := s.engine(ctx, req)
	if err != nil {
		return nil, err
	}
	r, err := c.SnapshotPurgeStatus(ctx, &enginerpc.Empty{})
	if err != nil {
		return nil, fromEngine(req.GetAddress(), err)
	}
	return &imrpc.EngineSnapshotPurgeStatusProxyResponse{Status: purgeStatusFromEngine(r)}, nil
}

func (s *proxyServer) SnapshotClone(ctx context.Context, req *imrpc.EngineSnapshotCloneRequest) (*imrpc.Empty, error) {
	if req.GetSnapshotName() == "" || req.GetFromEngineAddress() == "" {
		return nil, invalidArg("snapshot_name and from_engine_address are required")
	}
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	_, err = c.SnapshotClone(ctx, &enginerpc.SnapshotCloneRequest{
		FromEngineAddress: req.GetFromEngineAddress(), FromVolumeName: req.GetFromVolumeName(),
		SnapshotName: req.GetSnapshotName(), ExportBackingImageIfExist: req.GetExportBackingImageIfExist(),
		FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout(),
	})
	if err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) SnapshotCloneStatus(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineSnapshotCloneStatusProxyResponse, error) {
	ctx, c, err := s.engine(ctx, req)
	if err != nil {
		return nil, err
	}
	r, err := c.SnapshotCloneStatus(ctx, &enginerpc.Empty{})
	if err != nil {
		return nil, fromEngine(req.GetAddress(), err)
	}
	return &imrpc.EngineSnapshotCloneStatusProxyResponse{Status: cloneStatusFromEngine(r)}, nil
}

func (s *proxyServer) SnapshotRemove(ctx context.Context, req *imrpc.EngineSnapshotRemoveRequest) (*imrpc.Empty, error) {
	if len(req.GetNames()) == 0 {
		return nil, invalidArg("names is required")
	}
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	if _, err := c.SnapshotRemove(ctx, &enginerpc.SnapshotRemoveRequest{Names: req.GetNames()}); err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) ReplicaAdd(ctx context.Context, req *imrpc.EngineReplicaAddRequest) (*imrpc.Empty, error) {
	if req.GetReplicaAddress() == "" {
		return nil, invalidArg("replica_address is required")
	}
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	_, err = c.ReplicaAdd(ctx, &enginerpc.ReplicaAddRequest{
		Address: req.GetReplicaAddress(), InstanceName: req.GetReplicaName(), Restore: req.GetRestore(),
		FastSync: req.GetFastSync(), FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout(),
		ConcurrentSyncLimit: req.GetConcurrentSyncLimit(), Size: req.GetSize(), CurrentSize: req.GetCurrentSize(),
	})
	if err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) ReplicaList(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineReplicaListProxyResponse, error) {
	ctx, c, err := s.engine(ctx, req)
	if err != nil {
		return nil, err
	}
	r, err := c.ReplicaList(ctx, &enginerpc.Empty{})
	if err != nil {
		return nil, fromEngine(req.GetAddress(), err)
	}
	return &imrpc.EngineReplicaListProxyResponse{ReplicaList: replicasFromEngine(r)}, nil
}

func (s *proxyServer) ReplicaRebuildingStatus(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineReplicaRebuildStatusProxyResponse, error) {
	ctx, c, err := s.engine(ctx, req)
	if err != nil {
		return nil, err
	}
	r, err := c.ReplicaRebuildingStatus(ctx, &enginerpc.Empty{})
	if err != nil {
		return nil, fromEngine(req.GetAddress(), err)
	}
	return &imrpc.EngineReplicaRebuildStatusProxyResponse{Status: rebuildStatusFromEngine(r)}, nil
}

func (s *proxyServer) ReplicaVerifyRebuild(ctx context.Context, req *imrpc.EngineReplicaVerifyRebuildRequest) (*imrpc.Empty, error) {
	if req.GetReplicaAddress() == "" {
		return nil, invalidArg("replica_address is required")
	}
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	ra := &enginerpc.ReplicaAddress{Address: req.GetReplicaAddress(), InstanceName: req.GetReplicaName()}
	if _, err := c.ReplicaVerifyRebuild(ctx, ra); err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) ReplicaRemove(ctx context.Context, req *imrpc.EngineReplicaRemoveRequest) (*imrpc.Empty, error) {
	if req.GetReplicaAddress() == "" {
		return nil, invalidArg("replica_address is required")
	}
	ctx, c, err := s.engine(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	ra := &enginerpc.ReplicaAddress{Address: req.GetReplicaAddress(), InstanceName: req.GetReplicaName()}
	if _, err := c.ReplicaDelete(ctx, ra); err != nil {
		return nil, fromEngine(req.GetProxyEngineRequest().GetAddress(), err)
	}
	return &imrpc.Empty{}, nil
}

// Backups: Unimplemented until the backupstore exists.

func (s *proxyServer) SnapshotBackup(context.Context, *imrpc.EngineSnapshotBackupRequest) (*imrpc.EngineSnapshotBackupProxyResponse, error) {
	return nil, errBackupsUnimplemented
}

func (s *proxyServer) SnapshotBackupStatus(context.Context, *imrpc.EngineSnapshotBackupStatusRequest) (*imrpc.EngineSnapshotBackupStatusProxyResponse, error) {
	return nil, errBackupsUnimplemented
}

func (s *proxyServer) BackupRestore(context.Context, *imrpc.EngineBackupRestoreRequest) (*imrpc.Empty, error) {
	return nil, errBackupsUnimplemented
}

func (s *proxyServer) BackupRestoreStatus(context.Context, *imrpc.ProxyEngineRequest) (*imrpc.EngineBackupRestoreStatusProxyResponse, error) {
	return nil, errBackupsUnimplemented
}

func (s *proxyServer) BackupVolumeList(context.Context, *imrpc.EngineBackupVolumeListRequest) (*imrpc.EngineBackupVolumeListProxyResponse, error) {
	return nil, errBackupsUnimplemented
}

func (s *proxyServer) BackupVolumeGet(context.Context, *imrpc.EngineBackupVolumeGetRequest) (*imrpc.EngineBackupVolumeGetProxyResponse, error) {
	return nil, errBackupsUnimplemented
}

func (s *proxyServer) BackupGet(context.Context, *imrpc.EngineBackupGetRequest) (*imrpc.EngineBackupGetProxyResponse, error) {
	return nil, errBackupsUnimplemented
}

func (s *proxyServer) BackupConfigMetaGet(context.Context, *imrpc.EngineBackupConfigMetaGetRequest) (*imrpc.EngineBackupConfigMetaGetProxyResponse, error) {
	return nil, errBackupsUnimplemented
}

func (s *proxyServer) BackupRemove(context.Context, *imrpc.EngineBackupRemoveRequest) (*imrpc.Empty, error) {
	return nil, errBackupsUnimplemented
}

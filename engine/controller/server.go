package controller

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/meta"
)

// API versions reported by VersionDetailGet (Longhorn's CLIAPIVersion etc.
// for the v1 engine of the same generation).
const (
	CLIAPIVersion           = 9
	CLIAPIMinVersion        = 8
	ControllerAPIVersion    = 5
	ControllerAPIMinVersion = 5
	DataFormatVersion       = 1
	DataFormatMinVersion    = 1
)

// Server implements ControllerService (engine/rpc/controller.proto) on a
// Controller.
type Server struct {
	enginerpc.UnimplementedControllerServiceServer
	c *Controller
}

// NewServer returns the gRPC service of c.
func NewServer(c *Controller) *Server { return &Server{c: c} }

// toStatus maps controller errors to gRPC codes.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && status.Code(err) != codes.Unknown {
		return err
	}
	code := codes.Internal
	switch {
	case errors.Is(err, ErrInvalid), errors.Is(err, frontend.ErrOutOfRange):
		code = codes.InvalidArgument
	case errors.Is(err, ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, ErrPrecondition), errors.Is(err, frontend.ErrNoBackend):
		code = codes.FailedPrecondition
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}

func (s *Server) volume() *enginerpc.Volume {
	v := s.c.Info()
	return &enginerpc.Volume{Name: v.Name, Size: v.Size, ReplicaCount: int32(v.ReplicaCount), Endpoint: v.Endpoint,
		Frontend: v.Frontend, FrontendState: v.FrontendState, IsExpanding: v.IsExpanding,
		LastExpansionError: v.LastExpansionError, LastExpansionFailedAt: v.LastExpansionFailedAt,
		UnmapMarkSnapChainRemoved: v.UnmapMarkSnapChainRemoved, SnapshotMaxCount: int32(v.SnapshotMaxCount),
		SnapshotMaxSize: v.SnapshotMaxSize, CurrentSize: v.CurrentSize, State: v.State}
}

func (s *Server) volumeOrErr(err error) (*enginerpc.Volume, error) {
	if err != nil {
		return nil, toStatus(err)
	}
	return s.volume(), nil
}

// VolumeGet describes the volume.
func (s *Server) VolumeGet(context.Context, *enginerpc.Empty) (*enginerpc.Volume, error) {
	return s.volume(), nil
}

// VolumeStart opens the replicas and serves the volume.
func (s *Server) VolumeStart(ctx context.Context, req *enginerpc.VolumeStartRequest) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.Start(ctx, req.GetReplicaAddresses(), req.GetSize(), req.GetCurrentSize(), req.GetSalvageRequested()))
}

// VolumeShutdown stops the frontend and drops the replicas.
func (s *Server) VolumeShutdown(context.Context, *enginerpc.Empty) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.Shutdown())
}

// VolumeSnapshot snapshots every replica.
func (s *Server) VolumeSnapshot(ctx context.Context, req *enginerpc.VolumeSnapshotRequest) (*enginerpc.VolumeSnapshotReply, error) {
	name, err := s.c.Snapshot(ctx, req.GetName(), req.GetLabels())
	if err != nil {
		return nil, toStatus(err)
	}
	return &enginerpc.VolumeSnapshotReply{Name: name}, nil
}

// VolumeRevert reverts to a snapshot (frontend down).
func (s *Server) VolumeRevert(ctx context.Context, req *enginerpc.VolumeRevertRequest) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.Revert(ctx, req.GetName()))
}

// VolumeExpand starts an expansion.
func (s *Server) VolumeExpand(ctx context.Context, req *enginerpc.VolumeExpandRequest) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.Expand(ctx, req.GetSize()))
}

// VolumeFrontendStart starts a frontend.
func (s *Server) VolumeFrontendStart(ctx context.Context, req *enginerpc.VolumeFrontendStartRequest) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.StartFrontend(ctx, req.GetFrontend()))
}

// VolumeFrontendShutdown stops the frontend.
func (s *Server) VolumeFrontendShutdown(context.Context, *enginerpc.Empty) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.ShutdownFrontend())
}

// VolumeUnmapMarkSnapChainRemovedSet sets the unmap option.
func (s *Server) VolumeUnmapMarkSnapChainRemovedSet(ctx context.Context, req *enginerpc.VolumeUnmapMarkSnapChainRemovedSetRequest) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.SetUnmapMarkSnapChainRemoved(ctx, req.GetEnabled()))
}

// VolumeSnapshotMaxCountSet sets snapshot-max-count.
func (s *Server) VolumeSnapshotMaxCountSet(ctx context.Context, req *enginerpc.VolumeSnapshotMaxCountSetRequest) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.SetSnapshotMaxCount(ctx, int(req.GetCount())))
}

// VolumeSnapshotMaxSizeSet sets snapshot-max-size.
func (s *Server) VolumeSnapshotMaxSizeSet(ctx context.Context, req *enginerpc.VolumeSnapshotMaxSizeSetRequest) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.SetSnapshotMaxSize(ctx, req.GetSize()))
}

func replicaMsg(r ReplicaInfo) *enginerpc.ControllerReplica {
	m := enginerpc.ReplicaMode_ERR
	switch r.Mode {
	case ModeRW:
		m = enginerpc.ReplicaMode_RW
	case ModeWO:
		m = enginerpc.ReplicaMode_WO
	}
	return &enginerpc.ControllerReplica{Address: &enginerpc.ReplicaAddress{Address: r.Address, InstanceName: r.InstanceName}, Mode: m}
}

func modeOf(m enginerpc.ReplicaMode) Mode {
	switch m {
	case enginerpc.ReplicaMode_RW:
		return ModeRW
	case enginerpc.ReplicaMode_WO:
		return ModeWO
	}
	return ModeERR
}

// ReplicaList lists the replicas and their modes.
func (s *Server) ReplicaList(context.Context, *enginerpc.Empty) (*enginerpc.ReplicaListReply, error) {
	out := &enginerpc.ReplicaListReply{}
	for _, r := range s.c.Replicas() {
		out.Replicas = append(out.Replicas, replicaMsg(r))
	}
	return out, nil
}

func (s *Server) replica(addr string) (*enginerpc.ControllerReplica, error) {
	n, err := NormalizeAddress(addr)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	for _, r := range s.c.Replicas() {
		if r.Address == n {
			return replicaMsg(r), nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "replica %s is not in the volume", n)
}

// ReplicaGet returns one replica.
func (s *Server) ReplicaGet(_ context.Context, req *enginerpc.ReplicaAddress) (*enginerpc.ControllerReplica, error) {
	return s.replica(req.GetAddress())
}

// ControllerReplicaCreate adds a replica in a given mode.
func (s *Server) ControllerReplicaCreate(ctx context.Context, req *enginerpc.ControllerReplicaCreateRequest) (*enginerpc.ControllerReplica, error) {
	if err := s.c.CreateReplica(ctx, req.GetAddress(), req.GetInstanceName(), req.GetSnapshotRequired(), modeOf(req.GetMode())); err != nil {
		return nil, toStatus(err)
	}
	return s.replica(req.GetAddress())
}

// ReplicaDelete removes a replica from the volume.
func (s *Server) ReplicaDelete(_ context.Context, req *enginerpc.ReplicaAddress) (*enginerpc.Empty, error) {
	if err := s.c.RemoveReplica(req.GetAddress()); err != nil {
		return nil, toStatus(err)
	}
	return &enginerpc.Empty{}, nil
}

// ReplicaUpdate sets a replica's mode (RW or ERR).
func (s *Server) ReplicaUpdate(_ context.Context, req *enginerpc.ControllerReplica) (*enginerpc.ControllerReplica, error) {
	if err := s.c.SetReplicaMode(req.GetAddress().GetAddress(), modeOf(req.GetMode())); err != nil {
		return nil, toStatus(err)
	}
	return s.replica(req.GetAddress().GetAddress())
}

// ReplicaVerifyRebuild checks a rebuilt WO replica and makes it RW.
func (s *Server) ReplicaVerifyRebuild(ctx context.Context, req *enginerpc.ReplicaAddress) (*enginerpc.ControllerReplica, error) {
	if err := s.c.VerifyRebuild(ctx, req.GetAddress()); err != nil {
		return nil, toStatus(err)
	}
	return s.replica(req.GetAddress())
}

// ReplicaAdd starts a rebuild of a replica into the volume.
func (s *Server) ReplicaAdd(ctx context.Context, req *enginerpc.ReplicaAddRequest) (*enginerpc.Empty, error) {
	if req.GetRestore() {
		return nil, status.Error(codes.Unimplemented, "restore rebuild (backup) is not supported by this engine yet")
	}
	if n := req.GetConcurrentSyncLimit(); n != 0 {
		if err := s.c.SetRebuildSyncLimit(int(n)); err != nil {
			return nil, toStatus(err)
		}
	}
	err := s.c.AddReplica(ctx, AddRequest{Address: req.GetAddress(), InstanceName: req.GetInstanceName(),
		FastSync: req.GetFastSync(), FileSyncHTTPClientTimeout: int(req.GetFileSyncHttpClientTimeout())})
	if err != nil {
		return nil, toStatus(err)
	}
	return &enginerpc.Empty{}, nil
}

// ReplicaRebuildingStatus reports rebuild progress by replica address.
func (s *Server) ReplicaRebuildingStatus(context.Context, *enginerpc.Empty) (*enginerpc.ReplicaRebuildingStatusReply, error) {
	out := &enginerpc.ReplicaRebuildingStatusReply{Status: map[string]*enginerpc.ReplicaRebuildStatus{}}
	for addr, st := range s.c.RebuildStatus() {
		out.Status[addr] = &enginerpc.ReplicaRebuildStatus{Error: st.Error, IsRebuilding: st.IsRebuilding,
			Progress: st.Progress, State: st.State, FromReplicaAddress: st.From, FromReplicaAddressList: []string{st.From}}
	}
	return out, nil
}

// ReplicaRebuildConcurrentSyncLimitSet sets the sync limit.
func (s *Server) ReplicaRebuildConcurrentSyncLimitSet(_ context.Context, req *enginerpc.ReplicaRebuildConcurrentSyncLimitSetRequest) (*enginerpc.Empty, error) {
	if err := s.c.SetRebuildSyncLimit(int(req.GetLimit())); err != nil {
		return nil, toStatus(err)
	}
	return &enginerpc.Empty{}, nil
}

// ReplicaRebuildConcurrentSyncLimitGet returns the sync limit.
func (s *Server) ReplicaRebuildConcurrentSyncLimitGet(context.Context, *enginerpc.Empty) (*enginerpc.ReplicaRebuildConcurrentSyncLimitGetReply, error) {
	return &enginerpc.ReplicaRebuildConcurrentSyncLimitGetReply{Limit: int32(s.c.RebuildSyncLimit())}, nil
}

// SnapshotList lists the snapshots of an RW replica.
func (s *Server) SnapshotList(ctx context.Context, _ *enginerpc.Empty) (*enginerpc.SnapshotListReply, error) {
	snaps, err := s.c.Snapshots(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &enginerpc.SnapshotListReply{Snapshots: map[string]*enginerpc.Snapshot{}}
	for name, sn := range snaps {
		out.Snapshots[name] = &enginerpc.Snapshot{Name: sn.Name, Parent: sn.Parent, Children: sn.Children,
			Removed: sn.Removed, Usercreated: sn.UserCreated, Created: sn.Created, Size: sn.Size, Labels: sn.Labels}
	}
	return out, nil
}

// SnapshotRemove marks snapshots removed on every replica.
func (s *Server) SnapshotRemove(ctx context.Context, req *enginerpc.SnapshotRemoveRequest) (*enginerpc.Empty, error) {
	if err := s.c.RemoveSnapshots(ctx, req.GetNames()); err != nil {
		return nil, toStatus(err)
	}
	return &enginerpc.Empty{}, nil
}

// SnapshotPurge starts a purge on every RW replica.
func (s *Server) SnapshotPurge(ctx context.Context, req *enginerpc.SnapshotPurgeRequest) (*enginerpc.Empty, error) {
	if err := s.c.Purge(ctx, req.GetSkipIfInProgress()); err != nil {
		return nil, toStatus(err)
	}
	return &enginerpc.Empty{}, nil
}

// SnapshotPurgeStatus reports each replica's purge.
func (s *Server) SnapshotPurgeStatus(ctx context.Context, _ *enginerpc.Empty) (*enginerpc.SnapshotPurgeStatusReply, error) {
	out := &enginerpc.SnapshotPurgeStatusReply{Status: map[string]*enginerpc.SnapshotPurgeStatus{}}
	for addr, st := range s.c.PurgeStatus(ctx) {
		out.Status[addr] = &enginerpc.SnapshotPurgeStatus{Error: st.GetError(), IsPurging: st.GetIsPurging(),
			Progress: st.GetProgress(), State: st.GetState()}
	}
	return out, nil
}

// VersionDetailGet reports the build and API versions.
func (s *Server) VersionDetailGet(context.Context, *enginerpc.Empty) (*enginerpc.VersionDetailGetReply, error) {
	return &enginerpc.VersionDetailGetReply{Version: meta.Version, GitCommit: meta.GitCommit, BuildDate: meta.BuildDate,
		CliApiVersion: CLIAPIVersion, CliApiMinVersion: CLIAPIMinVersion,
		ControllerApiVersion: ControllerAPIVersion, ControllerApiMinVersion: ControllerAPIMinVersion,
		DataFormatVersion: DataFormatVersion, DataFormatMinVersion: DataFormatMinVersion}, nil
}

// SnapshotClone starts cloning a snapshot of another volume into this one.
func (s *Server) SnapshotClone(ctx context.Context, req *enginerpc.SnapshotCloneRequest) (*enginerpc.Empty, error) {
	err := s.c.SnapshotClone(ctx, CloneRequest{FromEngine: req.GetFromEngineAddress(), FromVolume: req.GetFromVolumeName(),
		Snapshot: req.GetSnapshotName(), ExportBackingImage: req.GetExportBackingImageIfExist(),
		FileSyncHTTPClientTimeout: int(req.GetFileSyncHttpClientTimeout())})
	if err != nil {
		return nil, toStatus(err)
	}
	return &enginerpc.Empty{}, nil
}

// SnapshotCloneStatus reports each replica's clone.
func (s *Server) SnapshotCloneStatus(ctx context.Context, _ *enginerpc.Empty) (*enginerpc.SnapshotCloneStatusReply, error) {
	out := &enginerpc.SnapshotCloneStatusReply{Status: map[string]*enginerpc.SnapshotCloneStatus{}}
	for addr, st := range s.c.CloneStatus(ctx) {
		out.Status[addr] = &enginerpc.SnapshotCloneStatus{IsCloning: st.GetIsCloning(), Error: st.GetError(),
			Progress: st.GetProgress(), State: st.GetState(), FromReplicaAddress: st.GetFromReplicaAddress(),
			SnapshotName: st.GetSnapshotName()}
	}
	return out, nil
}

package controller

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/meta"
)

// API versions reported by VersionDetailGet (Longhorn's pkg/meta/version.go
// values: its CLI checks controllerAPIVersion >= 6 before it asks for the
// rebuild concurrent sync limit, which this engine serves).
const (
	CLIAPIVersion           = 9
	CLIAPIMinVersion        = 8
	ControllerAPIVersion    = 6
	ControllerAPIMinVersion = 4
	DataFormatVersion       = 1
	DataFormatMinVersion    = 1
)

// Server implements Longhorn's ControllerService (engine/rpc/controller.proto)
// on a Controller.
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
func (s *Server) VolumeGet(context.Context, *emptypb.Empty) (*enginerpc.Volume, error) {
	return s.volume(), nil
}

// VolumeStart opens the replicas and serves the volume.
func (s *Server) VolumeStart(ctx context.Context, req *enginerpc.VolumeStartRequest) (*enginerpc.Volume, error) {
	return s.volumeOrErr(s.c.Start(ctx, req.GetReplicaAddresses(), req.GetSize(), req.GetCurrentSize(), req.GetSalvageRequested()))
}

// VolumeShutdown stops the frontend and drops the replicas.
func (s *Server) VolumeShutdown(context.Context, *emptypb.Empty) (*enginerpc.Volume, error) {
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
func (s *Server) VolumeFrontendShutdown(context.Context, *emptypb.Empty) (*enginerpc.Volume, error) {
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
func (s *Server) ReplicaList(context.Context, *emptypb.Empty) (*enginerpc.ReplicaListReply, error) {
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
func (s *Server) ReplicaDelete(_ context.Context, req *enginerpc.ReplicaAddress) (*emptypb.Empty, error) {
	if err := s.c.RemoveReplica(req.GetAddress()); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// ReplicaUpdate sets a replica's mode (RW or ERR).
func (s *Server) ReplicaUpdate(_ context.Context, req *enginerpc.ControllerReplica) (*enginerpc.ControllerReplica, error) {
	if err := s.c.SetReplicaMode(req.GetAddress().GetAddress(), modeOf(req.GetMode())); err != nil {
		return nil, toStatus(err)
	}
	return s.replica(req.GetAddress().GetAddress())
}

// ReplicaPrepareRebuild prepares a WO replica for the file sync a rebuild
// driver (Longhorn's CLI) runs next, and lists the files.
func (s *Server) ReplicaPrepareRebuild(ctx context.Context, req *enginerpc.ReplicaAddress) (*enginerpc.ReplicaPrepareRebuildReply, error) {
	files, err := s.c.PrepareRebuild(ctx, req.GetAddress())
	if err != nil {
		return nil, toStatus(err)
	}
	r, err := s.replica(req.GetAddress())
	if err != nil {
		return nil, err
	}
	return &enginerpc.ReplicaPrepareRebuildReply{Replica: r, SyncFileInfoList: files}, nil
}

// ReplicaVerifyRebuild checks a rebuilt WO replica and makes it RW.
func (s *Server) ReplicaVerifyRebuild(ctx context.Context, req *enginerpc.ReplicaAddress) (*enginerpc.ControllerReplica, error) {
	if err := s.c.VerifyRebuild(ctx, req.GetAddress()); err != nil {
		return nil, toStatus(err)
	}
	return s.replica(req.GetAddress())
}

// ReplicaRebuildConcurrentSyncLimitSet sets the sync limit.
func (s *Server) ReplicaRebuildConcurrentSyncLimitSet(_ context.Context, req *enginerpc.ReplicaRebuildConcurrentSyncLimitSetRequest) (*emptypb.Empty, error) {
	if err := s.c.SetRebuildSyncLimit(int(req.GetLimit())); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// ReplicaRebuildConcurrentSyncLimitGet returns the sync limit.
func (s *Server) ReplicaRebuildConcurrentSyncLimitGet(context.Context, *emptypb.Empty) (*enginerpc.ReplicaRebuildConcurrentSyncLimitGetReply, error) {
	return &enginerpc.ReplicaRebuildConcurrentSyncLimitGetReply{Limit: int32(s.c.RebuildSyncLimit())}, nil
}

// JournalList logs the engine's I/O state (Longhorn prints its I/O journal
// to the controller's log): the I/O rates and every replica with its mode
// and reads in flight, at most limit replicas (0 = all). This engine keeps
// no per-request journal.
func (s *Server) JournalList(_ context.Context, req *enginerpc.JournalListRequest) (*emptypb.Empty, error) {
	m := s.c.Metrics()
	s.c.log.WithFields(logrus.Fields{"readIOPS": m.ReadIOPS, "writeIOPS": m.WriteIOPS,
		"readLatencyNs": m.ReadLatency, "writeLatencyNs": m.WriteLatency}).Info("journal: I/O")
	for i, b := range s.c.r.list() {
		if req.GetLimit() > 0 && int64(i) >= req.GetLimit() {
			break
		}
		s.c.log.WithFields(logrus.Fields{"replica": b.addr, "mode": b.getMode().String(),
			"readsInFlight": b.reads.Load()}).Info("journal: replica")
	}
	return &emptypb.Empty{}, nil
}

// VersionDetailGet reports the build and API versions.
func (s *Server) VersionDetailGet(context.Context, *emptypb.Empty) (*enginerpc.VersionDetailGetReply, error) {
	return &enginerpc.VersionDetailGetReply{Version: VersionOutput()}, nil
}

// VersionOutput is this engine's Longhorn version block.
func VersionOutput() *enginerpc.VersionOutput {
	return &enginerpc.VersionOutput{Version: meta.Version, GitCommit: meta.GitCommit, BuildDate: meta.BuildDate,
		CliAPIVersion: CLIAPIVersion, CliAPIMinVersion: CLIAPIMinVersion,
		ControllerAPIVersion: ControllerAPIVersion, ControllerAPIMinVersion: ControllerAPIMinVersion,
		DataFormatVersion: DataFormatVersion, DataFormatMinVersion: DataFormatMinVersion}
}

// MetricsGet reports the I/O rates (see Controller.Metrics).
func (s *Server) MetricsGet(context.Context, *emptypb.Empty) (*enginerpc.MetricsGetReply, error) {
	m := s.c.Metrics()
	return &enginerpc.MetricsGetReply{Metrics: &enginerpc.Metrics{ReadThroughput: m.ReadThroughput,
		WriteThroughput: m.WriteThroughput, ReadLatency: m.ReadLatency, WriteLatency: m.WriteLatency,
		ReadIOPS: m.ReadIOPS, WriteIOPS: m.WriteIOPS}}, nil
}

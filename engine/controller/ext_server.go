package controller

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// ExtServer implements ControllerExtService (engine/rpc/extensions.proto):
// the operations Longhorn runs in its CLI, run by this engine.
type ExtServer struct {
	enginerpc.UnimplementedControllerExtServiceServer
	c *Controller
}

// NewExtServer returns the extension service of c.
func NewExtServer(c *Controller) *ExtServer { return &ExtServer{c: c} }

// ReplicaAdd starts a rebuild of a replica into the volume.
func (s *ExtServer) ReplicaAdd(ctx context.Context, req *enginerpc.ReplicaAddRequest) (*emptypb.Empty, error) {
	if req.GetRestore() {
		return nil, status.Error(codes.Unimplemented, "restore rebuild (backup) is not supported by this engine yet")
	}
	if n := req.GetConcurrentSyncLimit(); n != 0 {
		if err := s.c.SetRebuildSyncLimit(int(n)); err != nil {
			return nil, toStatus(err)
		}
	}
	err := s.c.AddReplica(ctx, AddRequest{Address: req.GetAddress(), InstanceName: req.GetInstanceName(),
		FastSync: req.GetFastSync(), FileSyncHTTPClientTimeout: int(req.GetFileSyncHttpClientTimeout()),
		BandwidthLimit: req.GetReplicaRebuildingBandwidthLimit()})
	if err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// ReplicaRebuildingStatus reports rebuild progress by replica address.
func (s *ExtServer) ReplicaRebuildingStatus(context.Context, *emptypb.Empty) (*enginerpc.ReplicaRebuildingStatusReply, error) {
	out := &enginerpc.ReplicaRebuildingStatusReply{Status: map[string]*enginerpc.ReplicaRebuildStatus{}}
	for addr, st := range s.c.RebuildStatus() {
		rs := &enginerpc.ReplicaRebuildStatus{Error: st.Error, IsRebuilding: st.IsRebuilding,
			Progress: st.Progress, State: st.State, FromReplicaAddressList: st.From, AppliedRebuildingMbps: st.AppliedMBps}
		if len(st.From) > 0 {
			rs.FromReplicaAddress = st.From[0]
		}
		out.Status[addr] = rs
	}
	return out, nil
}

// SnapshotList lists the snapshots of an RW replica.
func (s *ExtServer) SnapshotList(ctx context.Context, _ *emptypb.Empty) (*enginerpc.SnapshotListReply, error) {
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
func (s *ExtServer) SnapshotRemove(ctx context.Context, req *enginerpc.SnapshotRemoveRequest) (*emptypb.Empty, error) {
	if err := s.c.RemoveSnapshots(ctx, req.GetNames()); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// SnapshotPurge starts a purge on every RW replica.
func (s *ExtServer) SnapshotPurge(ctx context.Context, req *enginerpc.SnapshotPurgeRequest) (*emptypb.Empty, error) {
	if err := s.c.Purge(ctx, req.GetSkipIfInProgress()); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// SnapshotPurgeStatus reports each replica's purge.
func (s *ExtServer) SnapshotPurgeStatus(ctx context.Context, _ *emptypb.Empty) (*enginerpc.SnapshotPurgeStatusReply, error) {
	out := &enginerpc.SnapshotPurgeStatusReply{Status: map[string]*enginerpc.SnapshotPurgeStatus{}}
	for addr, st := range s.c.PurgeStatus(ctx) {
		out.Status[addr] = &enginerpc.SnapshotPurgeStatus{Error: st.GetError(), IsPurging: st.GetIsPurging(),
			Progress: st.GetProgress(), State: st.GetState()}
	}
	return out, nil
}

// SnapshotClone starts cloning a snapshot of another volume into this one.
func (s *ExtServer) SnapshotClone(ctx context.Context, req *enginerpc.EngineSnapshotCloneRequest) (*emptypb.Empty, error) {
	err := s.c.SnapshotClone(ctx, CloneRequest{FromEngine: req.GetFromEngineAddress(), FromVolume: req.GetFromVolumeName(),
		Snapshot: req.GetSnapshotName(), ExportBackingImage: req.GetExportBackingImageIfExist(),
		FileSyncHTTPClientTimeout: int(req.GetFileSyncHttpClientTimeout())})
	if err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// SnapshotCloneStatus reports each replica's clone.
func (s *ExtServer) SnapshotCloneStatus(ctx context.Context, _ *emptypb.Empty) (*enginerpc.SnapshotCloneStatusReply, error) {
	out := &enginerpc.SnapshotCloneStatusReply{Status: map[string]*enginerpc.SnapshotCloneStatus{}}
	for addr, st := range s.c.CloneStatus(ctx) {
		out.Status[addr] = &enginerpc.SnapshotCloneStatus{IsCloning: st.GetIsCloning(), Error: st.GetError(),
			Progress: st.GetProgress(), State: st.GetState(), FromReplicaAddress: st.GetFromReplicaAddress(),
			SnapshotName: st.GetSnapshotName()}
	}
	return out, nil
}

// VolumeUpgradeHandOver drains this engine and closes its replicas for the
// new engine of a live upgrade (Controller.HandOver).
func (s *ExtServer) VolumeUpgradeHandOver(ctx context.Context, req *enginerpc.VolumeUpgradeHandOverRequest) (*enginerpc.VolumeUpgradeHandOverReply, error) {
	if req.GetEndpoint() == "" {
		return nil, status.Error(codes.InvalidArgument, "endpoint is required: the frontend endpoint the new engine took over")
	}
	s.c.log.WithField("newEngine", req.GetNewEngineAddress()).Info("hand-over requested by a new engine")
	res, err := s.c.HandOver(ctx, req.GetEndpoint(), req.GetNewReplicaAddresses())
	if err != nil {
		return nil, toStatus(err)
	}
	return &enginerpc.VolumeUpgradeHandOverReply{Size: res.Size, ReplicaAddresses: res.Replicas, Frontend: res.Frontend,
		DrainMicroseconds: res.Drain.Microseconds()}, nil
}

// VolumeUpgradeAbort takes the volume back after a hand-over
// (Controller.AbortHandOver).
func (s *ExtServer) VolumeUpgradeAbort(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	if err := s.c.AbortHandOver(ctx); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// VolumeUpgradeDone ends the old engine's watch after a hand-over
// (Controller.HandOverDone).
func (s *ExtServer) VolumeUpgradeDone(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	if err := s.c.HandOverDone(); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

package engineapi

import (
	"context"

	"google.golang.org/grpc"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// proxyEngineClient is EngineClient over the instance manager's ProxyEngineService.
type proxyEngineClient struct {
	target string
	c      imrpc.ProxyEngineServiceClient
	ext    imrpc.ProxyEngineExtServiceClient // lhext: this implementation's additions
	entry  *imEntry
	req    *imrpc.ProxyEngineRequest
}

var _ EngineClient = (*proxyEngineClient)(nil)

// proxyMethod is a ProxyEngineServiceClient method taken as a method
// expression (imrpc.ProxyEngineServiceClient.VolumeGet, ...).
type proxyMethod[In, Out any] func(imrpc.ProxyEngineServiceClient, context.Context, In, ...grpc.CallOption) (Out, error)

// proxyCall makes one proxy call with the default per-call timeout (unless
// ctx has a deadline). A failure marks the connection suspect and is wrapped
// as "TARGET: CALL: err", keeping the gRPC status for IsNotFound and friends.
func proxyCall[In, Out any](ctx context.Context, p *proxyEngineClient, call string, m proxyMethod[In, Out], in In) (Out, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	out, err := m(p.c, ctx, in)
	if err != nil {
		p.entry.suspect(err)
		return out, callError(p.target, call, err)
	}
	return out, nil
}

func (p *proxyEngineClient) IsGRPC() bool { return true }

func (p *proxyEngineClient) VersionGet(ctx context.Context) (*EngineVersion, error) {
	r, err := proxyCall(ctx, p, "ServerVersionGet", imrpc.ProxyEngineServiceClient.ServerVersionGet, p.req)
	if err != nil {
		return nil, err
	}
	return engineVersionFromRPC(r.GetVersion()), nil
}

func (p *proxyEngineClient) VolumeGet(ctx context.Context) (*Volume, error) {
	r, err := proxyCall(ctx, p, "VolumeGet", imrpc.ProxyEngineServiceClient.VolumeGet, p.req)
	if err != nil {
		return nil, err
	}
	return volumeFromRPC(r.GetVolume()), nil
}

func (p *proxyEngineClient) VolumeExpand(ctx context.Context, size int64) error {
	_, err := proxyCall(ctx, p, "VolumeExpand", imrpc.ProxyEngineServiceClient.VolumeExpand,
		&imrpc.EngineVolumeExpandRequest{ProxyEngineRequest: p.req, Size: size})
	return err
}

func (p *proxyEngineClient) VolumeFrontendStart(ctx context.Context, frontend string) error {
	_, err := proxyCall(ctx, p, "VolumeFrontendStart", imrpc.ProxyEngineServiceClient.VolumeFrontendStart,
		&imrpc.EngineVolumeFrontendStartRequest{ProxyEngineRequest: p.req, Frontend: frontend})
	return err
}

func (p *proxyEngineClient) VolumeFrontendShutdown(ctx context.Context) error {
	_, err := proxyCall(ctx, p, "VolumeFrontendShutdown", imrpc.ProxyEngineServiceClient.VolumeFrontendShutdown, p.req)
	return err
}

func (p *proxyEngineClient) VolumeSnapshot(ctx context.Context, name string, labels map[string]string) (string, error) {
	r, err := proxyCall(ctx, p, "VolumeSnapshot", imrpc.ProxyEngineServiceClient.VolumeSnapshot,
		&imrpc.EngineVolumeSnapshotRequest{ProxyEngineRequest: p.req, Name: name, Labels: labels})
	if err != nil {
		return "", err
	}
	return r.GetName(), nil
}

func (p *proxyEngineClient) SnapshotList(ctx context.Context) (map[string]*Snapshot, error) {
	r, err := proxyCall(ctx, p, "SnapshotList", imrpc.ProxyEngineServiceClient.SnapshotList, p.req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Snapshot, len(r.GetDisks()))
	for name, s := range r.GetDisks() {
		out[name] = snapshotFromRPC(s)
	}
	return out, nil
}

func (p *proxyEngineClient) SnapshotRemove(ctx context.Context, names ...string) error {
	_, err := proxyCall(ctx, p, "SnapshotRemove", imrpc.ProxyEngineServiceClient.SnapshotRemove,
		&imrpc.EngineSnapshotRemoveRequest{ProxyEngineRequest: p.req, Names: names})
	return err
}

func (p *proxyEngineClient) SnapshotRevert(ctx context.Context, name string) error {
	_, err := proxyCall(ctx, p, "SnapshotRevert", imrpc.ProxyEngineServiceClient.SnapshotRevert,
		&imrpc.EngineSnapshotRevertRequest{ProxyEngineRequest: p.req, Name: name})
	return err
}

func (p *proxyEngineClient) SnapshotPurge(ctx context.Context, skipIfInProgress bool) error {
	_, err := proxyCall(ctx, p, "SnapshotPurge", imrpc.ProxyEngineServiceClient.SnapshotPurge,
		&imrpc.EngineSnapshotPurgeRequest{ProxyEngineRequest: p.req, SkipIfInProgress: skipIfInProgress})
	return err
}

func (p *proxyEngineClient) SnapshotPurgeStatus(ctx context.Context) (map[string]*PurgeStatus, error) {
	r, err := proxyCall(ctx, p, "SnapshotPurgeStatus", imrpc.ProxyEngineServiceClient.SnapshotPurgeStatus, p.req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*PurgeStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &PurgeStatus{Error: s.GetError(), IsPurging: s.GetIsPurging(), Progress: int(s.GetProgress()), State: s.GetState()}
	}
	return out, nil
}

func (p *proxyEngineClient) SnapshotClone(ctx context.Context, req SnapshotCloneRequest) error {
	_, err := proxyCall(ctx, p, "SnapshotClone", imrpc.ProxyEngineServiceClient.SnapshotClone, &imrpc.EngineSnapshotCloneRequest{
		ProxyEngineRequest: p.req, FromEngineAddress: req.FromEngineAddress, FromVolumeName: req.FromVolumeName,
		SnapshotName: req.SnapshotName, ExportBackingImageIfExist: req.ExportBackingImageIfExist,
		FileSyncHttpClientTimeout: req.FileSyncHTTPClientTimeout,
	})
	return err
}

func (p *proxyEngineClient) SnapshotCloneStatus(ctx context.Context) (map[string]*CloneStatus, error) {
	r, err := proxyCall(ctx, p, "SnapshotCloneStatus", imrpc.ProxyEngineServiceClient.SnapshotCloneStatus, p.req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*CloneStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &CloneStatus{
			IsCloning: s.GetIsCloning(), Error: s.GetError(), Progress: int(s.GetProgress()), State: s.GetState(),
			FromReplicaAddress: s.GetFromReplicaAddress(), SnapshotName: s.GetSnapshotName(),
		}
	}
	return out, nil
}

func (p *proxyEngineClient) ReplicaAdd(ctx context.Context, req ReplicaAddRequest) error {
	_, err := proxyCall(ctx, p, "ReplicaAdd "+req.Address, imrpc.ProxyEngineServiceClient.ReplicaAdd, &imrpc.EngineReplicaAddRequest{
		ProxyEngineRequest: p.req, ReplicaAddress: req.Address, ReplicaName: req.InstanceName,
		Restore: req.Restore, Size: req.Size, CurrentSize: req.CurrentSize, FastSync: req.FastSync,
		FileSyncHttpClientTimeout: req.FileSyncHTTPClientTimeout, ConcurrentSyncLimit: req.ConcurrentSyncLimit,
		ReplicaRebuildingBandwidthLimit: req.BandwidthLimit,
	})
	return err
}

func (p *proxyEngineClient) ReplicaList(ctx context.Context) ([]Replica, error) {
	r, err := proxyCall(ctx, p, "ReplicaList", imrpc.ProxyEngineServiceClient.ReplicaList, p.req)
	if err != nil {
		return nil, err
	}
	out := make([]Replica, 0, len(r.GetReplicaList()))
	for _, rep := range r.GetReplicaList() {
		out = append(out, Replica{Address: rep.GetAddress(), InstanceName: rep.GetInstanceName(), Mode: replicaModeFromRPC(rep.GetMode())})
	}
	return out, nil
}

func (p *proxyEngineClient) ReplicaRemove(ctx context.Context, address, instanceName string) error {
	_, err := proxyCall(ctx, p, "ReplicaRemove "+address, imrpc.ProxyEngineServiceClient.ReplicaRemove,
		&imrpc.EngineReplicaRemoveRequest{ProxyEngineRequest: p.req, ReplicaAddress: address, ReplicaName: instanceName})
	return err
}

func (p *proxyEngineClient) ReplicaRebuildingStatus(ctx context.Context) (map[string]*RebuildStatus, error) {
	r, err := proxyCall(ctx, p, "ReplicaRebuildingStatus", imrpc.ProxyEngineServiceClient.ReplicaRebuildingStatus, p.req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*RebuildStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &RebuildStatus{
			Error: s.GetError(), IsRebuilding: s.GetIsRebuilding(), Progress: int(s.GetProgress()), State: s.GetState(),
			FromReplicaAddress: s.GetFromReplicaAddress(), FromReplicaAddressList: s.GetFromReplicaAddressList(),
			AppliedRebuildingMBps: s.GetAppliedRebuildingMbps(),
		}
	}
	return out, nil
}

func (p *proxyEngineClient) ReplicaVerifyRebuild(ctx context.Context, address, instanceName string) error {
	_, err := proxyCall(ctx, p, "ReplicaVerifyRebuild "+address, imrpc.ProxyEngineServiceClient.ReplicaVerifyRebuild,
		&imrpc.EngineReplicaVerifyRebuildRequest{ProxyEngineRequest: p.req, ReplicaAddress: address, ReplicaName: instanceName})
	return err
}

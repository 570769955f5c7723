package engineapi

import (
	"context"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// proxyEngineClient is EngineClient over the instance manager's ProxyEngineService.
type proxyEngineClient struct {
	target string
	c      imrpc.ProxyEngineServiceClient
	entry  *imEntry
	req    *imrpc.ProxyEngineRequest
}

var _ EngineClient = (*proxyEngineClient)(nil)

func (p *proxyEngineClient) fail(call string, err error) error {
	p.entry.suspect(err)
	return callError(p.target, call, err)
}

func (p *proxyEngineClient) VersionGet(ctx context.Context) (*EngineVersion, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := p.c.ServerVersionGet(ctx, p.req)
	if err != nil {
		return nil, p.fail("ServerVersionGet", err)
	}
	return engineVersionFromRPC(r.GetVersion()), nil
}

func (p *proxyEngineClient) VolumeGet(ctx context.Context) (*Volume, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := p.c.VolumeGet(ctx, p.req)
	if err != nil {
		return nil, p.fail("VolumeGet", err)
	}
	return volumeFromRPC(r.GetVolume()), nil
}

func (p *proxyEngineClient) VolumeExpand(ctx context.Context, size int64) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	_, err := p.c.VolumeExpand(ctx, &imrpc.EngineVolumeExpandRequest{ProxyEngineRequest: p.req, Size: size})
	if err != nil {
		return p.fail("VolumeExpand", err)
	}
	return nil
}

func (p *proxyEngineClient) VolumeFrontendStart(ctx context.Context, frontend string) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	_, err := p.c.VolumeFrontendStart(ctx, &imrpc.EngineVolumeFrontendStartRequest{ProxyEngineRequest: p.req, Frontend: frontend})
	if err != nil {
		return p.fail("VolumeFrontendStart", err)
	}
	return nil
}

func (p *proxyEngineClient) VolumeFrontendShutdown(ctx context.Context) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	if _, err := p.c.VolumeFrontendShutdown(ctx, p.req); err != nil {
		return p.fail("VolumeFrontendShutdown", err)
	}
	return nil
}

func (p *proxyEngineClient) VolumeSnapshot(ctx context.Context, name string, labels map[string]string) (string, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := p.c.VolumeSnapshot(ctx, &imrpc.EngineVolumeSnapshotRequest{ProxyEngineRequest: p.req, Name: name, Labels: labels})
	if err != nil {
		return "", p.fail("VolumeSnapshot", err)
	}
	return r.GetName(), nil
}

func (p *proxyEngineClient) SnapshotList(ctx context.Context) (map[string]*Snapshot, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := p.c.SnapshotList(ctx, p.req)
	if err != nil {
		return nil, p.fail("SnapshotList", err)
	}
	out := make(map[string]*Snapshot, len(r.GetDisks()))
	for name, s := range r.GetDisks() {
		out[name] = snapshotFromRPC(s)
	}
	return out, nil
}

func (p *proxyEngineClient) SnapshotRemove(ctx context.Context, names ...string) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	if _, err := p.c.SnapshotRemove(ctx, &imrpc.EngineSnapshotRemoveRequest{ProxyEngineRequest: p.req, Names: names}); err != nil {
		return p.fail("SnapshotRemove", err)
	}
	return nil
}

func (p *proxyEngineClient) SnapshotRevert(ctx context.Context, name string) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	if _, err := p.c.SnapshotRevert(ctx, &imrpc.EngineSnapshotRevertRequest{ProxyEngineRequest: p.req, Name: name}); err != nil {
		return p.fail("SnapshotRevert", err)
	}
	return nil
}

func (p *proxyEngineClient) SnapshotPurge(ctx context.Context, skipIfInProgress bool) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	if _, err := p.c.SnapshotPurge(ctx, &imrpc.EngineSnapshotPurgeRequest{ProxyEngineRequest: p.req, SkipIfInProgress: skipIfInProgress}); err != nil {
		return p.fail("SnapshotPurge", err)
	}
	return nil
}

func (p *proxyEngineClient) SnapshotPurgeStatus(ctx context.Context) (map[string]*PurgeStatus, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := p.c.SnapshotPurgeStatus(ctx, p.req)
	if err != nil {
		return nil, p.fail("SnapshotPurgeStatus", err)
	}
	out := make(map[string]*PurgeStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &PurgeStatus{Error: s.GetError(), IsPurging: s.GetIsPurging(), Progress: int(s.GetProgress()), State: s.GetState()}
	}
	return out, nil
}

func (p *proxyEngineClient) SnapshotClone(ctx context.Context, req SnapshotCloneRequest) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	_, err := p.c.SnapshotClone(ctx, &imrpc.EngineSnapshotCloneRequest{
		ProxyEngineRequest: p.req, FromEngineAddress: req.FromEngineAddress, FromVolumeName: req.FromVolumeName,
		SnapshotName: req.SnapshotName, ExportBackingImageIfExist: req.ExportBackingImageIfExist,
		FileSyncHttpClientTimeout: req.FileSyncHTTPClientTimeout,
	})
	if err != nil {
		return p.fail("SnapshotClone", err)
	}
	return nil
}

func (p *proxyEngineClient) SnapshotCloneStatus(ctx context.Context) (map[string]*CloneStatus, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := p.c.SnapshotCloneStatus(ctx, p.req)
	if err != nil {
		return nil, p.fail("SnapshotCloneStatus", err)
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
	ctx, cancel := callContext(ctx)
	defer cancel()
	_, err := p.c.ReplicaAdd(ctx, &imrpc.EngineReplicaAddRequest{
		ProxyEngineRequest: p.req, ReplicaAddress: req.Address, ReplicaName: req.InstanceName,
		Restore: req.Restore, Size: req.Size, CurrentSize: req.CurrentSize, FastSync: req.FastSync,
		FileSyncHttpClientTimeout: req.FileSyncHTTPClientTimeout, ConcurrentSyncLimit: req.ConcurrentSyncLimit,
	})
	if err != nil {
		return p.fail("ReplicaAdd "+req.Address, err)
	}
	return nil
}

func (p *proxyEngineClient) ReplicaList(ctx context.Context) ([]Replica, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := p.c.ReplicaList(ctx, p.req)
	if err != nil {
		return nil, p.fail("ReplicaList", err)
	}
	out := make([]Replica, 0, len(r.GetReplicaList()))
	for _, rep := range r.GetReplicaList() {
		out = append(out, Replica{Address: rep.GetAddress(), InstanceName: rep.GetInstanceName(), Mode: replicaModeFromRPC(rep.GetMode())})
	}
	return out, nil
}

func (p *proxyEngineClient) ReplicaRemove(ctx context.Context, address, instanceName string) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	_, err := p.c.ReplicaRemove(ctx, &imrpc.EngineReplicaRemoveRequest{ProxyEngineRequest: p.req, ReplicaAddress: address, ReplicaName: instanceName})
	if err != nil {
		return p.fail("ReplicaRemove "+address, err)
	}
	return nil
}

func (p *proxyEngineClient) ReplicaRebuildingStatus(ctx context.Context) (map[string]*RebuildStatus, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	r, err := p.c.ReplicaRebuildingStatus(ctx, p.req)
	if err != nil {
		return nil, p.fail("ReplicaRebuildingStatus", err)
	}
	out := make(map[string]*RebuildStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &RebuildStatus{
			Error: s.GetError(), IsRebuilding: s.GetIsRebuilding(), Progress: int(s.GetProgress()), State: s.GetState(),
			FromReplicaAddress: s.GetFromReplicaAddress(), FromReplicaAddressList: s.GetFromReplicaAddressList(),
		}
	}
	return out, nil
}

func (p *proxyEngineClient) ReplicaVerifyRebuild(ctx context.Context, address, instanceName string) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	_, err := p.c.ReplicaVerifyRebuild(ctx, &imrpc.EngineReplicaVerifyRebuildRequest{ProxyEngineRequest: p.req, ReplicaAddress: address, ReplicaName: instanceName})
	if err != nil {
		return p.fail("ReplicaVerifyRebuild "+address, err)
	}
	return nil
}

package engineapi

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// directEngineClient is EngineClient straight to the engine's own gRPC
// services (ptypes.ControllerService and lhext.ControllerExtService at
// EngineRef.Address): the fallback for an instance manager older than the
// engine proxy (proxy API version 0), as Longhorn's manager falls back to
// its engine binary for such instance managers. Callers see the same
// interface; IsGRPC reports false. The calls carry the proxy's
// volume-name and instance-name metadata, so the engine refuses a call
// meant for another volume that reused the address.
type directEngineClient struct {
	target string
	volume string
	c      engineServices
	md     []string
}

var (
	_ EngineClient = (*directEngineClient)(nil)
	_ BackupClient = (*directEngineClient)(nil)
)

// engineServices is an engine's two services on one connection.
type engineServices interface {
	enginerpc.ControllerServiceClient
	enginerpc.ControllerExtServiceClient
}

type engineServiceClients struct {
	enginerpc.ControllerServiceClient
	enginerpc.ControllerExtServiceClient
}

func newDirectEngineClient(cc grpc.ClientConnInterface, e EngineRef) *directEngineClient {
	var md []string
	if e.VolumeName != "" {
		md = append(md, "volume-name", e.VolumeName)
	}
	if e.Name != "" {
		md = append(md, "instance-name", e.Name)
	}
	return &directEngineClient{
		target: "engine " + e.Name + " (" + e.Address + ", direct)", volume: e.VolumeName,
		c:  engineServiceClients{enginerpc.NewControllerServiceClient(cc), enginerpc.NewControllerExtServiceClient(cc)},
		md: md,
	}
}

// engineMethod is an engineServices method taken as a method expression.
type engineMethod[In, Out any] func(engineServices, context.Context, In, ...grpc.CallOption) (Out, error)

// directCall makes one engine call with the default per-call timeout
// (unless ctx has a deadline), wrapping a failure as "TARGET: CALL: err".
func directCall[In, Out any](ctx context.Context, d *directEngineClient, call string, m engineMethod[In, Out], in In) (Out, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	if len(d.md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, d.md...)
	}
	out, err := m(d.c, ctx, in)
	if err != nil {
		return out, callError(d.target, call, err)
	}
	return out, nil
}

var noArgs = &emptypb.Empty{}

func (d *directEngineClient) IsGRPC() bool { return false }

func (d *directEngineClient) VersionGet(ctx context.Context) (*EngineVersion, error) {
	r, err := directCall(ctx, d, "VersionDetailGet", engineServices.VersionDetailGet, noArgs)
	if err != nil {
		return nil, err
	}
	v := r.GetVersion()
	return &EngineVersion{
		Version: v.GetVersion(), GitCommit: v.GetGitCommit(), BuildDate: v.GetBuildDate(),
		CLIAPIVersion: v.GetCliAPIVersion(), CLIAPIMinVersion: v.GetCliAPIMinVersion(),
		ControllerAPIVersion: v.GetControllerAPIVersion(), ControllerAPIMinVersion: v.GetControllerAPIMinVersion(),
		DataFormatVersion: v.GetDataFormatVersion(), DataFormatMinVersion: v.GetDataFormatMinVersion(),
	}, nil
}

func (d *directEngineClient) VolumeGet(ctx context.Context) (*Volume, error) {
	v, err := directCall(ctx, d, "VolumeGet", engineServices.VolumeGet, noArgs)
	if err != nil {
		return nil, err
	}
	return &Volume{
		Name: v.GetName(), Size: v.GetSize(), ReplicaCount: int(v.GetReplicaCount()),
		Endpoint: v.GetEndpoint(), Frontend: v.GetFrontend(), FrontendState: v.GetFrontendState(),
		IsExpanding: v.GetIsExpanding(), LastExpansionError: v.GetLastExpansionError(),
		LastExpansionFailedAt:     v.GetLastExpansionFailedAt(),
		UnmapMarkSnapChainRemoved: v.GetUnmapMarkSnapChainRemoved(),
		SnapshotMaxCount:          int(v.GetSnapshotMaxCount()), SnapshotMaxSize: v.GetSnapshotMaxSize(),
		CurrentSize: v.GetCurrentSize(), State: v.GetState(),
	}, nil
}

func (d *directEngineClient) VolumeExpand(ctx context.Context, size int64) error {
	_, err := directCall(ctx, d, "VolumeExpand", engineServices.VolumeExpand, &enginerpc.VolumeExpandRequest{Size: size})
	return err
}

func (d *directEngineClient) VolumeFrontendStart(ctx context.Context, frontend string) error {
	_, err := directCall(ctx, d, "VolumeFrontendStart", engineServices.VolumeFrontendStart, &enginerpc.VolumeFrontendStartRequest{Frontend: frontend})
	return err
}

func (d *directEngineClient) VolumeFrontendShutdown(ctx context.Context) error {
	_, err := directCall(ctx, d, "VolumeFrontendShutdown", engineServices.VolumeFrontendShutdown, noArgs)
	return err
}

func (d *directEngineClient) VolumeSnapshot(ctx context.Context, name string, labels map[string]string) (string, error) {
	r, err := directCall(ctx, d, "VolumeSnapshot", engineServices.VolumeSnapshot, &enginerpc.VolumeSnapshotRequest{Name: name, Labels: labels})
	if err != nil {
		return "", err
	}
	return r.GetName(), nil
}

func (d *directEngineClient) SnapshotList(ctx context.Context) (map[string]*Snapshot, error) {
	r, err := directCall(ctx, d, "SnapshotList", engineServices.SnapshotList, noArgs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Snapshot, len(r.GetSnapshots()))
	for name, s := range r.GetSnapshots() {
		out[name] = &Snapshot{Name: s.GetName(), Parent: s.GetParent(), Children: s.GetChildren(), Removed: s.GetRemoved(),
			UserCreated: s.GetUsercreated(), Created: s.GetCreated(), Size: s.GetSize(), Labels: s.GetLabels()}
	}
	return out, nil
}

func (d *directEngineClient) SnapshotRemove(ctx context.Context, names ...string) error {
	_, err := directCall(ctx, d, "SnapshotRemove", engineServices.SnapshotRemove, &enginerpc.SnapshotRemoveRequest{Names: names})
	return err
}

func (d *directEngineClient) SnapshotRevert(ctx context.Context, name string) error {
	_, err := directCall(ctx, d, "VolumeRevert", engineServices.VolumeRevert, &enginerpc.VolumeRevertRequest{Name: name})
	return err
}

func (d *directEngineClient) SnapshotPurge(ctx context.Context, skipIfInProgress bool) error {
	_, err := directCall(ctx, d, "SnapshotPurge", engineServices.SnapshotPurge, &enginerpc.SnapshotPurgeRequest{SkipIfInProgress: skipIfInProgress})
	return err
}

func (d *directEngineClient) SnapshotPurgeStatus(ctx context.Context) (map[string]*PurgeStatus, error) {
	r, err := directCall(ctx, d, "SnapshotPurgeStatus", engineServices.SnapshotPurgeStatus, noArgs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*PurgeStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &PurgeStatus{Error: s.GetError(), IsPurging: s.GetIsPurging(), Progress: int(s.GetProgress()), State: s.GetState()}
	}
	return out, nil
}

func (d *directEngineClient) SnapshotClone(ctx context.Context, req SnapshotCloneRequest) error {
	_, err := directCall(ctx, d, "SnapshotClone", engineServices.SnapshotClone, &enginerpc.EngineSnapshotCloneRequest{
		FromEngineAddress: req.FromEngineAddress, FromVolumeName: req.FromVolumeName, SnapshotName: req.SnapshotName,
		ExportBackingImageIfExist: req.ExportBackingImageIfExist, FileSyncHttpClientTimeout: req.FileSyncHTTPClientTimeout,
	})
	return err
}

func (d *directEngineClient) SnapshotCloneStatus(ctx context.Context) (map[string]*CloneStatus, error) {
	r, err := directCall(ctx, d, "SnapshotCloneStatus", engineServices.SnapshotCloneStatus, noArgs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*CloneStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &CloneStatus{IsCloning: s.GetIsCloning(), Error: s.GetError(), Progress: int(s.GetProgress()), State: s.GetState(),
			FromReplicaAddress: s.GetFromReplicaAddress(), SnapshotName: s.GetSnapshotName()}
	}
	return out, nil
}

func (d *directEngineClient) ReplicaAdd(ctx context.Context, req ReplicaAddRequest) error {
	_, err := directCall(ctx, d, "ReplicaAdd "+req.Address, engineServices.ReplicaAdd, &enginerpc.ReplicaAddRequest{
		Address: req.Address, InstanceName: req.InstanceName, Restore: req.Restore, FastSync: req.FastSync,
		FileSyncHttpClientTimeout: req.FileSyncHTTPClientTimeout, ConcurrentSyncLimit: req.ConcurrentSyncLimit,
		ReplicaRebuildingBandwidthLimit: req.BandwidthLimit,
		Size:                            req.Size, CurrentSize: req.CurrentSize,
	})
	return err
}

func (d *directEngineClient) ReplicaList(ctx context.Context) ([]Replica, error) {
	r, err := directCall(ctx, d, "ReplicaList", engineServices.ReplicaList, noArgs)
	if err != nil {
		return nil, err
	}
	out := make([]Replica, 0, len(r.GetReplicas()))
	for _, cr := range r.GetReplicas() {
		mode := ReplicaModeERR
		switch cr.GetMode() {
		case enginerpc.ReplicaMode_RW:
			mode = ReplicaModeRW
		case enginerpc.ReplicaMode_WO:
			mode = ReplicaModeWO
		}
		out = append(out, Replica{Address: cr.GetAddress().GetAddress(), InstanceName: cr.GetAddress().GetInstanceName(), Mode: mode})
	}
	return out, nil
}

func (d *directEngineClient) ReplicaRemove(ctx context.Context, address, instanceName string) error {
	_, err := directCall(ctx, d, "ReplicaDelete "+address, engineServices.ReplicaDelete,
		&enginerpc.ReplicaAddress{Address: address, InstanceName: instanceName})
	return err
}

func (d *directEngineClient) ReplicaRebuildingStatus(ctx context.Context) (map[string]*RebuildStatus, error) {
	r, err := directCall(ctx, d, "ReplicaRebuildingStatus", engineServices.ReplicaRebuildingStatus, noArgs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*RebuildStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &RebuildStatus{Error: s.GetError(), IsRebuilding: s.GetIsRebuilding(), Progress: int(s.GetProgress()), State: s.GetState(),
			FromReplicaAddress: s.GetFromReplicaAddress(), FromReplicaAddressList: s.GetFromReplicaAddressList(),
			AppliedRebuildingMBps: s.GetAppliedRebuildingMbps()}
	}
	return out, nil
}

func (d *directEngineClient) ReplicaVerifyRebuild(ctx context.Context, address, instanceName string) error {
	_, err := directCall(ctx, d, "ReplicaVerifyRebuild "+address, engineServices.ReplicaVerifyRebuild,
		&enginerpc.ReplicaAddress{Address: address, InstanceName: instanceName})
	return err
}

package server

import (
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// Conversions from the engine's ControllerService messages to the proxy's.

func volumeFromEngine(v *enginerpc.Volume) *imrpc.EngineVolume {
	return &imrpc.EngineVolume{
		Name: v.GetName(), Size: v.GetSize(), ReplicaCount: v.GetReplicaCount(),
		Endpoint: v.GetEndpoint(), Frontend: v.GetFrontend(), FrontendState: v.GetFrontendState(),
		IsExpanding: v.GetIsExpanding(), LastExpansionError: v.GetLastExpansionError(),
		LastExpansionFailedAt:     v.GetLastExpansionFailedAt(),
		UnmapMarkSnapChainRemoved: v.GetUnmapMarkSnapChainRemoved(),
		SnapshotMaxCount:          v.GetSnapshotMaxCount(), SnapshotMaxSize: v.GetSnapshotMaxSize(),
		CurrentSize: v.GetCurrentSize(), State: v.GetState(),
	}
}

func versionFromEngine(r *enginerpc.VersionDetailGetReply) *imrpc.EngineVersionDetails {
	v := r.GetVersion()
	return &imrpc.EngineVersionDetails{
		Version: v.GetVersion(), GitCommit: v.GetGitCommit(), BuildDate: v.GetBuildDate(),
		CliApiVersion: v.GetCliAPIVersion(), CliApiMinVersion: v.GetCliAPIMinVersion(),
		ControllerApiVersion: v.GetControllerAPIVersion(), ControllerApiMinVersion: v.GetControllerAPIMinVersion(),
		DataFormatVersion: v.GetDataFormatVersion(), DataFormatMinVersion: v.GetDataFormatMinVersion(),
	}
}

func snapshotsFromEngine(r *enginerpc.SnapshotListReply) map[string]*imrpc.EngineSnapshot {
	out := make(map[string]*imrpc.EngineSnapshot, len(r.GetSnapshots()))
	for name, s := range r.GetSnapshots() {
		out[name] = &imrpc.EngineSnapshot{
			Name: s.GetName(), Parent: s.GetParent(), Children: s.GetChildren(), Removed: s.GetRemoved(),
			Usercreated: s.GetUsercreated(), Created: s.GetCreated(), Size: s.GetSize(), Labels: s.GetLabels(),
		}
	}
	return out
}

func replicaModeFromEngine(m enginerpc.ReplicaMode) imrpc.ReplicaMode {
	switch m {
	case enginerpc.ReplicaMode_RW:
		return imrpc.ReplicaMode_RW
	case enginerpc.ReplicaMode_WO:
		return imrpc.ReplicaMode_WO
	}
	return imrpc.ReplicaMode_ERR
}

func replicasFromEngine(r *enginerpc.ReplicaListReply) []*imrpc.EngineReplica {
	out := make([]*imrpc.EngineReplica, 0, len(r.GetReplicas()))
	for _, cr := range r.GetReplicas() {
		out = append(out, &imrpc.EngineReplica{
			Address: cr.GetAddress().GetAddress(), InstanceName: cr.GetAddress().GetInstanceName(),
			Mode: replicaModeFromEngine(cr.GetMode()),
		})
	}
	return out
}

func rebuildStatusFromEngine(r *enginerpc.ReplicaRebuildingStatusReply) map[string]*imrpc.EngineReplicaRebuildStatus {
	out := make(map[string]*imrpc.EngineReplicaRebuildStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &imrpc.EngineReplicaRebuildStatus{
			Error: s.GetError(), IsRebuilding: s.GetIsRebuilding(), Progress: s.GetProgress(), State: s.GetState(),
			FromReplicaAddress: s.GetFromReplicaAddress(), FromReplicaAddressList: s.GetFromReplicaAddressList(),
			AppliedRebuildingMbps: s.GetAppliedRebuildingMbps(),
		}
	}
	return out
}

func purgeStatusFromEngine(r *enginerpc.SnapshotPurgeStatusReply) map[string]*imrpc.EngineSnapshotPurgeStatus {
	out := make(map[string]*imrpc.EngineSnapshotPurgeStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &imrpc.EngineSnapshotPurgeStatus{Error: s.GetError(), IsPurging: s.GetIsPurging(), Progress: s.GetProgress(), State: s.GetState()}
	}
	return out
}

func cloneStatusFromEngine(r *enginerpc.SnapshotCloneStatusReply) map[string]*imrpc.EngineSnapshotCloneStatus {
	out := make(map[string]*imrpc.EngineSnapshotCloneStatus, len(r.GetStatus()))
	for addr, s := range r.GetStatus() {
		out[addr] = &imrpc.EngineSnapshotCloneStatus{
			IsCloning: s.GetIsCloning(), Error: s.GetError(), Progress: s.GetProgress(), State: s.GetState(),
			FromReplicaAddress: s.GetFromReplicaAddress(), SnapshotName: s.GetSnapshotName(),
		}
	}
	return out
}

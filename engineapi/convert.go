package engineapi

import "github.com/longhorn-go/longhorn/instance-manager/imrpc"

func instanceSpecToRPC(s InstanceSpec) *imrpc.InstanceSpec {
	return &imrpc.InstanceSpec{
		Name: s.Name, Type: string(s.Type), VolumeName: s.VolumeName,
		PortCount: s.PortCount, PortArgs: s.PortArgs,
		ProcessInstanceSpec: &imrpc.ProcessInstanceSpec{Binary: s.Binary, Args: s.Args},
		ResourceLimits:      imrpc.LimitsToRPC(s.Limits),
	}
}

func statusFromRPC(state, errMsg string, start, end int32, uuid string) InstanceStatus {
	return InstanceStatus{State: InstanceState(state), ErrorMsg: errMsg, PortStart: start, PortEnd: end, UUID: uuid}
}

func instanceFromRPC(r *imrpc.InstanceResponse) *Instance {
	s, st := r.GetSpec(), r.GetStatus()
	return &Instance{
		Spec: InstanceSpec{
			Name: s.GetName(), Type: InstanceType(s.GetType()), VolumeName: s.GetVolumeName(),
			Binary: s.GetProcessInstanceSpec().GetBinary(), Args: s.GetProcessInstanceSpec().GetArgs(),
			PortCount: s.GetPortCount(), PortArgs: s.GetPortArgs(), Limits: imrpc.LimitsFromRPC(s.GetResourceLimits()),
		},
		Status:  statusFromRPC(st.GetState(), st.GetErrorMsg(), st.GetPortStart(), st.GetPortEnd(), st.GetUuid()),
		Deleted: r.GetDeleted(),
	}
}

func processFromRPC(r *imrpc.ProcessResponse) *Process {
	s, st := r.GetSpec(), r.GetStatus()
	return &Process{
		Name: s.GetName(), Binary: s.GetBinary(), Args: s.GetArgs(), PortCount: s.GetPortCount(), PortArgs: s.GetPortArgs(),
		Status:  statusFromRPC(st.GetState(), st.GetErrorMsg(), st.GetPortStart(), st.GetPortEnd(), st.GetUuid()),
		Deleted: r.GetDeleted(),
	}
}

func volumeFromRPC(v *imrpc.EngineVolume) *Volume {
	return &Volume{
		Name: v.GetName(), Size: v.GetSize(), ReplicaCount: int(v.GetReplicaCount()),
		Endpoint: v.GetEndpoint(), Frontend: v.GetFrontend(), FrontendState: v.GetFrontendState(),
		IsExpanding: v.GetIsExpanding(), LastExpansionError: v.GetLastExpansionError(),
		LastExpansionFailedAt:     v.GetLastExpansionFailedAt(),
		UnmapMarkSnapChainRemoved: v.GetUnmapMarkSnapChainRemoved(),
		SnapshotMaxCount:          int(v.GetSnapshotMaxCount()), SnapshotMaxSize: v.GetSnapshotMaxSize(),
		CurrentSize: v.GetCurrentSize(), State: v.GetState(),
	}
}

func replicaModeFromRPC(m imrpc.ReplicaMode) ReplicaMode {
	switch m {
	case imrpc.ReplicaMode_RW:
		return ReplicaModeRW
	case imrpc.ReplicaMode_WO:
		return ReplicaModeWO
	}
	return ReplicaModeERR
}

func snapshotFromRPC(s *imrpc.EngineSnapshot) *Snapshot {
	return &Snapshot{
		Name: s.GetName(), Parent: s.GetParent(), Children: s.GetChildren(), Removed: s.GetRemoved(),
		UserCreated: s.GetUsercreated(), Created: s.GetCreated(), Size: s.GetSize(), Labels: s.GetLabels(),
	}
}

func engineVersionFromRPC(v *imrpc.EngineVersionDetails) *EngineVersion {
	return &EngineVersion{
		Version: v.GetVersion(), GitCommit: v.GetGitCommit(), BuildDate: v.GetBuildDate(),
		CLIAPIVersion: v.GetCliApiVersion(), CLIAPIMinVersion: v.GetCliApiMinVersion(),
		ControllerAPIVersion: v.GetControllerApiVersion(), ControllerAPIMinVersion: v.GetControllerApiMinVersion(),
		DataFormatVersion: v.GetDataFormatVersion(), DataFormatMinVersion: v.GetDataFormatMinVersion(),
	}
}

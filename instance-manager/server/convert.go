package server

import (
	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/instance-manager/process"
)

func specFromRPC(s *imrpc.ProcessSpec) process.Spec {
	return process.Spec{Name: s.GetName(), Binary: s.GetBinary(), Args: s.GetArgs(), PortCount: s.GetPortCount(), PortArgs: s.GetPortArgs()}
}

func processResponse(i process.Info) *imrpc.ProcessResponse {
	return &imrpc.ProcessResponse{
		Spec: &imrpc.ProcessSpec{
			Name: i.Spec.Name, Binary: i.Spec.Binary, Args: i.Spec.Args,
			PortCount: i.Spec.PortCount, PortArgs: i.Spec.PortArgs,
		},
		Status: &imrpc.ProcessStatus{
			State: string(i.Status.State), ErrorMsg: i.Status.ErrorMsg,
			PortStart: i.Status.PortStart, PortEnd: i.Status.PortEnd, Uuid: i.Status.UUID,
		},
		Deleted: i.Deleted,
	}
}

func instanceResponse(i process.Info) *imrpc.InstanceResponse {
	return &imrpc.InstanceResponse{
		Spec: &imrpc.InstanceSpec{
			Name: i.Spec.Name, Type: i.Meta.Type, VolumeName: i.Meta.VolumeName,
			PortCount: i.Spec.PortCount, PortArgs: i.Spec.PortArgs,
			ProcessInstanceSpec: &imrpc.ProcessInstanceSpec{Binary: i.Spec.Binary, Args: i.Spec.Args},
			DataEngine:          imrpc.DataEngine_DATA_ENGINE_V1,
			ResourceLimits:      imrpc.LimitsToRPC(i.Spec.Limits),
		},
		Status: &imrpc.InstanceStatus{
			State: string(i.Status.State), ErrorMsg: i.Status.ErrorMsg,
			PortStart: i.Status.PortStart, PortEnd: i.Status.PortEnd, Uuid: i.Status.UUID,
		},
		Deleted: i.Deleted,
	}
}

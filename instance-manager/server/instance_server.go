package server

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/instance-manager/process"
)

// Instance types (Longhorn's InstanceSpec.type values for v1).
const (
	InstanceTypeEngine  = "engine"
	InstanceTypeReplica = "replica"
)

// instanceServer is imrpc.InstanceService: engine and replica instances, each
// one process of the process manager with its type and volume recorded.
// Processes created through ProcessManagerService are not instances.
type instanceServer struct {
	imrpc.UnimplementedInstanceServiceServer
	m              *process.Manager
	defaultBinary  string
	replaceTimeout time.Duration
	noProxy        bool
}

// validateInstanceSpec checks the instance fields and returns the process
// spec and meta; the process manager validates the rest.
func (s *instanceServer) validateInstanceSpec(spec *imrpc.InstanceSpec) (process.Spec, process.Meta, error) {
	if spec == nil {
		return process.Spec{}, process.Meta{}, invalidArg("spec is required")
	}
	if err := checkDataEngine(spec.GetDataEngine()); err != nil {
		return process.Spec{}, process.Meta{}, err
	}
	if t := spec.GetType(); t != InstanceTypeEngine && t != InstanceTypeReplica {
		return process.Spec{}, process.Meta{}, invalidArg("spec.type %q: want %q or %q", t, InstanceTypeEngine, InstanceTypeReplica)
	}
	if spec.GetVolumeName() == "" {
		return process.Spec{}, process.Meta{}, invalidArg("spec.volume_name is required")
	}
	if err := process.ValidateName(spec.GetVolumeName()); err != nil {
		return process.Spec{}, process.Meta{}, invalidArg("spec.volume_name: %v", err)
	}
	pis := spec.GetProcessInstanceSpec()
	if pis == nil || len(pis.GetArgs()) == 0 {
		return process.Spec{}, process.Meta{}, invalidArg("spec.process_instance_spec.args is required")
	}
	binary := pis.GetBinary()
	if binary == "" {
		binary = s.defaultBinary
	}
	ps := process.Spec{Name: spec.GetName(), Binary: binary, Args: pis.GetArgs(), PortCount: spec.GetPortCount(), PortArgs: spec.GetPortArgs(),
		Limits: imrpc.LimitsFromRPC(spec.GetResourceLimits())}
	return ps, process.Meta{Type: spec.GetType(), VolumeName: spec.GetVolumeName()}, nil
}

func checkDataEngine(d imrpc.DataEngine) error {
	if d != imrpc.DataEngine_DATA_ENGINE_V1 {
		return invalidArg("data_engine %v: this instance manager runs v1 instances only", d)
	}
	return nil
}

// lookup returns the instance name of type typ ("" = any type).
func (s *instanceServer) lookup(name, typ string, d imrpc.DataEngine) (process.Info, error) {
	if err := checkDataEngine(d); err != nil {
		return process.Info{}, err
	}
	info, err := s.m.Get(name)
	if err != nil {
		return process.Info{}, toStatus(err)
	}
	if info.Meta.Type == "" || typ != "" && info.Meta.Type != typ {
		return process.Info{}, status.Errorf(codes.NotFound, "instance %q of type %q not found", name, typ)
	}
	return info, nil
}

func (s *instanceServer) InstanceCreate(_ context.Context, req *imrpc.InstanceCreateRequest) (*imrpc.InstanceResponse, error) {
	ps, meta, err := s.validateInstanceSpec(req.GetSpec())
	if err != nil {
		return nil, err
	}
	info, err := s.m.Create(ps, meta)
	if err != nil {
		return nil, toStatus(err)
	}
	return instanceResponse(info), nil
}

func (s *instanceServer) InstanceDelete(_ context.Context, req *imrpc.InstanceDeleteRequest) (*imrpc.InstanceResponse, error) {
	if _, err := s.lookup(req.GetName(), req.GetType(), req.GetDataEngine()); err != nil {
		return nil, err
	}
	info, err := s.m.Delete(req.GetName(), req.GetUuid())
	if err != nil {
		return nil, toStatus(err)
	}
	return instanceResponse(info), nil
}

func (s *instanceServer) InstanceGet(_ context.Context, req *imrpc.InstanceGetRequest) (*imrpc.InstanceResponse, error) {
	info, err := s.lookup(req.GetName(), req.GetType(), req.GetDataEngine())
	if err != nil {
		return nil, err
	}
	return instanceResponse(info), nil
}

func (s *instanceServer) InstanceList(context.Context, *imrpc.Empty) (*imrpc.InstanceListResponse, error) {
	out := &imrpc.InstanceListResponse{Instances: map[string]*imrpc.InstanceResponse{}}
	for _, i := range s.m.List() {
		if i.Meta.Type != "" {
			out.Instances[i.Spec.Name] = instanceResponse(i)
		}
	}
	return out, nil
}

func (s *instanceServer) InstanceLog(req *imrpc.InstanceLogRequest, stream grpc.ServerStreamingServer[imrpc.LogResponse]) error {
	if _, err := s.lookup(req.GetName(), req.GetType(), req.GetDataEngine()); err != nil {
		return err
	}
	return toStatus(s.m.ReadLog(stream.Context(), req.GetName(), func(line string) error {
		return stream.Send(&imrpc.LogResponse{Line: line})
	}))
}

func (s *instanceServer) InstanceWatch(_ *imrpc.Empty, stream grpc.ServerStreamingServer[imrpc.InstanceResponse]) error {
	return watch(stream, s.m, func(i process.Info) error {
		if i.Meta.Type == "" {
			return nil
		}
		return stream.Send(instanceResponse(i))
	})
}

func (s *instanceServer) InstanceReplace(ctx context.Context, req *imrpc.InstanceReplaceRequest) (*imrpc.InstanceResponse, error) {
	ps, meta, err := s.validateInstanceSpec(req.GetSpec())
	if err != nil {
		return nil, err
	}
	sig, err := process.ParseSignal(req.GetTerminateSignal())
	if err != nil {
		return nil, toStatus(err)
	}
	if _, err := s.lookup(ps.Name, meta.Type, imrpc.DataEngine_DATA_ENGINE_V1); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.replaceTimeout)
	defer cancel()
	info, err := s.m.Replace(ctx, ps, meta, sig)
	if err != nil {
		return nil, toStatus(fmt.Errorf("instance replace: %w", err))
	}
	return instanceResponse(info), nil
}

func (s *instanceServer) VersionGet(context.Context, *imrpc.Empty) (*imrpc.VersionResponse, error) {
	return versionResponse(s.noProxy), nil
}

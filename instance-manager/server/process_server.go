package server

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/instance-manager/process"
	"github.com/longhorn-go/longhorn/meta"
)

// processServer is ProcessManagerService over a process.Manager.
type processServer struct {
	imrpc.UnimplementedProcessManagerServiceServer
	m              *process.Manager
	replaceTimeout time.Duration
	noProxy        bool
}

func (s *processServer) ProcessCreate(_ context.Context, req *imrpc.ProcessCreateRequest) (*imrpc.ProcessResponse, error) {
	if req.GetSpec() == nil {
		return nil, invalidArg("spec is required")
	}
	info, err := s.m.Create(specFromRPC(req.GetSpec()), process.Meta{})
	if err != nil {
		return nil, toStatus(err)
	}
	return processResponse(info), nil
}

func (s *processServer) ProcessDelete(_ context.Context, req *imrpc.ProcessDeleteRequest) (*imrpc.ProcessResponse, error) {
	info, err := s.m.Delete(req.GetName(), req.GetUuid())
	if err != nil {
		return nil, toStatus(err)
	}
	return processResponse(info), nil
}

func (s *processServer) ProcessGet(_ context.Context, req *imrpc.ProcessGetRequest) (*imrpc.ProcessResponse, error) {
	info, err := s.m.Get(req.GetName())
	if err != nil {
		return nil, toStatus(err)
	}
	return processResponse(info), nil
}

func (s *processServer) ProcessList(context.Context, *imrpc.ProcessListRequest) (*imrpc.ProcessListResponse, error) {
	out := &imrpc.ProcessListResponse{Processes: map[string]*imrpc.ProcessResponse{}}
	for _, i := range s.m.List() {
		out.Processes[i.Spec.Name] = processResponse(i)
	}
	return out, nil
}

func (s *processServer) ProcessLog(req *imrpc.LogRequest, stream grpc.ServerStreamingServer[imrpc.LogResponse]) error {
	return toStatus(s.m.ReadLog(stream.Context(), req.GetName(), func(line string) error {
		return stream.Send(&imrpc.LogResponse{Line: line})
	}))
}

func (s *processServer) ProcessWatch(_ *imrpc.Empty, stream grpc.ServerStreamingServer[imrpc.ProcessResponse]) error {
	return watch(stream, s.m, func(i process.Info) error {
		return stream.Send(processResponse(i))
	})
}

func (s *processServer) ProcessReplace(ctx context.Context, req *imrpc.ProcessReplaceRequest) (*imrpc.ProcessResponse, error) {
	if req.GetSpec() == nil {
		return nil, invalidArg("spec is required")
	}
	sig, err := process.ParseSignal(req.GetTerminateSignal())
	if err != nil {
		return nil, toStatus(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.replaceTimeout)
	defer cancel()
	info, err := s.m.Replace(ctx, specFromRPC(req.GetSpec()), process.Meta{}, sig)
	if err != nil {
		return nil, toStatus(err)
	}
	return processResponse(info), nil
}

func (s *processServer) VersionGet(context.Context, *imrpc.Empty) (*imrpc.VersionResponse, error) {
	return versionResponse(s.noProxy), nil
}

// versionResponse is VersionGet's answer; noProxy reports proxy API
// version 0, as an instance manager older than the engine proxy does.
func versionResponse(noProxy bool) *imrpc.VersionResponse {
	if noProxy {
		return &imrpc.VersionResponse{Version: meta.Version, GitCommit: meta.GitCommit, BuildDate: meta.BuildDate,
			InstanceManagerApiVersion: imrpc.InstanceManagerAPIVersion, InstanceManagerApiMinVersion: imrpc.InstanceManagerAPIMinVersion}
	}
	return &imrpc.VersionResponse{
		Version: meta.Version, GitCommit: meta.GitCommit, BuildDate: meta.BuildDate,
		InstanceManagerApiVersion:         imrpc.InstanceManagerAPIVersion,
		InstanceManagerApiMinVersion:      imrpc.InstanceManagerAPIMinVersion,
		InstanceManagerProxyApiVersion:    imrpc.InstanceManagerProxyAPIVersion,
		InstanceManagerProxyApiMinVersion: imrpc.InstanceManagerProxyAPIMinVersion,
	}
}

// watch sends every process event accepted by send until the stream ends.
// The response headers go out once the subscription exists, so a client that
// waited for them (engineapi does) misses no later change. It ends with
// Unavailable when the manager shuts down and ResourceExhausted when the
// client fell too far behind (it must re-list and watch again).
func watch(stream grpc.ServerStream, m *process.Manager, send func(process.Info) error) error {
	sub := m.Subscribe()
	defer sub.Close()
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return toStatus(ctx.Err())
		case ev, ok := <-sub.C():
			if !ok {
				if sub.Overflowed() {
					return status.Error(codes.ResourceExhausted, "watch fell behind; list again and restart the watch")
				}
				return status.Error(codes.Unavailable, process.ErrShuttingDown.Error())
			}
			if err := send(ev); err != nil {
				return err
			}
		}
	}
}

// Package rpcmeta holds what every gRPC server and client of the data plane
// shares with Longhorn's (longhorn-engine pkg/interceptor, pkg/*/rpc/server.go;
// ../../shared/reference/longhorn-engine-wire.md §1, §1.1): the identity
// metadata a caller attaches so that a process reused for another volume or
// instance refuses the call, the health service instance managers probe, and
// server reflection.
package rpcmeta

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// Outgoing metadata keys (Longhorn's interceptor.go).
const (
	VolumeNameKey   = "volume-name"
	InstanceNameKey = "instance-name"
)

// WithIdentity returns ctx carrying volume-name and instance-name for
// outgoing calls; an empty value is not sent (Longhorn sends a key only when
// it knows the value).
func WithIdentity(ctx context.Context, volume, instance string) context.Context {
	var kv []string
	if volume != "" {
		kv = append(kv, VolumeNameKey, volume)
	}
	if instance != "" {
		kv = append(kv, InstanceNameKey, instance)
	}
	if len(kv) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// IdentityInterceptor is the server side of Longhorn's identity check for
// unary calls: when the request carries exactly one value for a key and the
// server has a non-empty name for it, the two must match, or the call fails
// with FailedPrecondition "incorrect volume name X; check <what> address"
// (what: "controller" or "replica"). A missing key, several values or an
// empty server name mean no check.
func IdentityInterceptor(volume, instance, what string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := checkIdentity(ctx, volume, instance, what); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

func checkIdentity(ctx context.Context, volume, instance, what string) error {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return nil
	}
	for _, c := range []struct{ key, want, label string }{
		{VolumeNameKey, volume, "volume name"}, {InstanceNameKey, instance, "instance name"},
	} {
		got := md.Get(c.key)
		if c.want == "" || len(got) != 1 || got[0] == c.want {
			continue
		}
		return status.Error(codes.FailedPrecondition, fmt.Sprintf("incorrect %s %s; check %s address", c.label, got[0], what))
	}
	return nil
}

// RegisterHealth registers grpc.health.v1.Health on s answering SERVING for
// every service name, "" included (what Longhorn's servers answer and
// grpc_health_probe checks).
func RegisterHealth(s *grpc.Server) {
	hs := health.NewServer()
	hs.SetServingStatus("grpc", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, servingHealth{hs})
}

// servingHealth answers SERVING for any service name.
type servingHealth struct{ *health.Server }

func (servingHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// RegisterReflection registers server reflection (v1 and v1alpha) on s, as
// Longhorn's servers do.
func RegisterReflection(s *grpc.Server) { reflection.Register(s) }

// ClientIdentity is a dial option that attaches volume-name and
// instance-name (when not empty) to every unary call of the connection.
func ClientIdentity(volume, instance string) grpc.DialOption {
	return grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(WithIdentity(ctx, volume, instance), method, req, reply, cc, opts...)
	})
}

package server

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxLoggedRequest bounds the request text in a log line (bytes).
const maxLoggedRequest = 1024

// redactedFields are substrings of field names whose values are never logged.
var redactedFields = []string{"credential", "secret", "password", "token"}

// quietMethod reports whether a method is a read that the manager polls; its
// successes are logged at debug level only.
func quietMethod(fullMethod string) bool {
	m := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	for _, suffix := range []string{"Get", "List", "Status", "Ping", "Log", "Watch", "Check"} {
		if strings.HasSuffix(m, suffix) {
			return true
		}
	}
	return false
}

// loggingUnary logs every call with its code and duration, and the redacted
// request for calls that change something; it turns a panic into Internal.
func loggingUnary(log logrus.FieldLogger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		start := time.Now()
		defer func() {
			if r := recover(); r != nil {
				log.WithField("method", info.FullMethod).Errorf("panic: %v\n%s", r, debug.Stack())
				err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
			}
			logCall(log, info.FullMethod, req, start, err)
		}()
		return handler(ctx, req)
	}
}

// loggingStream is loggingUnary for streams (logged when the stream ends).
func loggingStream(log logrus.FieldLogger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		start := time.Now()
		defer func() {
			if r := recover(); r != nil {
				log.WithField("method", info.FullMethod).Errorf("panic: %v\n%s", r, debug.Stack())
				err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
			}
			logCall(log, info.FullMethod, nil, start, err)
		}()
		return handler(srv, ss)
	}
}

func logCall(log logrus.FieldLogger, method string, req any, start time.Time, err error) {
	code := status.Code(err)
	e := log.WithFields(logrus.Fields{"method": method, "code": code.String(), "duration": time.Since(start).Round(time.Microsecond)})
	if m, ok := req.(proto.Message); ok && !quietMethod(method) {
		e = e.WithField("request", redactedText(m))
	}
	switch {
	case err != nil && (code == codes.Internal || code == codes.Unknown):
		e.WithError(err).Error("gRPC call failed")
	case err != nil:
		e.WithError(err).Info("gRPC call refused")
	case quietMethod(method):
		e.Debug("gRPC call")
	default:
		e.Info("gRPC call")
	}
}

// redactedText renders m as compact JSON with sensitive fields replaced,
// truncated to maxLoggedRequest bytes.
func redactedText(m proto.Message) string {
	c := proto.Clone(m)
	redact(c.ProtoReflect())
	b, err := protojson.MarshalOptions{}.Marshal(c)
	if err != nil {
		return fmt.Sprintf("<unprintable: %v>", err)
	}
	s := string(b)
	if len(s) > maxLoggedRequest {
		s = s[:maxLoggedRequest] + "...(truncated)"
	}
	return s
}

func sensitive(name protoreflect.Name) bool {
	n := strings.ToLower(string(name))
	for _, r := range redactedFields {
		if strings.Contains(n, r) {
			return true
		}
	}
	return false
}

// redact clears sensitive fields in m and in every nested message.
func redact(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case sensitive(fd.Name()):
			m.Clear(fd)
			if fd.Kind() == protoreflect.StringKind && !fd.IsList() && !fd.IsMap() {
				m.Set(fd, protoreflect.ValueOfString("REDACTED"))
			}
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					redact(mv.Message())
					return true
				})
			}
		case fd.IsList():
			if fd.Kind() == protoreflect.MessageKind {
				for i := 0; i < v.List().Len(); i++ {
					redact(v.List().Get(i).Message())
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			redact(v.Message())
		}
		return true
	})
}

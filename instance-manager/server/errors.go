package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/instance-manager/process"
)

// toStatus maps a process manager error to a gRPC status error. Errors that
// already carry a status (from an engine) pass through unchanged.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codeOf(err), err.Error())
}

func codeOf(err error) codes.Code {
	switch {
	case errors.Is(err, process.ErrInvalidArgument):
		return codes.InvalidArgument
	case errors.Is(err, process.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, process.ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, process.ErrFailedPrecondition):
		return codes.FailedPrecondition
	case errors.Is(err, process.ErrPortsExhausted):
		return codes.ResourceExhausted
	case errors.Is(err, process.ErrShuttingDown):
		return codes.Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Internal
}

func invalidArg(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

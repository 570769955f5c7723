package engineapi

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrIncompatible is returned when an instance manager's API version range
// does not overlap what this client supports.
var ErrIncompatible = errors.New("incompatible instance manager API version")

// Code returns the gRPC code carried by err (possibly wrapped); codes.OK for
// nil and codes.Unknown for an error without a status.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code()
	}
	return codes.Unknown
}

// IsNotFound: no such instance (or the engine has no such snapshot/replica).
func IsNotFound(err error) bool { return Code(err) == codes.NotFound }

// IsAlreadyExists: an instance of that name exists with another spec.
func IsAlreadyExists(err error) bool { return Code(err) == codes.AlreadyExists }

// IsInvalidArgument: the request was refused as malformed; retrying will not help.
func IsInvalidArgument(err error) bool { return Code(err) == codes.InvalidArgument }

// IsUnimplemented: the server does not offer the call (e.g. backups for now).
func IsUnimplemented(err error) bool { return Code(err) == codes.Unimplemented }

// IsUnavailable: the instance manager or engine cannot be reached now.
func IsUnavailable(err error) bool { return Code(err) == codes.Unavailable }

// callError wraps err with the call and target, keeping the gRPC status
// reachable through errors.As.
func callError(target, call string, err error) error {
	return fmt.Errorf("%s: %s: %w", target, call, err)
}

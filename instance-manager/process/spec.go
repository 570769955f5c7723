package process

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
)

// Errors of the Manager. The gRPC layer maps them to status codes; wrap with %w.
var (
	// ErrInvalidArgument: the request is malformed; the message names the field and limit.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: no process of that name.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a process of that name exists with a different spec.
	ErrAlreadyExists = errors.New("already exists")
	// ErrFailedPrecondition: the process is in no state for the request (being
	// replaced or deleted, or the uuid names another run).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrShuttingDown: the manager is stopping all processes and takes no new ones.
	ErrShuttingDown = errors.New("instance manager is shutting down")
)

// Limits on a Spec.
const (
	// MaxNameLength bounds Spec.Name (a DNS subdomain's length).
	MaxNameLength = 253
	// MaxArgs bounds len(Spec.Args) + len(Spec.PortArgs).
	MaxArgs = 256
	// MaxArgLength bounds each argument in bytes.
	MaxArgLength = 4096
	// DefaultMaxPortCount bounds Spec.PortCount unless Config.MaxPortCount says otherwise.
	DefaultMaxPortCount = 50
)

// Spec says what to run: Longhorn's ProcessSpec.
type Spec struct {
	// Name identifies the process; [A-Za-z0-9][A-Za-z0-9._-]*, at most MaxNameLength.
	Name string
	// Binary is a path, or a name looked up in PATH.
	Binary string
	// Args are passed before the expanded port args.
	Args []string
	// PortCount consecutive ports are allocated, 1..Config.MaxPortCount.
	PortCount int32
	// PortArgs[i] + strconv.Itoa(PortStart+i) is split on "," and appended to
	// Args (Longhorn's rule): "--listen,127.0.0.1:" gives "--listen 127.0.0.1:P".
	// At most PortCount entries.
	PortArgs []string
	// Limits are the process's resource limits (its control group's), all
	// zero for none.
	Limits cgroup.Limits
}

// Meta is what the instance service records with a process. The process
// manager keeps it and compares it for idempotent creates but does not use it.
type Meta struct {
	// Type is the instance type ("engine", "replica"); "" for plain processes.
	Type string
	// VolumeName is the volume the instance serves.
	VolumeName string
}

// Status is the observed state: Longhorn's ProcessStatus.
type Status struct {
	State    State
	ErrorMsg string
	// PortStart and PortEnd are the allocated ports, inclusive.
	PortStart, PortEnd int32
	// UUID changes on every start of the name (create or replace).
	UUID string
	// PID of the OS process, 0 once it exited.
	PID int
}

// Info is a copy of one process's spec and status, as returned by the Manager
// and sent to watchers. Deleted is set on the last event of a process (and by
// Delete, meaning the deletion was accepted).
type Info struct {
	Spec    Spec
	Meta    Meta
	Status  Status
	Deleted bool
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// ValidateName checks a process name; it is also used for Get/Delete/Log.
func ValidateName(name string) error {
	if name == "" {
		return invalid("name is required")
	}
	if len(name) > MaxNameLength {
		return invalid("name is %d characters, at most %d allowed", len(name), MaxNameLength)
	}
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '.' && c != '_') {
			return invalid("name %q: character %d (%q) not allowed: want [A-Za-z0-9][A-Za-z0-9._-]*", name, i, c)
		}
	}
	return nil
}

// ValidateSpec checks s against the limits; maxPorts is the largest allowed
// PortCount. The error wraps ErrInvalidArgument and names the field.
func ValidateSpec(s Spec, maxPorts int32) error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	if s.Binary == "" {
		return invalid("binary is required")
	}
	if err := validateArgs("args", s.Args); err != nil {
		return err
	}
	if err := validateArgs("port_args", s.PortArgs); err != nil {
		return err
	}
	if n := len(s.Args) + len(s.PortArgs); n > MaxArgs {
		return invalid("args and port_args have %d entries, at most %d allowed", n, MaxArgs)
	}
	if s.PortCount < 1 || s.PortCount > maxPorts {
		return invalid("port_count is %d, want 1..%d", s.PortCount, maxPorts)
	}
	if len(s.PortArgs) > int(s.PortCount) {
		return invalid("port_args has %d entries, more than port_count %d", len(s.PortArgs), s.PortCount)
	}
	for i, pa := range s.PortArgs {
		if pa == "" {
			return invalid("port_args[%d] is empty", i)
		}
	}
	if err := s.Limits.Validate(); err != nil {
		return invalid("resource_limits: %v", err)
	}
	return nil
}

func validateArgs(field string, args []string) error {
	for i, a := range args {
		if len(a) > MaxArgLength {
			return invalid("%s[%d] is %d bytes, at most %d allowed", field, i, len(a), MaxArgLength)
		}
		if strings.IndexByte(a, 0) >= 0 {
			return invalid("%s[%d] contains a NUL byte", field, i)
		}
	}
	return nil
}

// BuildArgs returns the command line arguments: s.Args followed by every port
// arg with its port appended and split on ",".
func BuildArgs(s Spec, portStart int32) []string {
	out := slices.Clone(s.Args)
	for i, pa := range s.PortArgs {
		out = append(out, strings.Split(pa+strconv.Itoa(int(portStart)+i), ",")...)
	}
	return out
}

// ReadyAddresses returns the TCP addresses that must accept connections before
// the process counts as running: one per port arg, at the host the port arg
// names (the text between its last "," and the final ":"), with an empty or
// wildcard host probed on 127.0.0.1. Without port args it is PortStart on
// 127.0.0.1.
func ReadyAddresses(s Spec, portStart int32) []string {
	if len(s.PortArgs) == 0 {
		return []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(int(portStart)))}
	}
	out := make([]string, 0, len(s.PortArgs))
	for i, pa := range s.PortArgs {
		host := "127.0.0.1"
		last := pa[strings.LastIndexByte(pa, ',')+1:]
		if h, ok := strings.CutSuffix(last, ":"); ok {
			h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
			if h != "" && h != "0.0.0.0" && h != "::" {
				host = h
			}
		}
		out = append(out, net.JoinHostPort(host, strconv.Itoa(int(portStart)+i)))
	}
	return out
}

// sameRequest reports whether a create of (s, m) repeats an earlier one.
func sameRequest(a Spec, am Meta, b Spec, bm Meta) bool {
	return a.Name == b.Name && a.Binary == b.Binary && a.PortCount == b.PortCount &&
		slices.Equal(a.Args, b.Args) && slices.Equal(a.PortArgs, b.PortArgs) && a.Limits == b.Limits && am == bm
}

func cloneSpec(s Spec) Spec {
	s.Args = slices.Clone(s.Args)
	s.PortArgs = slices.Clone(s.PortArgs)
	return s
}

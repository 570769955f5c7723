package engineapi

import (
	"net"
	"strconv"
	"strings"
)

// ReplicaOptions describe a replica process:
// `longhorn engine replica DIR --size BYTES --volume-name VOL
// --replica-instance-name NAME [EXTRA...] --listen HOST:P` (P..P+9 are its ports).
type ReplicaOptions struct {
	Name       string
	VolumeName string
	DataDir    string
	Size       int64 // bytes
	// ListenHost is the replica's storage address; "" listens on all addresses.
	ListenHost string
	// DisableRevisionCounter passes --disable-revision-counter.
	DisableRevisionCounter bool
	// DisableDirectRead passes --disable-direct-read (a replica with
	// resource limits: engines must not read its files themselves).
	DisableDirectRead bool
	// ExtraArgs are appended before the port arguments.
	ExtraArgs []string
	// Binary is "" for the instance manager's own longhorn binary.
	Binary string
}

// ReplicaInstanceSpec returns the instance spec of a replica process.
func ReplicaInstanceSpec(o ReplicaOptions) InstanceSpec {
	args := []string{"engine", "replica", o.DataDir, "--size", strconv.FormatInt(o.Size, 10),
		"--volume-name", o.VolumeName, "--replica-instance-name", o.Name}
	if o.DisableRevisionCounter {
		args = append(args, "--disable-revision-counter")
	}
	if o.DisableDirectRead {
		args = append(args, "--disable-direct-read")
	}
	args = append(args, o.ExtraArgs...)
	return InstanceSpec{
		Name: o.Name, Type: InstanceTypeReplica, VolumeName: o.VolumeName, Binary: o.Binary, Args: args,
		PortCount: ReplicaPortCount, PortArgs: []string{"--listen," + o.ListenHost + ":"},
	}
}

// EngineOptions describe an engine process:
// `longhorn engine controller VOL --size BYTES --engine-instance-name NAME
// --frontend F [FRONTEND ARGS...] --replica tcp://HOST:P ... [EXTRA...] --listen HOST:PORT`.
type EngineOptions struct {
	Name       string
	VolumeName string
	Size       int64 // bytes
	// Frontend is "nbd", "iscsi" or "" (maintenance mode).
	Frontend string
	// FrontendArgs are the frontend's flags, e.g. "--nbd-listen", "unix:/run/vol.sock".
	FrontendArgs []string
	// Replicas are replica addresses "tcp://HOST:P" (P = the replica's PortStart).
	Replicas []string
	// ListenHost is the engine's gRPC address; "" listens on all addresses.
	ListenHost string
	ExtraArgs  []string
	Binary     string
}

// EngineInstanceSpec returns the instance spec of an engine process. The
// engine's gRPC address is then HOST:PortStart of the created instance; with
// frontend iscsi (and no --iscsi-listen in FrontendArgs) the iSCSI portal
// is HOST:PortStart+1.
func EngineInstanceSpec(o EngineOptions) InstanceSpec {
	args := []string{"engine", "controller", o.VolumeName, "--size", strconv.FormatInt(o.Size, 10),
		"--engine-instance-name", o.Name, "--frontend", o.Frontend}
	args = append(args, o.FrontendArgs...)
	for _, r := range o.Replicas {
		args = append(args, "--replica", r)
	}
	args = append(args, o.ExtraArgs...)
	spec := InstanceSpec{
		Name: o.Name, Type: InstanceTypeEngine, VolumeName: o.VolumeName, Binary: o.Binary, Args: args,
		PortCount: EnginePortCount, PortArgs: []string{"--listen," + o.ListenHost + ":"},
	}
	if o.Frontend == "iscsi" && !hasFlag(o.FrontendArgs, "--iscsi-listen") {
		// Each engine serves its own iSCSI target: one well-known port per
		// node (3260) would let only one iSCSI volume attach per node, so
		// the portal gets the instance's second allocated port.
		spec.PortCount = EnginePortCount + 1
		spec.PortArgs = append(spec.PortArgs, "--iscsi-listen,"+o.ListenHost+":")
	}
	return spec
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// ReplicaAddress is the engine-facing address of a replica instance that
// listens on host: "tcp://HOST:PortStart". An empty host (the replica listens
// on all addresses) gives 127.0.0.1, reachable from the same node only.
func ReplicaAddress(host string, i *Instance) string {
	return "tcp://" + joinHostPort(host, i.Status.PortStart)
}

// EngineAddress is the gRPC address "HOST:PortStart" of an engine instance
// that listens on host ("" gives 127.0.0.1, as for ReplicaAddress).
func EngineAddress(host string, i *Instance) string { return joinHostPort(host, i.Status.PortStart) }

func joinHostPort(host string, port int32) string {
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

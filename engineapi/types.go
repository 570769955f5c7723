// Package engineapi is the manager's side of the data plane: clients of the
// instance manager's InstanceService / ProcessManagerService (port 8500) and
// of its engine proxy (port 8501), behind plain Go types so controllers never
// see protobuf. Controllers share one Handler, which keeps one connection per
// instance manager, checks it with Ping/VersionGet and re-dials it when broken,
// and refuses an instance manager whose API version it does not support.
//
// Every call takes a context; a context without a deadline gets
// DefaultCallTimeout. Errors keep their gRPC status: test them with
// IsNotFound, IsAlreadyExists, IsInvalidArgument, IsUnimplemented, or
// errors.Is(err, ErrIncompatible).
package engineapi

import (
	"time"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
)

// InstanceType is the kind of an instance (Longhorn's InstanceSpec.type).
type InstanceType string

// Instance types.
const (
	InstanceTypeEngine  InstanceType = "engine"
	InstanceTypeReplica InstanceType = "replica"
)

// InstanceState is the observed state of an instance process.
type InstanceState string

// Instance states, as the instance manager reports them.
const (
	InstanceStateStarting InstanceState = "starting"
	InstanceStateRunning  InstanceState = "running"
	InstanceStateStopping InstanceState = "stopping"
	InstanceStateStopped  InstanceState = "stopped"
	InstanceStateError    InstanceState = "error"
)

// Default ports of an instance manager pod (Longhorn's).
const (
	DefaultInstanceManagerPort = 8500
	DefaultProxyPort           = 8501
)

// Port counts the manager asks for (Longhorn's DefaultEnginePortCount and
// DefaultReplicaPortCountV1): the engine's gRPC port; the replica's gRPC,
// data, sync agent and 7 transfer ports.
const (
	EnginePortCount  = 1
	ReplicaPortCount = 10
)

// DefaultCallTimeout bounds a call whose context has no deadline.
const DefaultCallTimeout = 30 * time.Second

// InstanceSpec says what to run as an instance.
type InstanceSpec struct {
	Name       string
	Type       InstanceType
	VolumeName string
	// Binary is "" for the instance manager's own longhorn binary.
	Binary string
	// Args come first; each PortArgs[i] gets PortStart+i appended and is split
	// on "," ("--listen,10.0.0.5:" -> "--listen 10.0.0.5:P").
	Args      []string
	PortCount int32
	PortArgs  []string
	// Limits are the process's resource limits, enforced by the instance
	// manager in the process's own cgroup (not in Longhorn; zero: none).
	Limits cgroup.Limits
}

// InstanceStatus is what the instance manager observed.
type InstanceStatus struct {
	State    InstanceState
	ErrorMsg string
	// PortStart..PortEnd (inclusive) are the ports allocated to the process.
	PortStart, PortEnd int32
	// UUID identifies this run; it changes on every start of the name.
	UUID string
}

// Instance is one engine or replica process.
type Instance struct {
	Spec   InstanceSpec
	Status InstanceStatus
	// Deleted marks the last watch event of an instance (and InstanceDelete's answer).
	Deleted bool
}

// Process is a plain process of ProcessManagerService (not an instance).
type Process struct {
	Name      string
	Binary    string
	Args      []string
	PortCount int32
	PortArgs  []string
	Status    InstanceStatus
	Deleted   bool
}

// APIVersions is an instance manager's VersionGet answer.
type APIVersions struct {
	Version, GitCommit, BuildDate string
	// InstanceManager is the process/instance API range served, [Min, Current].
	InstanceManagerMin, InstanceManagerCurrent int64
	// Proxy is the engine proxy API range served.
	ProxyMin, ProxyCurrent int64
}

// EngineRef names one engine: the instance and volume it serves and the
// address of its gRPC API ("HOST:PORT", the instance's PortStart).
type EngineRef struct {
	Name       string
	VolumeName string
	Address    string
}

// Volume is the engine's view of its volume.
type Volume struct {
	Name                      string
	Size                      int64 // bytes
	ReplicaCount              int
	Endpoint                  string // frontend endpoint, "" when the frontend is down
	Frontend                  string // "nbd", "iscsi" or "" (maintenance mode)
	FrontendState             string // "up" | "down"
	IsExpanding               bool
	LastExpansionError        string
	LastExpansionFailedAt     string // RFC3339
	UnmapMarkSnapChainRemoved bool
	SnapshotMaxCount          int
	SnapshotMaxSize           int64 // bytes, 0 = no limit
	CurrentSize               int64 // bytes
	State                     string
}

// ReplicaMode is a replica's mode in the engine.
type ReplicaMode string

// Replica modes (Longhorn's RW, WO, ERR).
const (
	ReplicaModeRW  ReplicaMode = "RW"
	ReplicaModeWO  ReplicaMode = "WO"
	ReplicaModeERR ReplicaMode = "ERR"
)

// Replica is one replica as the engine sees it.
type Replica struct {
	Address      string // "tcp://HOST:P"
	InstanceName string
	Mode         ReplicaMode
}

// Snapshot is one layer of the volume; the head is named "volume-head".
type Snapshot struct {
	Name        string
	Parent      string
	Children    map[string]bool
	Removed     bool
	UserCreated bool
	Created     string // RFC3339
	Size        int64  // bytes
	Labels      map[string]string
}

// RebuildStatus is the progress of a rebuild onto one replica.
type RebuildStatus struct {
	Error                  string
	IsRebuilding           bool
	Progress               int // percent
	State                  string
	FromReplicaAddress     string
	FromReplicaAddressList []string
	// AppliedRebuildingMBps is the rebuild's bandwidth limit, MB/s (0 = none).
	AppliedRebuildingMBps int64
}

// PurgeStatus is the progress of a snapshot purge on one replica.
type PurgeStatus struct {
	Error     string
	IsPurging bool
	Progress  int
	State     string
}

// CloneStatus is the progress of a snapshot clone on one replica.
type CloneStatus struct {
	IsCloning          bool
	Error              string
	Progress           int
	State              string
	FromReplicaAddress string
	SnapshotName       string
}

// EngineVersion is the engine binary's version detail.
type EngineVersion struct {
	Version, GitCommit, BuildDate                 string
	CLIAPIVersion, CLIAPIMinVersion               int64
	ControllerAPIVersion, ControllerAPIMinVersion int64
	DataFormatVersion, DataFormatMinVersion       int64
}

// ReplicaAddRequest asks the engine to rebuild a new replica.
type ReplicaAddRequest struct {
	Address      string // "tcp://HOST:P"
	InstanceName string
	Restore      bool
	// Size and CurrentSize are the volume's, bytes.
	Size, CurrentSize int64
	FastSync          bool
	// FileSyncHTTPClientTimeout is in seconds; 0 = engine default.
	FileSyncHTTPClientTimeout int32
	// ConcurrentSyncLimit is 1..5; 0 = engine default.
	ConcurrentSyncLimit int32
	// BandwidthLimit caps the rebuild's writes, MB/s (2^20 bytes); 0 = none.
	BandwidthLimit int64
}

// SnapshotCloneRequest asks the engine to clone a snapshot of another volume.
type SnapshotCloneRequest struct {
	FromEngineAddress         string // source engine gRPC "HOST:PORT"
	FromVolumeName            string
	SnapshotName              string
	ExportBackingImageIfExist bool
	FileSyncHTTPClientTimeout int32
}

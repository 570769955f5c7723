// Package scheduler places replicas on disks. It is pure: it takes plain values
// (nodes, disks, replicas, the volume's requirements, the already-resolved
// settings and the current time) and returns a decision plus the reason every
// rejected candidate was rejected. It reads no client, no datastore and no
// clock, so every rule is table-tested.
//
// The rules follow Longhorn's replica scheduler (longhorn-manager
// scheduler/replica_scheduler.go; see ../shared/reference/longhorn-facts.md
// section 4): schedulable nodes, hard node affinity, topology requirements,
// node/zone/disk anti-affinity (each soft or hard), node and disk tag
// selectors, the storage-over-provisioning-percentage and
// storage-minimal-available-percentage capacity formulas, eviction, data
// locality best-effort, reuse of failed replicas, and the balance-score disk
// choice.
package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Reason codes are Longhorn's ErrorReplicaSchedule* strings (longhorn-manager
// k8s/pkg/apis/longhorn/v1beta2/node.go). They reach the volume's Scheduled
// condition message through Reasons.Summary.
const (
	ReasonInsufficientStorage      = "insufficient storage"
	ReasonDiskNotFound             = "disk not found"
	ReasonDiskUnavailable          = "disks are unavailable"
	ReasonTagsNotFulfilled         = "tags not fulfilled"
	ReasonNodeNotFound             = "node not found"
	ReasonNodeUnavailable          = "nodes are unavailable"
	ReasonEngineImageNotReady      = "none of the node candidates contains a ready engine image"
	ReasonHardNodeAffinity         = "hard affinity cannot be satisfied"
	ReasonTopologyNotSatisfied     = "topology requirement cannot be satisfied"
	ReasonSchedulingFailed         = "replica scheduling failed"
	ReasonUnusedFailedReplica      = "unused failed replica is not supported"
	ReasonReplicaAlreadyScheduled  = "replica already scheduled"
	ReasonIncompatibleVolumeSize   = "incompatible volume size"
	ReasonInvalidSchedulingRequest = "invalid scheduling request"
)

// FailedReplicaMaxRetryCount is the number of rebuild retries after which a
// failed replica is never reused (Longhorn's FailedReplicaMaxRetryCount).
const FailedReplicaMaxRetryCount = 5

// MaxExt4VolumeSize is the largest volume a replica on an ext4 disk can hold:
// 16 TiB (Longhorn's util.MaxExt4VolumeSize).
const MaxExt4VolumeSize int64 = 16 * 1024 * 1024 * 1024 * 1024

// DataEngine is the volume's data engine, "v1" (files on a filesystem disk) or
// "v2" (a block disk).
type DataEngine string

// Data engines.
const (
	DataEngineV1 DataEngine = "v1"
	DataEngineV2 DataEngine = "v2"
)

// DiskType is a disk's kind: "filesystem" holds v1 replica directories,
// "block" holds v2 replica volumes.
type DiskType string

// Disk types.
const (
	DiskTypeFilesystem DiskType = "filesystem"
	DiskTypeBlock      DiskType = "block"
)

// DataLocality values (volume spec.dataLocality).
const (
	DataLocalityDisabled    = "disabled"
	DataLocalityBestEffort  = "best-effort"
	DataLocalityStrictLocal = "strict-local"
)

// Robustness values the scheduler cares about (volume status.robustness).
const (
	RobustnessHealthy  = "healthy"
	RobustnessDegraded = "degraded"
	RobustnessFaulted  = "faulted"
	RobustnessUnknown  = "unknown"
)

// ReplicaAutoBalanceBestEffort is the replica-auto-balance value under which a
// node that already holds a replica still counts as unused.
const ReplicaAutoBalanceBestEffort = "best-effort"

// Disk is one disk of a node: its spec, its measured status and its
// conditions, flattened. Sizes are bytes.
type Disk struct {
	Name string // key in node.spec.disks
	UUID string // status.diskUUID; replicas refer to disks by UUID
	Path string
	Type DiskType
	// FSType is the filesystem the disk path lives on ("ext4", "xfs", ...);
	// ext4 limits a volume to MaxExt4VolumeSize.
	FSType string

	AllowScheduling   bool
	EvictionRequested bool
	Tags              []string

	// Ready and Schedulable are the disk conditions' statuses (True = true).
	// SchedulableReason is the Schedulable condition's reason when false
	// ("DiskPressure" lets a failed replica on a not-yet-full disk be reused).
	Ready             bool
	Schedulable       bool
	SchedulableReason string

	StorageMaximum   int64
	StorageAvailable int64
	StorageScheduled int64
	StorageReserved  int64
	// ScheduledReplicas lists replicas already counted in StorageScheduled
	// (status.scheduledReplica: name -> size).
	ScheduledReplicas map[string]int64
}

// Node is one Longhorn node with its disks, flattened from the Node object,
// the instance manager and the engine image.
type Node struct {
	Name   string
	Zone   string
	Region string

	Deleting bool
	// Ready and Schedulable are the node conditions' statuses.
	Ready       bool
	Schedulable bool

	AllowScheduling   bool
	EvictionRequested bool
	Tags              []string

	// InstanceManagerReady: the node's instance manager is running.
	// EngineImageReady: the volume's engine image is deployed there.
	InstanceManagerReady bool
	EngineImageReady     bool

	Disks []Disk
}

// Replica is a replica of the volume being scheduled. Zero times mean the
// field is unset (Longhorn's empty RFC 3339 strings).
type Replica struct {
	Name   string
	NodeID string
	DiskID string // disk UUID
	// VolumeSize is the replica's spec.volumeSize in bytes.
	VolumeSize int64

	HealthyAt         time.Time
	FailedAt          time.Time
	RebuildRetryCount int
	EvictionRequested bool
	HardNodeAffinity  string
	Active            bool
	Deleting          bool
	// InstanceManagerRunning: the instance manager on the replica's node is
	// running and not being deleted (needed to reuse a failed replica).
	InstanceManagerRunning bool
}

// Failed reports whether the replica has failed (spec.failedAt set).
func (r Replica) Failed() bool { return !r.FailedAt.IsZero() }

// TopologyTerm is one term of the volume's topologyRequirement. Empty fields
// match anything; a node matches the requirement if it matches any term.
type TopologyTerm struct {
	Zone   string
	Region string
}

// Volume is what the scheduler needs to know about the volume.
type Volume struct {
	Name string
	// Size is spec.size in bytes; ActualSize is status.actualSize (bytes
	// already written, which must still fit on the disk).
	Size       int64
	ActualSize int64
	DataEngine DataEngine

	NodeSelector        []string
	DiskSelector        []string
	TopologyRequirement []TopologyTerm

	DataLocality string
	// NodeID is the node the volume is attached to (spec.nodeID), used for
	// data locality.
	NodeID string

	Robustness     string
	LastDegradedAt time.Time
}

// Settings holds the resolved scheduling settings. The anti-affinity flags are
// already merged with the volume's overrides (see ResolveSoftAntiAffinity).
type Settings struct {
	NodeSoftAntiAffinity bool // replica-soft-anti-affinity
	ZoneSoftAntiAffinity bool // replica-zone-soft-anti-affinity
	DiskSoftAntiAffinity bool // replica-disk-soft-anti-affinity

	OverProvisioningPercentage int64 // storage-over-provisioning-percentage
	MinimalAvailablePercentage int64 // storage-minimal-available-percentage

	AllowEmptyNodeSelectorVolume bool // allow-empty-node-selector-volume
	AllowEmptyDiskSelectorVolume bool // allow-empty-disk-selector-volume

	// ReplenishmentWaitInterval is replica-replenishment-wait-interval.
	ReplenishmentWaitInterval time.Duration
	// ReplicaAutoBalance is the effective replica-auto-balance value.
	ReplicaAutoBalance string
}

// ResolveSoftAntiAffinity merges a global soft-anti-affinity setting with a
// volume's per-volume override ("ignored" or "" keeps the global value,
// "enabled" means soft, "disabled" means hard), as Longhorn does for
// replicaSoftAntiAffinity, replicaZoneSoftAntiAffinity and
// replicaDiskSoftAntiAffinity.
func ResolveSoftAntiAffinity(global bool, volumeOverride string) bool {
	switch volumeOverride {
	case "enabled":
		return true
	case "disabled":
		return false
	default:
		return global
	}
}

// Reason says why one candidate was rejected. Node is set for node-level
// rejections; Node and Disk for disk-level ones. Code is one of the Reason*
// constants; Detail is a human sentence with the numbers.
type Reason struct {
	Node   string
	Disk   string
	Code   string
	Detail string
}

// String renders "node/disk: code: detail".
func (r Reason) String() string {
	where := r.Node
	if r.Disk != "" {
		where += "/" + r.Disk
	}
	if where == "" {
		return r.Code + ": " + r.Detail
	}
	return where + ": " + r.Code + ": " + r.Detail
}

// Reasons is the list of rejections collected while scheduling.
type Reasons []Reason

// Codes returns the distinct codes, sorted.
func (rs Reasons) Codes() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rs {
		if !seen[r.Code] {
			seen[r.Code] = true
			out = append(out, r.Code)
		}
	}
	sort.Strings(out)
	return out
}

// Summary joins the distinct codes with ";" as Longhorn's multierr Join does;
// this is the message of the volume's Scheduled=False condition.
func (rs Reasons) Summary() string { return strings.Join(rs.Codes(), ";") }

// MaxMessageDetails is how many distinct rejections Message lists.
const MaxMessageDetails = 6

// Message is the Scheduled=False condition message: the Summary (Longhorn's
// text, so anything matching it still matches) followed by the distinct
// rejections, "node/disk: code: detail", in order, at most
// MaxMessageDetails of them and then how many more there were. Example:
//
//	insufficient storage (n1/d1: insufficient storage: provisioned space: size ... exceeds the limit ...)
func (rs Reasons) Message() string {
	seen := map[string]bool{}
	var details []string
	for _, r := range rs {
		if s := r.String(); !seen[s] {
			seen[s] = true
			details = append(details, s)
		}
	}
	if len(details) == 0 {
		return rs.Summary()
	}
	more := ""
	if len(details) > MaxMessageDetails {
		more = fmt.Sprintf("; and %d more", len(details)-MaxMessageDetails)
		details = details[:MaxMessageDetails]
	}
	return rs.Summary() + " (" + strings.Join(details, "; ") + more + ")"
}

// Decision is where a replica goes.
type Decision struct {
	NodeID   string
	DiskName string
	DiskUUID string
	DiskPath string
}

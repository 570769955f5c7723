package v1beta2

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeState is the lifecycle state of a volume (status.state).
type VolumeState string

// Volume states: creating -> detached -> attaching -> attached -> detaching
// -> detached; deleting once a deletion timestamp is set.
const (
	VolumeStateCreating  VolumeState = "creating"
	VolumeStateAttached  VolumeState = "attached"
	VolumeStateDetached  VolumeState = "detached"
	VolumeStateAttaching VolumeState = "attaching"
	VolumeStateDetaching VolumeState = "detaching"
	VolumeStateDeleting  VolumeState = "deleting"
)

// VolumeRobustness summarises replica health (status.robustness).
type VolumeRobustness string

// Volume robustness values.
const (
	// VolumeRobustnessHealthy: attached, healthy RW replicas >= numberOfReplicas.
	VolumeRobustnessHealthy VolumeRobustness = "healthy"
	// VolumeRobustnessDegraded: attached, fewer healthy RW replicas than wanted.
	VolumeRobustnessDegraded VolumeRobustness = "degraded"
	// VolumeRobustnessFaulted: no healthy replica; the volume is detached.
	VolumeRobustnessFaulted VolumeRobustness = "faulted"
	// VolumeRobustnessUnknown: the engine state is unknown (e.g. node down).
	VolumeRobustnessUnknown VolumeRobustness = "unknown"
)

// VolumeFrontend is how an attached volume is exposed on its node.
// +kubebuilder:validation:Enum=blockdev;iscsi;nvmf;ublk;nbd;""
type VolumeFrontend string

// Volume frontends. Empty means no frontend (maintenance mode).
const (
	VolumeFrontendBlockDev VolumeFrontend = "blockdev"
	VolumeFrontendISCSI    VolumeFrontend = "iscsi"
	VolumeFrontendNvmf     VolumeFrontend = "nvmf"
	VolumeFrontendUblk     VolumeFrontend = "ublk"
	// VolumeFrontendNBD is this project's extension: the engine serves NBD
	// directly (Longhorn has no such value; manifests without it are unaffected).
	VolumeFrontendNBD   VolumeFrontend = "nbd"
	VolumeFrontendEmpty VolumeFrontend = ""
)

// VolumeDataSource names the source of a new volume's data:
// "vol://<volume>" or "snap://<volume>/<snapshot>".
type VolumeDataSource string

// VolumeDataSourceType is the kind of a VolumeDataSource.
type VolumeDataSourceType string

// Data source kinds and their URL prefixes.
const (
	VolumeDataSourceTypeBackup   VolumeDataSourceType = "backup"
	VolumeDataSourceTypeSnapshot VolumeDataSourceType = "snapshot"
	VolumeDataSourceTypeVolume   VolumeDataSourceType = "volume"

	VolumeDataSourceVolumePrefix   = "vol://"
	VolumeDataSourceSnapshotPrefix = "snap://"
)

// Parse splits a data source in Longhorn's two forms: vol://<volume>
// (snapshot "") or snap://<volume>/<snapshot>; ok is false for anything
// else.
func (ds VolumeDataSource) Parse() (volume, snapshot string, ok bool) {
	if rest, found := strings.CutPrefix(string(ds), VolumeDataSourceVolumePrefix); found {
		return rest, "", rest != "" && !strings.Contains(rest, "/")
	}
	if rest, found := strings.CutPrefix(string(ds), VolumeDataSourceSnapshotPrefix); found {
		v, sn, _ := strings.Cut(rest, "/")
		return v, sn, v != "" && sn != "" && !strings.Contains(sn, "/")
	}
	return "", "", false
}

// DataLocality asks for a replica on the attached node.
// +kubebuilder:validation:Enum=disabled;best-effort;strict-local
type DataLocality string

// Data locality modes.
const (
	DataLocalityDisabled    DataLocality = "disabled"
	DataLocalityBestEffort  DataLocality = "best-effort"
	DataLocalityStrictLocal DataLocality = "strict-local"
)

// AccessMode is the volume access mode.
// +kubebuilder:validation:Enum=rwo;rwop;rwx
type AccessMode string

// Access modes.
const (
	AccessModeReadWriteOnce    AccessMode = "rwo"
	AccessModeReadWriteOncePod AccessMode = "rwop"
	AccessModeReadWriteMany    AccessMode = "rwx"
)

// ReplicaAutoBalance selects how replicas are rebalanced across nodes/zones.
// +kubebuilder:validation:Enum=ignored;disabled;least-effort;best-effort
type ReplicaAutoBalance string

// Replica auto-balance modes; ignored = use the global setting.
const (
	ReplicaAutoBalanceIgnored     ReplicaAutoBalance = "ignored"
	ReplicaAutoBalanceDisabled    ReplicaAutoBalance = "disabled"
	ReplicaAutoBalanceLeastEffort ReplicaAutoBalance = "least-effort"
	ReplicaAutoBalanceBestEffort  ReplicaAutoBalance = "best-effort"
)

// UnmapMarkSnapChainRemoved lets an unmap mark removable snapshots removed.
// +kubebuilder:validation:Enum=ignored;disabled;enabled
type UnmapMarkSnapChainRemoved string

// UnmapMarkSnapChainRemoved values; ignored = use the global setting.
const (
	UnmapMarkSnapChainRemovedIgnored  UnmapMarkSnapChainRemoved = "ignored"
	UnmapMarkSnapChainRemovedDisabled UnmapMarkSnapChainRemoved = "disabled"
	UnmapMarkSnapChainRemovedEnabled  UnmapMarkSnapChainRemoved = "enabled"
)

// VolumeCloneState is the progress of a clone into this volume.
type VolumeCloneState string

// Clone states.
const (
	VolumeCloneStateEmpty                        VolumeCloneState = ""
	VolumeCloneStateInitiated                    VolumeCloneState = "initiated"
	VolumeCloneStateCopyCompletedAwaitingHealthy VolumeCloneState = "copy-completed-awaiting-healthy"
	VolumeCloneStateCompleted                    VolumeCloneState = "completed"
	VolumeCloneStateFailed                       VolumeCloneState = "failed"
)

// CloneMode selects how a volume is cloned from its data source.
// +kubebuilder:validation:Enum="";full-copy;linked-clone
type CloneMode string

// Clone modes; empty means full copy.
const (
	CloneModeEmpty       CloneMode = ""
	CloneModeFullCopy    CloneMode = "full-copy"
	CloneModeLinkedClone CloneMode = "linked-clone"
)

// VolumeCloneStatus tracks a clone into this volume.
type VolumeCloneStatus struct {
	// +optional
	SourceVolume string `json:"sourceVolume"`
	// +optional
	Snapshot string `json:"snapshot"`
	// +optional
	State VolumeCloneState `json:"state"`
	// AttemptCount counts clone attempts.
	// +optional
	AttemptCount int `json:"attemptCount"`
	// NextAllowedAttemptAt is the RFC 3339 time before which no retry starts.
	// +optional
	NextAllowedAttemptAt string `json:"nextAllowedAttemptAt"`
}

// Volume condition types.
const (
	VolumeConditionTypeScheduled                = "Scheduled"
	VolumeConditionTypeRestore                  = "Restore"
	VolumeConditionTypeTooManySnapshots         = "TooManySnapshots"
	VolumeConditionTypeWaitForBackingImage      = "WaitForBackingImage"
	VolumeConditionTypeBackingImageIncompatible = "BackingImageIncompatible"
	VolumeConditionTypeOfflineRebuilding        = "OfflineRebuilding"
)

// Volume condition reasons.
const (
	VolumeConditionReasonReplicaSchedulingFailure      = "ReplicaSchedulingFailure"
	VolumeConditionReasonLocalReplicaSchedulingFailure = "LocalReplicaSchedulingFailure"
	VolumeConditionReasonRestoreInProgress             = "RestoreInProgress"
	VolumeConditionReasonRestoreFailure                = "RestoreFailure"
	VolumeConditionReasonTooManySnapshots              = "TooManySnapshots"
	VolumeConditionReasonWaitForBackingImageFailed     = "GetBackingImageFailed"
	VolumeConditionReasonWaitForBackingImageWaiting    = "Waiting"
)

// SnapshotDataIntegrity selects snapshot checksumming.
// +kubebuilder:validation:Enum=ignored;disabled;enabled;fast-check
type SnapshotDataIntegrity string

// Snapshot data integrity modes; ignored = use the global setting.
const (
	SnapshotDataIntegrityIgnored   SnapshotDataIntegrity = "ignored"
	SnapshotDataIntegrityDisabled  SnapshotDataIntegrity = "disabled"
	SnapshotDataIntegrityEnabled   SnapshotDataIntegrity = "enabled"
	SnapshotDataIntegrityFastCheck SnapshotDataIntegrity = "fast-check"
)

// RestoreVolumeRecurringJobType says whether recurring jobs stored with a
// backup are restored with the volume.
// +kubebuilder:validation:Enum=ignored;enabled;disabled
type RestoreVolumeRecurringJobType string

// RestoreVolumeRecurringJob values; ignored = use the global setting.
const (
	RestoreVolumeRecurringJobDefault  RestoreVolumeRecurringJobType = "ignored"
	RestoreVolumeRecurringJobEnabled  RestoreVolumeRecurringJobType = "enabled"
	RestoreVolumeRecurringJobDisabled RestoreVolumeRecurringJobType = "disabled"
)

// ReplicaSoftAntiAffinity allows replicas of one volume on the same node.
// +kubebuilder:validation:Enum=ignored;enabled;disabled
type ReplicaSoftAntiAffinity string

// ReplicaSoftAntiAffinity values; ignored = use the global setting.
const (
	ReplicaSoftAntiAffinityDefault  ReplicaSoftAntiAffinity = "ignored"
	ReplicaSoftAntiAffinityEnabled  ReplicaSoftAntiAffinity = "enabled"
	ReplicaSoftAntiAffinityDisabled ReplicaSoftAntiAffinity = "disabled"
)

// ReplicaZoneSoftAntiAffinity allows replicas of one volume in the same zone.
// +kubebuilder:validation:Enum=ignored;enabled;disabled
type ReplicaZoneSoftAntiAffinity string

// ReplicaZoneSoftAntiAffinity values; ignored = use the global setting.
const (
	ReplicaZoneSoftAntiAffinityDefault  ReplicaZoneSoftAntiAffinity = "ignored"
	ReplicaZoneSoftAntiAffinityEnabled  ReplicaZoneSoftAntiAffinity = "enabled"
	ReplicaZoneSoftAntiAffinityDisabled ReplicaZoneSoftAntiAffinity = "disabled"
)

// ReplicaDiskSoftAntiAffinity allows replicas of one volume on the same disk.
// +kubebuilder:validation:Enum=ignored;enabled;disabled
type ReplicaDiskSoftAntiAffinity string

// ReplicaDiskSoftAntiAffinity values; ignored = use the global setting.
const (
	ReplicaDiskSoftAntiAffinityDefault  ReplicaDiskSoftAntiAffinity = "ignored"
	ReplicaDiskSoftAntiAffinityEnabled  ReplicaDiskSoftAntiAffinity = "enabled"
	ReplicaDiskSoftAntiAffinityDisabled ReplicaDiskSoftAntiAffinity = "disabled"
)

// FreezeFilesystemForSnapshot freezes the mounted filesystem around a snapshot.
// +kubebuilder:validation:Enum=ignored;enabled;disabled
type FreezeFilesystemForSnapshot string

// FreezeFilesystemForSnapshot values; ignored = use the global setting.
const (
	FreezeFilesystemForSnapshotDefault  FreezeFilesystemForSnapshot = "ignored"
	FreezeFilesystemForSnapshotEnabled  FreezeFilesystemForSnapshot = "enabled"
	FreezeFilesystemForSnapshotDisabled FreezeFilesystemForSnapshot = "disabled"
)

// VolumeOfflineRebuilding allows rebuilding replicas of a detached volume.
// +kubebuilder:validation:Enum=ignored;disabled;enabled
type VolumeOfflineRebuilding string

// Offline rebuilding values; ignored = use the global setting.
const (
	VolumeOfflineRebuildingIgnored  VolumeOfflineRebuilding = "ignored"
	VolumeOfflineRebuildingDisabled VolumeOfflineRebuilding = "disabled"
	VolumeOfflineRebuildingEnabled  VolumeOfflineRebuilding = "enabled"
)

// Backup block sizes in bytes (Volume.spec.backupBlockSize, Backup.spec.backupBlockSize).
const (
	BackupBlockSizeInvalid int64 = -1
	BackupBlockSize2Mi     int64 = 2 << 20
	BackupBlockSize16Mi    int64 = 16 << 20
)

// DataLayoutType says how a volume's data is spread over nodes.
// +kubebuilder:validation:Enum=replicated;sharded;""
type DataLayoutType string

// Data layout types.
const (
	DataLayoutTypeReplicated DataLayoutType = "replicated"
	DataLayoutTypeSharded    DataLayoutType = "sharded"
)

// DataLayoutMode is the protection mechanism of a data layout.
// +kubebuilder:validation:Enum=raid1;erasureCoding;""
type DataLayoutMode string

// Data layout modes.
const (
	DataLayoutModeRAID1         DataLayoutMode = "raid1"
	DataLayoutModeErasureCoding DataLayoutMode = "erasureCoding"
)

// DataLayout is the intended data layout of a volume; immutable after
// creation. Sharded (erasure-coded) layouts are v2-only and out of scope here.
type DataLayout struct {
	// +optional
	Type DataLayoutType `json:"type,omitempty"`
	// +optional
	Mode DataLayoutMode `json:"mode,omitempty"`
	// DataChunks is k of a k+m erasure-coded layout; 0 when replicated.
	// +kubebuilder:validation:Minimum=0
	// +optional
	DataChunks int `json:"dataChunks,omitempty"`
	// ParityChunks is m of a k+m erasure-coded layout; 0 when replicated.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ParityChunks int `json:"parityChunks,omitempty"`
	// StripSizeKB is the erasure-coding chunk size in KiB; 0 when replicated.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StripSizeKB int `json:"stripSizeKB,omitempty"`
}

// VolumeTopologyTerm is one failure domain the replicas may be placed in;
// empty fields match anything.
type VolumeTopologyTerm struct {
	// +optional
	Zone string `json:"zone,omitempty"`
	// +optional
	Region string `json:"region,omitempty"`
}

// KubernetesStatus mirrors the PV/PVC/pods that use the volume.
type KubernetesStatus struct {
	// +optional
	PVName string `json:"pvName"`
	// +optional
	PVStatus string `json:"pvStatus"`
	// Namespace of the PVC; kept after the PVC is gone (history).
	// +optional
	Namespace string `json:"namespace"`
	// +optional
	PVCName string `json:"pvcName"`
	// +optional
	LastPVCRefAt string `json:"lastPVCRefAt"`
	// +optional
	// +nullable
	WorkloadsStatus []WorkloadStatus `json:"workloadsStatus"`
	// +optional
	LastPodRefAt string `json:"lastPodRefAt"`
}

// WorkloadStatus is one pod (and its owning workload) using the volume.
type WorkloadStatus struct {
	// +optional
	PodName string `json:"podName"`
	// +optional
	PodStatus string `json:"podStatus"`
	// +optional
	WorkloadName string `json:"workloadName"`
	// +optional
	WorkloadType string `json:"workloadType"`
}

// VolumeSpec is the desired state of a volume.
type VolumeSpec struct {
	// Size in bytes, serialised as a decimal string ("1073741824").
	// +kubebuilder:validation:Type=string
	// +optional
	Size int64 `json:"size,string"`
	// +optional
	Frontend VolumeFrontend `json:"frontend"`
	// UblkQueueDepth is the depth of each ublk queue (v2 ublk frontend).
	// +optional
	UblkQueueDepth int `json:"ublkQueueDepth,omitempty"`
	// UblkNumberOfQueue is the number of ublk queues (v2 ublk frontend).
	// +optional
	UblkNumberOfQueue int `json:"ublkNumberOfQueue,omitempty"`
	// NvmeTCPNrIoQueues caps the NVMe-TCP I/O queues; 0 = global setting.
	// +optional
	NvmeTCPNrIoQueues int `json:"nvmeTcpNrIoQueues,omitempty"`
	// FromBackup is a backup URL to restore the volume from.
	// +optional
	FromBackup string `json:"fromBackup"`
	// +optional
	RestoreVolumeRecurringJob RestoreVolumeRecurringJobType `json:"restoreVolumeRecurringJob,omitempty"`
	// +optional
	DataSource VolumeDataSource `json:"dataSource"`
	// +optional
	CloneMode CloneMode `json:"cloneMode,omitempty"`
	// +optional
	DataLocality DataLocality `json:"dataLocality,omitempty"`
	// StaleReplicaTimeout is how long (minutes) a failed replica is kept.
	// +optional
	StaleReplicaTimeout int `json:"staleReplicaTimeout"`
	// NodeID is the node the volume is attached to (where the frontend runs).
	// +optional
	NodeID string `json:"nodeID"`
	// EngineNodeID is where the engine (target) runs; empty = NodeID.
	// +optional
	EngineNodeID string `json:"engineNodeID,omitempty"`
	// +optional
	MigrationNodeID string `json:"migrationNodeID"`
	// Image is the engine image.
	// +optional
	Image string `json:"image"`
	// BackingImage is the base image name; immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="BackingImage is immutable"
	// +optional
	BackingImage string `json:"backingImage"`
	// Standby marks a disaster-recovery volume. The JSON key is capitalised
	// as in Longhorn.
	// +optional
	Standby bool `json:"Standby"`
	// +optional
	DiskSelector []string `json:"diskSelector"`
	// +optional
	NodeSelector []string `json:"nodeSelector"`
	// TopologyRequirement lists failure domains the replicas must be in; immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="TopologyRequirement is immutable"
	// +optional
	TopologyRequirement []VolumeTopologyTerm `json:"topologyRequirement,omitempty"`
	// +optional
	DisableFrontend bool `json:"disableFrontend"`
	// +optional
	RevisionCounterDisabled bool `json:"revisionCounterDisabled"`
	// +optional
	UnmapMarkSnapChainRemoved UnmapMarkSnapChainRemoved `json:"unmapMarkSnapChainRemoved,omitempty"`
	// +optional
	ReplicaSoftAntiAffinity ReplicaSoftAntiAffinity `json:"replicaSoftAntiAffinity,omitempty"`
	// +optional
	ReplicaZoneSoftAntiAffinity ReplicaZoneSoftAntiAffinity `json:"replicaZoneSoftAntiAffinity,omitempty"`
	// +optional
	ReplicaDiskSoftAntiAffinity ReplicaDiskSoftAntiAffinity `json:"replicaDiskSoftAntiAffinity,omitempty"`
	// +optional
	LastAttachedBy string `json:"lastAttachedBy"`
	// +optional
	AccessMode AccessMode `json:"accessMode,omitempty"`
	// +optional
	Migratable bool `json:"migratable"`
	// Encrypted volumes are LUKS-formatted on the node; immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Encrypted is immutable"
	// +optional
	Encrypted bool `json:"encrypted"`
	// +optional
	NumberOfReplicas int `json:"numberOfReplicas"`
	// +optional
	ReplicaAutoBalance ReplicaAutoBalance `json:"replicaAutoBalance,omitempty"`
	// +optional
	SnapshotDataIntegrity SnapshotDataIntegrity `json:"snapshotDataIntegrity,omitempty"`
	// +kubebuilder:validation:Enum=none;lz4;gzip
	// +optional
	BackupCompressionMethod BackupCompressionMethod `json:"backupCompressionMethod,omitempty"`
	// BackupBlockSize in bytes, as a string: "2097152" or "16777216"; immutable.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Enum="2097152";"16777216"
	// +optional
	BackupBlockSize int64 `json:"backupBlockSize,string,omitempty"`
	// +kubebuilder:validation:Enum=v1;v2
	// +optional
	DataEngine DataEngineType `json:"dataEngine,omitempty"`
	// +optional
	SnapshotMaxCount int `json:"snapshotMaxCount"`
	// SnapshotMaxSize in bytes, as a string; 0 = no limit.
	// +kubebuilder:validation:Type=string
	// +optional
	SnapshotMaxSize int64 `json:"snapshotMaxSize,string"`
	// +optional
	FreezeFilesystemForSnapshot FreezeFilesystemForSnapshot `json:"freezeFilesystemForSnapshot,omitempty"`
	// BackupTargetName is the backup target used for this volume's backups.
	// +optional
	BackupTargetName string `json:"backupTargetName"`
	// +optional
	OfflineRebuilding VolumeOfflineRebuilding `json:"offlineRebuilding,omitempty"`
	// ReplicaRebuildingBandwidthLimit caps rebuild writes (MB/s); 0 = no limit.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ReplicaRebuildingBandwidthLimit int64 `json:"replicaRebuildingBandwidthLimit"`
	// RebuildConcurrentSyncLimit caps concurrent file syncs in one rebuild;
	// 0 = global setting.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5
	// +optional
	RebuildConcurrentSyncLimit int `json:"rebuildConcurrentSyncLimit"`
	// SnapshotHashingRequestedAt (RFC 3339) requests an on-demand checksum pass.
	// +optional
	SnapshotHashingRequestedAt string `json:"snapshotHashingRequestedAt,omitempty"`
	// DataLayout is immutable after creation.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="DataLayout is immutable"
	// +optional
	DataLayout DataLayout `json:"dataLayout,omitempty"`
}

// VolumeStatus is the observed state of a volume.
type VolumeStatus struct {
	// OwnerID is the node whose manager reconciles this volume.
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	State VolumeState `json:"state"`
	// +optional
	Robustness VolumeRobustness `json:"robustness"`
	// +optional
	CurrentNodeID string `json:"currentNodeID"`
	// CurrentEngineNodeID is where the engine currently runs.
	// +optional
	CurrentEngineNodeID string `json:"currentEngineNodeID,omitempty"`
	// +optional
	CurrentImage string `json:"currentImage"`
	// +optional
	KubernetesStatus KubernetesStatus `json:"kubernetesStatus"`
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
	// +optional
	LastBackup string `json:"lastBackup"`
	// +optional
	LastBackupAt string `json:"lastBackupAt"`
	// CurrentMigrationNodeID is the node the volume is migrating to.
	// +optional
	CurrentMigrationNodeID string `json:"currentMigrationNodeID"`
	// +optional
	FrontendDisabled bool `json:"frontendDisabled"`
	// +optional
	RestoreRequired bool `json:"restoreRequired"`
	// +optional
	RestoreInitiated bool `json:"restoreInitiated"`
	// +optional
	CloneStatus VolumeCloneStatus `json:"cloneStatus"`
	// +optional
	RemountRequestedAt string `json:"remountRequestedAt"`
	// +optional
	ExpansionRequired bool `json:"expansionRequired"`
	// +optional
	IsStandby bool `json:"isStandby"`
	// ActualSize is the space used on disk by one replica, in bytes.
	// +optional
	ActualSize int64 `json:"actualSize"`
	// +optional
	LastDegradedAt string `json:"lastDegradedAt"`
	// +optional
	LastAutoSalvagedAt string `json:"lastAutoSalvagedAt,omitempty"`
	// +optional
	ShareEndpoint string `json:"shareEndpoint"`
	// +optional
	ShareState ShareManagerState `json:"shareState"`
	// +optional
	LastOnDemandSnapshotHashingCompleteAt string `json:"lastOnDemandSnapshotHashingCompleteAt,omitempty"`
	// SwitchoverState is the progress of a v2 engine live switchover.
	// +optional
	SwitchoverState string `json:"switchoverState,omitempty"`
}

// Volume is a Longhorn volume: the user-facing, top-level desired state.
// The Scheduled column reads the Scheduled condition (Longhorn's column reads
// a condition type that does not exist, so it is always blank there).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhv
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Data Engine",type=string,JSONPath=`.spec.dataEngine`,description="The data engine of the volume"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="The state of the volume"
// +kubebuilder:printcolumn:name="Robustness",type=string,JSONPath=`.status.robustness`,description="The robustness of the volume"
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=='Scheduled')].status`,description="Whether all replicas of the volume are scheduled"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.size`,description="The size of the volume in bytes"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.currentNodeID`,description="The node the volume is attached to"
// +kubebuilder:printcolumn:name="Switchover",type=string,JSONPath=`.status.switchoverState`,priority=1,description="The engine switchover state"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Volume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VolumeSpec   `json:"spec,omitempty"`
	Status VolumeStatus `json:"status,omitempty"`
}

// VolumeList is a list of Volumes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type VolumeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Volume `json:"items"`
}

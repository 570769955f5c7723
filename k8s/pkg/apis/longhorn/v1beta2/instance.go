package v1beta2

// InstanceState is the desired or observed state of an engine or replica
// process (InstanceSpec.desireState, InstanceStatus.currentState).
type InstanceState string

// Instance states.
const (
	InstanceStateRunning    InstanceState = "running"
	InstanceStateSuspended  InstanceState = "suspended"
	InstanceStateStopped    InstanceState = "stopped"
	InstanceStateError      InstanceState = "error"
	InstanceStateStarting   InstanceState = "starting"
	InstanceStateStopping   InstanceState = "stopping"
	InstanceStateUnknown    InstanceState = "unknown"
	InstanceStateTerminated InstanceState = "terminated"
)

// Instance condition types and reasons (Engine and Replica status.conditions).
const (
	InstanceConditionTypeInstanceCreation          = "InstanceCreation"
	InstanceConditionReasonInstanceCreationFailure = "InstanceCreationFailure"
)

// InstanceSpec is the part of Engine and Replica specs that describes the
// process the instance manager runs. Embedded inline: its fields appear
// directly under spec.
type InstanceSpec struct {
	// +optional
	VolumeName string `json:"volumeName"`
	// VolumeSize in bytes, serialised as a decimal string.
	// +kubebuilder:validation:Type=string
	// +optional
	VolumeSize int64 `json:"volumeSize,string"`
	// NodeID is the node the process runs on.
	// +optional
	NodeID string `json:"nodeID"`
	// Image is the engine image that provides the binary.
	// +optional
	Image string `json:"image"`
	// +optional
	DesireState InstanceState `json:"desireState"`
	// +optional
	LogRequested bool `json:"logRequested"`
	// +optional
	SalvageRequested bool `json:"salvageRequested"`
	// +kubebuilder:validation:Enum=v1;v2
	// +optional
	DataEngine DataEngineType `json:"dataEngine,omitempty"`
}

// InstanceStatus is the part of Engine and Replica status observed from the
// instance manager. Embedded inline.
type InstanceStatus struct {
	// OwnerID is the node whose manager reconciles this instance.
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	InstanceManagerName string `json:"instanceManagerName"`
	// +optional
	CurrentState InstanceState `json:"currentState"`
	// +optional
	CurrentImage string `json:"currentImage"`
	// IP is the instance manager pod IP (control traffic).
	// +optional
	IP string `json:"ip"`
	// StorageIP is the data-traffic IP (storage network, or the pod IP).
	// +optional
	StorageIP string `json:"storageIP"`
	// Port is the first TCP port the process listens on.
	// +optional
	Port int `json:"port"`
	// +optional
	Starting bool `json:"starting"`
	// +optional
	Started bool `json:"started"`
	// +optional
	LogFetched bool `json:"logFetched"`
	// +optional
	SalvageExecuted bool `json:"salvageExecuted"`
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
	// UblkID is the ublk device ID (v2 ublk frontend).
	// +optional
	UblkID int32 `json:"ublkID"`
	// UUID identifies this run of the process.
	// +optional
	UUID string `json:"uuid"`
}

// EngineConditionTypeLiveUpgrade is the Engine condition that records a live
// engine upgrade (this product's; Longhorn keeps no such condition): Status
// True while the engine controller runs or cleans up a new engine, with
// Reason one of Upgrading, Aborting or Canceling; False with Reason
// FailedEngineUpgrade and the cause in Message after a failed attempt, until
// the volume controller rolled it back; absent or False with Reason "" when
// no upgrade is under way.
const EngineConditionTypeLiveUpgrade = "LiveUpgrade"

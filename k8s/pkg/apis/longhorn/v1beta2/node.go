package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Node condition types.
const (
	NodeConditionTypeReady               = "Ready"
	NodeConditionTypeMountPropagation    = "MountPropagation"
	NodeConditionTypeMultipathd          = "Multipathd"
	NodeConditionTypeKernelModulesLoaded = "KernelModulesLoaded"
	NodeConditionTypeRequiredPackages    = "RequiredPackages"
	NodeConditionTypeNFSClientInstalled  = "NFSClientInstalled"
	NodeConditionTypeSchedulable         = "Schedulable"
	NodeConditionTypeHugePagesAvailable  = "HugePagesAvailable"
)

// Node condition reasons.
const (
	NodeConditionReasonManagerPodDown            = "ManagerPodDown"
	NodeConditionReasonManagerPodMissing         = "ManagerPodMissing"
	NodeConditionReasonKubernetesNodeGone        = "KubernetesNodeGone"
	NodeConditionReasonKubernetesNodeNotReady    = "KubernetesNodeNotReady"
	NodeConditionReasonKubernetesNodePressure    = "KubernetesNodePressure"
	NodeConditionReasonUnknownNodeConditionTrue  = "UnknownNodeConditionTrue"
	NodeConditionReasonNoMountPropagationSupport = "NoMountPropagationSupport"
	NodeConditionReasonMultipathdIsRunning       = "MultipathdIsRunning"
	NodeConditionReasonUnknownOS                 = "UnknownOS"
	NodeConditionReasonNamespaceExecutorErr      = "NamespaceExecutorErr"
	NodeConditionReasonKernelModulesNotLoaded    = "KernelModulesNotLoaded"
	NodeConditionReasonPackagesNotInstalled      = "PackagesNotInstalled"
	NodeConditionReasonCheckKernelConfigFailed   = "CheckKernelConfigFailed"
	NodeConditionReasonNFSClientIsNotFound       = "NFSClientIsNotFound"
	NodeConditionReasonNFSClientIsMisconfigured  = "NFSClientIsMisconfigured"
	NodeConditionReasonKubernetesNodeCordoned    = "KubernetesNodeCordoned"
	NodeConditionReasonHugePagesNotConfigured    = "HugePagesNotConfigured"
	NodeConditionReasonInsufficientHugePages     = "InsufficientHugePages"
)

// Disk condition types and reasons.
const (
	DiskConditionTypeSchedulable = "Schedulable"
	DiskConditionTypeReady       = "Ready"
	DiskConditionTypeError       = "Error"

	DiskConditionReasonDiskPressure           = "DiskPressure"
	DiskConditionReasonDiskFilesystemChanged  = "DiskFilesystemChanged"
	DiskConditionReasonNoDiskInfo             = "NoDiskInfo"
	DiskConditionReasonDiskNotReady           = "DiskNotReady"
	DiskConditionReasonDiskServiceUnreachable = "DiskServiceUnreachable"
	DiskConditionReasonNodeNotReady           = "NodeNotReady"
)

// Replica scheduling failure messages, used as condition messages and by the
// REST API; Longhorn clients match on these exact strings.
const (
	ErrorReplicaScheduleInsufficientStorage               = "insufficient storage"
	ErrorReplicaScheduleDiskNotFound                      = "disk not found"
	ErrorReplicaScheduleDiskUnavailable                   = "disks are unavailable"
	ErrorReplicaScheduleTagsNotFulfilled                  = "tags not fulfilled"
	ErrorReplicaScheduleNodeNotFound                      = "node not found"
	ErrorReplicaScheduleNodeUnavailable                   = "nodes are unavailable"
	ErrorReplicaScheduleEngineImageNotReady               = "none of the node candidates contains a ready engine image"
	ErrorReplicaScheduleHardNodeAffinityNotSatisfied      = "hard affinity cannot be satisfied"
	ErrorReplicaScheduleTopologyNotSatisfied              = "topology requirement cannot be satisfied"
	ErrorReplicaScheduleLinkedCloneNotSatisfied           = "linked clone replica cannot be satisfied"
	ErrorReplicaScheduleSchedulingFailed                  = "replica scheduling failed"
	ErrorReplicaScheduleUnusedFailedReplicaIsNotSupported = "unused failed replica is not supported"
	ErrorReplicaScheduleReplicaAlreadyScheduled           = "replica already scheduled"
	ErrorReplicaScheduleIncompatibleVolumeSize            = "incompatible volume size"
)

// CPUManagerPolicy is the kubelet CPU manager policy seen on the node.
type CPUManagerPolicy string

// CPU manager policies.
const (
	CPUManagerPolicyStatic  CPUManagerPolicy = "static"
	CPUManagerPolicyNone    CPUManagerPolicy = "none"
	CPUManagerPolicyUnknown CPUManagerPolicy = "unknown"
)

// DiskType is how a disk stores replicas.
type DiskType string

// Disk types: filesystem holds v1 replica directories, block holds v2 lvols.
const (
	DiskTypeFilesystem DiskType = "filesystem"
	DiskTypeBlock      DiskType = "block"
)

// DiskDriver is the driver of a block disk (v2).
type DiskDriver string

// Disk drivers.
const (
	DiskDriverNone DiskDriver = ""
	DiskDriverAuto DiskDriver = "auto"
	DiskDriverAio  DiskDriver = "aio"
	DiskDriverNvme DiskDriver = "nvme"
)

// SnapshotCheckStatus records the periodic snapshot integrity check.
type SnapshotCheckStatus struct {
	// +optional
	LastPeriodicCheckedAt metav1.Time `json:"lastPeriodicCheckedAt"`
}

// HealthDataSource is where disk health data came from.
// +kubebuilder:validation:Enum=SMART;SPDK
type HealthDataSource string

// Health data sources.
const (
	HealthDataSourceSMART HealthDataSource = "SMART"
	HealthDataSourceSPDK  HealthDataSource = "SPDK"
)

// HealthDataHealthStatus is the overall health verdict of a disk.
// +kubebuilder:validation:Enum=FAILED;PASSED;UNKNOWN;WARNING
type HealthDataHealthStatus string

// Health statuses.
const (
	HealthDataStatusFailed  HealthDataHealthStatus = "FAILED"
	HealthDataStatusPassed  HealthDataHealthStatus = "PASSED"
	HealthDataStatusUnknown HealthDataHealthStatus = "UNKNOWN"
	HealthDataStatusWarning HealthDataHealthStatus = "WARNING"
)

// HealthData is a disk health report (SMART or SPDK).
type HealthData struct {
	// +optional
	Source HealthDataSource `json:"source,omitempty"`
	// +optional
	ModelName string `json:"modelName,omitempty"`
	// +optional
	SerialNumber string `json:"serialNumber,omitempty"`
	// +optional
	FirmwareVersion string `json:"firmwareVersion,omitempty"`
	// Capacity in bytes.
	// +optional
	Capacity int64 `json:"capacity,omitempty"`
	// +optional
	HealthStatus HealthDataHealthStatus `json:"healthStatus,omitempty"`
	// +optional
	DiskName string `json:"diskName,omitempty"`
	// +optional
	DiskType string `json:"diskType,omitempty"`
	// Temperature in degrees Celsius.
	// +optional
	Temperature int `json:"temperature,omitempty"`
	// +optional
	Attributes []HealthAttribute `json:"attributes,omitempty"`
}

// HealthAttribute is one SMART attribute.
type HealthAttribute struct {
	// +optional
	ID int `json:"id,omitempty"`
	// +optional
	Name string `json:"name"`
	// +optional
	Value int `json:"value,omitempty"`
	// +optional
	Worst int `json:"worst,omitempty"`
	// +optional
	Threshold int `json:"threshold,omitempty"`
	// +optional
	RawValue int64 `json:"rawValue"`
	// +optional
	RawString string `json:"rawString,omitempty"`
	// +optional
	WhenFailed string `json:"whenFailed,omitempty"`
}

// DiskSpec is one disk of a node as the user configures it.
type DiskSpec struct {
	// +kubebuilder:validation:Enum=filesystem;block
	// +optional
	Type DiskType `json:"diskType,omitempty"`
	// Path is the mount point (filesystem) or device (block).
	// +optional
	Path string `json:"path"`
	// +kubebuilder:validation:Enum="";auto;aio;nvme
	// +optional
	DiskDriver DiskDriver `json:"diskDriver"`
	// +optional
	AllowScheduling bool `json:"allowScheduling"`
	// +optional
	EvictionRequested bool `json:"evictionRequested"`
	// StorageReserved in bytes is kept free of replicas.
	// +optional
	StorageReserved int64 `json:"storageReserved"`
	// +optional
	Tags []string `json:"tags"`
}

// DiskStatus is the observed state of one disk; sizes in bytes.
type DiskStatus struct {
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
	// +optional
	StorageAvailable int64 `json:"storageAvailable"`
	// +optional
	StorageScheduled int64 `json:"storageScheduled"`
	// +optional
	StorageMaximum int64 `json:"storageMaximum"`
	// ScheduledReplica maps replica name to its size in bytes.
	// +optional
	// +nullable
	ScheduledReplica map[string]int64 `json:"scheduledReplica"`
	// ScheduledBackingImage maps backing image name to its size in bytes.
	// +optional
	// +nullable
	ScheduledBackingImage map[string]int64 `json:"scheduledBackingImage"`
	// +optional
	DiskUUID string `json:"diskUUID"`
	// +optional
	DiskName string `json:"diskName"`
	// +optional
	DiskPath string `json:"diskPath"`
	// +optional
	Type DiskType `json:"diskType"`
	// +optional
	DiskDriver DiskDriver `json:"diskDriver"`
	// +optional
	FSType string `json:"filesystemType"`
	// +optional
	InstanceManagerName string `json:"instanceManagerName"`
	// +optional
	HealthData map[string]HealthData `json:"healthData,omitempty"`
	// +optional
	HealthDataLastCollectedAt metav1.Time `json:"healthDataLastCollectedAt,omitempty"`
}

// NodeSpec is the desired state of a Longhorn node.
type NodeSpec struct {
	// +optional
	Name string `json:"name"`
	// Disks maps disk name to its spec.
	// +optional
	Disks map[string]DiskSpec `json:"disks"`
	// +optional
	AllowScheduling bool `json:"allowScheduling"`
	// +optional
	EvictionRequested bool `json:"evictionRequested"`
	// +optional
	Tags []string `json:"tags"`
	// InstanceManagerCPURequest in millicpu; 0 = global setting.
	// +optional
	InstanceManagerCPURequest int `json:"instanceManagerCPURequest"`
}

// NodeStatus is the observed state of a Longhorn node.
type NodeStatus struct {
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
	// +optional
	// +nullable
	DiskStatus map[string]*DiskStatus `json:"diskStatus"`
	// Region and Zone come from topology.kubernetes.io labels.
	// +optional
	Region string `json:"region"`
	// +optional
	Zone string `json:"zone"`
	// +optional
	SnapshotCheckStatus SnapshotCheckStatus `json:"snapshotCheckStatus"`
	// +optional
	AutoEvicting bool `json:"autoEvicting"`
	// +optional
	CPUPolicy CPUManagerPolicy `json:"cpuPolicy"`
}

// Node is Longhorn's view of a Kubernetes node and its disks; named after it.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhn
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`,description="Indicate whether the node is ready"
// +kubebuilder:printcolumn:name="AllowScheduling",type=boolean,JSONPath=`.spec.allowScheduling`,description="Indicate whether the user disabled/enabled replica scheduling for the node"
// +kubebuilder:printcolumn:name="Schedulable",type=string,JSONPath=`.status.conditions[?(@.type=='Schedulable')].status`,description="Indicate whether Longhorn can schedule replicas on the node"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Node struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeSpec   `json:"spec,omitempty"`
	Status NodeStatus `json:"status,omitempty"`
}

// NodeList is a list of Nodes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type NodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Node `json:"items"`
}

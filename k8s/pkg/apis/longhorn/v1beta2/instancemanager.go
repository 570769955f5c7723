package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// InstanceType is the kind of process an instance manager runs.
type InstanceType string

// Instance types.
const (
	InstanceTypeEngine         InstanceType = "engine"
	InstanceTypeReplica        InstanceType = "replica"
	InstanceTypeEngineFrontend InstanceType = "engine-frontend"
	InstanceTypeNone           InstanceType = ""
)

// InstanceManagerState is the state of an instance manager pod.
type InstanceManagerState string

// Instance manager states.
const (
	InstanceManagerStateError    InstanceManagerState = "error"
	InstanceManagerStateRunning  InstanceManagerState = "running"
	InstanceManagerStateStopped  InstanceManagerState = "stopped"
	InstanceManagerStateStarting InstanceManagerState = "starting"
	InstanceManagerStateUnknown  InstanceManagerState = "unknown"
)

// InstanceManagerType is the role of an instance manager; only aio is
// created now, engine and replica are deprecated.
// +kubebuilder:validation:Enum=aio;engine;replica
type InstanceManagerType string

// Instance manager types.
const (
	InstanceManagerTypeAllInOne InstanceManagerType = "aio"
	InstanceManagerTypeEngine   InstanceManagerType = "engine"
	InstanceManagerTypeReplica  InstanceManagerType = "replica"
)

// Instance manager condition types.
const (
	InstanceManagerConditionTypeNodeReady     = "NodeReady"
	InstanceManagerConditionTypePodReady      = "PodReady"
	InstanceManagerConditionTypeSettingSynced = "SettingSynced"
)

// InstanceProcess is one process (engine or replica) reported by an instance manager.
type InstanceProcess struct {
	// +optional
	Spec InstanceProcessSpec `json:"spec"`
	// +optional
	Status InstanceProcessStatus `json:"status"`
}

// InstanceProcessSpec identifies a process.
type InstanceProcessSpec struct {
	// +optional
	Name string `json:"name"`
	// +optional
	DataEngine DataEngineType `json:"dataEngine"`
}

// InstanceProcessStatus is a process's state as the instance manager sees it.
type InstanceProcessStatus struct {
	// +optional
	Endpoint string `json:"endpoint"`
	// +optional
	Frontend string `json:"frontend,omitempty"`
	// +optional
	ErrorMsg string `json:"errorMsg"`
	// +optional
	// +nullable
	Conditions map[string]bool `json:"conditions"`
	// Listen is the address the process listens on.
	// +optional
	Listen string `json:"listen"`
	// PortStart..PortEnd is the TCP port range given to the process.
	// +optional
	PortEnd int32 `json:"portEnd"`
	// +optional
	PortStart int32 `json:"portStart"`
	// +optional
	TargetPortEnd int32 `json:"targetPortEnd"`
	// +optional
	TargetPortStart int32 `json:"targetPortStart"`
	// +optional
	State InstanceState `json:"state"`
	// +optional
	Type InstanceType `json:"type"`
	// ResourceVersion increases with every change the instance manager reports.
	// +optional
	ResourceVersion int64 `json:"resourceVersion"`
	// +optional
	UblkID int32 `json:"ublkID,omitempty"`
	// +optional
	UUID string `json:"uuid,omitempty"`
}

// BackingImageV2CopyInfo is a v2 backing image copy held by an instance manager.
type BackingImageV2CopyInfo struct {
	// +optional
	Name string `json:"name"`
	// +optional
	UUID string `json:"uuid"`
	// +optional
	DiskUUID string `json:"diskUUID"`
	// +optional
	Size int64 `json:"size"`
	// +optional
	Progress int `json:"progress"`
	// +optional
	State BackingImageState `json:"state"`
	// +optional
	CurrentChecksum string `json:"currentChecksum"`
	// +optional
	Message string `json:"message"`
}

// V2DataEngineSpec is v2 (SPDK) tuning for one instance manager.
type V2DataEngineSpec struct {
	// +optional
	CPUMask string `json:"cpuMask"`
	// CPUIsolationEnabled overrides the global setting: "true", "false" or "" (inherit).
	// +kubebuilder:validation:Enum="";"true";"false"
	// +optional
	CPUIsolationEnabled string `json:"cpuIsolationEnabled,omitempty"`
}

// DataEngineSpec holds per-data-engine spec.
type DataEngineSpec struct {
	// +optional
	V2 V2DataEngineSpec `json:"v2"`
}

// V2DataEngineStatus is v2 (SPDK) state of one instance manager.
type V2DataEngineStatus struct {
	// +optional
	CPUMask string `json:"cpuMask"`
	// +optional
	CPUCoreNumber int64 `json:"cpuCoreNumber,omitempty"`
	// +kubebuilder:validation:Enum="";"true";"false"
	// +optional
	InterruptModeEnabled string `json:"interruptModeEnabled,omitempty"`
}

// DataEngineStatus holds per-data-engine status.
type DataEngineStatus struct {
	// +optional
	V2 V2DataEngineStatus `json:"v2"`
}

// InstanceManagerSpec is the desired state of an instance manager.
type InstanceManagerSpec struct {
	// +optional
	Image string `json:"image"`
	// +optional
	NodeID string `json:"nodeID"`
	// +optional
	Type InstanceManagerType `json:"type,omitempty"`
	// +optional
	DataEngine DataEngineType `json:"dataEngine"`
	// +optional
	DataEngineSpec DataEngineSpec `json:"dataEngineSpec"`
}

// InstanceManagerStatus is the observed state of an instance manager.
type InstanceManagerStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	CurrentState InstanceManagerState `json:"currentState"`
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
	// InstanceEngines maps engine name to its process.
	// +optional
	// +nullable
	InstanceEngines map[string]InstanceProcess `json:"instanceEngines,omitempty"`
	// InstanceReplicas maps replica name to its process.
	// +optional
	// +nullable
	InstanceReplicas map[string]InstanceProcess `json:"instanceReplicas,omitempty"`
	// InstanceEngineFrontends maps engine frontend name to its process (v2).
	// +optional
	// +nullable
	InstanceEngineFrontends map[string]InstanceProcess `json:"instanceEngineFrontends,omitempty"`
	// +optional
	// +nullable
	BackingImages map[string]BackingImageV2CopyInfo `json:"backingImages"`
	// +optional
	IP string `json:"ip"`
	// +optional
	APIMinVersion int `json:"apiMinVersion"`
	// +optional
	APIVersion int `json:"apiVersion"`
	// +optional
	ProxyAPIMinVersion int `json:"proxyApiMinVersion"`
	// +optional
	ProxyAPIVersion int `json:"proxyApiVersion"`
	// +optional
	DataEngineStatus DataEngineStatus `json:"dataEngineStatus"`
}

// InstanceManager is the per-node pod that runs engine and replica processes.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhim
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Data Engine",type=string,JSONPath=`.spec.dataEngine`,description="The data engine of the instance manager"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.currentState`,description="The state of the instance manager"
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`,description="The type of the instance manager (aio, engine or replica)"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeID`,description="The node that the instance manager is running on"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type InstanceManager struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InstanceManagerSpec   `json:"spec,omitempty"`
	Status InstanceManagerStatus `json:"status,omitempty"`
}

// InstanceManagerList is a list of InstanceManagers.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type InstanceManagerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InstanceManager `json:"items"`
}

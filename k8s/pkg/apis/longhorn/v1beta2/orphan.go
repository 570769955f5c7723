package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// OrphanType is what was orphaned.
type OrphanType string

// Orphan types.
const (
	OrphanTypeReplicaData        OrphanType = "replica"
	OrphanTypeEngineInstance     OrphanType = "engine-instance"
	OrphanTypeReplicaInstance    OrphanType = "replica-instance"
	OrphanTypeShardInstance      OrphanType = "shard-instance"
	OrphanTypeShardGroupInstance OrphanType = "shardgroup-instance"
)

// Orphan condition types and DataCleanable reasons.
const (
	OrphanConditionTypeError         = "Error"
	OrphanConditionTypeDataCleanable = "DataCleanable"
	OrphanConditionTypeInstanceExist = "InstanceExist"

	OrphanConditionTypeDataCleanableReasonNodeUnavailable = "NodeUnavailable"
	OrphanConditionTypeDataCleanableReasonNodeEvicted     = "NodeEvicted"
	OrphanConditionTypeDataCleanableReasonDiskInvalid     = "DiskInvalid"
	OrphanConditionTypeDataCleanableReasonDiskEvicted     = "DiskEvicted"
	OrphanConditionTypeDataCleanableReasonDiskChanged     = "DiskChanged"
)

// Orphan parameter keys (spec.parameters).
const (
	OrphanInstanceName    = "InstanceName"
	OrphanInstanceUUID    = "InstanceUUID"
	OrphanInstanceManager = "InstanceManager"
	OrphanDataName        = "DataName"
	OrphanDiskName        = "DiskName"
	OrphanDiskUUID        = "DiskUUID"
	OrphanDiskPath        = "DiskPath"
	OrphanDiskType        = "DiskType"
)

// OrphanSpec is the desired state of an orphan record.
type OrphanSpec struct {
	// NodeID is the node the orphaned data or process is on.
	// +optional
	NodeID string `json:"nodeID"`
	// +optional
	Type OrphanType `json:"orphanType"`
	// DataEngine of an orphaned instance.
	// +kubebuilder:validation:Enum=v1;v2
	// +optional
	DataEngine DataEngineType `json:"dataEngine,omitempty"`
	// Parameters locate the orphan (see the Orphan* parameter keys).
	// +optional
	Parameters map[string]string `json:"parameters"`
}

// OrphanStatus is the observed state of an orphan record.
type OrphanStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
}

// Orphan records a replica data directory or a running instance that no
// Longhorn object owns; deleting the Orphan cleans it up.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lho
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.orphanType`,description="The type of the orphan"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeID`,description="The node that the orphan is on"
type Orphan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OrphanSpec   `json:"spec,omitempty"`
	Status OrphanStatus `json:"status,omitempty"`
}

// OrphanList is a list of Orphans.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type OrphanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Orphan `json:"items"`
}

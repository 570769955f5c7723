package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Replica condition types and reasons.
const (
	ReplicaConditionTypeRebuildFailed                = "RebuildFailed"
	ReplicaConditionTypeWaitForBackingImage          = "WaitForBackingImage"
	ReplicaConditionReasonWaitForBackingImageFailed  = "GetBackingImageFailed"
	ReplicaConditionReasonWaitForBackingImageWaiting = "Waiting"
	ReplicaConditionReasonRebuildFailedDisconnection = "Disconnection"
	ReplicaConditionReasonRebuildFailedGeneral       = "General"
)

// ReplicaSpec is the desired state of a replica (one replica process and its
// data directory on one disk).
type ReplicaSpec struct {
	InstanceSpec `json:",inline"`
	// EngineName is the engine this replica serves.
	// +optional
	EngineName string `json:"engineName"`
	// MigrationEngineName is the engine of a live migration (v2 only).
	// +optional
	MigrationEngineName string `json:"migrationEngineName,omitempty"`
	// HealthyAt (RFC 3339) is set when the replica first becomes RW after
	// creation or rebuild, and cleared before a rebuild.
	// +optional
	HealthyAt string `json:"healthyAt"`
	// LastHealthyAt (RFC 3339) is set every time the replica becomes RW; never cleared.
	// +optional
	LastHealthyAt string `json:"lastHealthyAt"`
	// FailedAt (RFC 3339) is set when the replica fails; cleared before a
	// rebuild or salvage.
	// +optional
	FailedAt string `json:"failedAt"`
	// LastFailedAt (RFC 3339) is set with FailedAt; never cleared.
	// +optional
	LastFailedAt string `json:"lastFailedAt"`
	// DiskID is the UUID of the disk holding the data directory.
	// +optional
	DiskID string `json:"diskID"`
	// +optional
	DiskPath string `json:"diskPath"`
	// DataDirectoryName is the directory under <diskPath>/replicas/.
	// +optional
	DataDirectoryName string `json:"dataDirectoryName"`
	// +optional
	BackingImage string `json:"backingImage"`
	// +optional
	Active bool `json:"active"`
	// HardNodeAffinity pins the replica to a node (used by salvage/eviction).
	// +optional
	HardNodeAffinity string `json:"hardNodeAffinity"`
	// +optional
	RevisionCounterDisabled bool `json:"revisionCounterDisabled"`
	// +optional
	UnmapMarkDiskChainRemovedEnabled bool `json:"unmapMarkDiskChainRemovedEnabled"`
	// +optional
	RebuildRetryCount int `json:"rebuildRetryCount"`
	// +optional
	EvictionRequested bool `json:"evictionRequested"`
	// +optional
	SnapshotMaxCount int `json:"snapshotMaxCount"`
	// +kubebuilder:validation:Type=string
	// +optional
	SnapshotMaxSize int64 `json:"snapshotMaxSize,string"`
	// LinkedCloneSrcReplicaName is the source replica of a linked clone; immutable once set.
	// +optional
	LinkedCloneSrcReplicaName string `json:"linkedCloneSrcReplicaName,omitempty"`
}

// ReplicaStatus is the observed state of a replica.
type ReplicaStatus struct {
	InstanceStatus `json:",inline"`
}

// Replica is one copy of a volume's data, served by a replica process.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhr
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Data Engine",type=string,JSONPath=`.spec.dataEngine`,description="The data engine of the replica"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.currentState`,description="The current state of the replica"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeID`,description="The node that the replica is on"
// +kubebuilder:printcolumn:name="Disk",type=string,JSONPath=`.spec.diskID`,description="The disk that the replica is on"
// +kubebuilder:printcolumn:name="InstanceManager",type=string,JSONPath=`.status.instanceManagerName`,description="The instance manager of the replica"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.currentImage`,description="The current image of the replica"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Replica struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReplicaSpec   `json:"spec,omitempty"`
	Status ReplicaStatus `json:"status,omitempty"`
}

// ReplicaList is a list of Replicas.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ReplicaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Replica `json:"items"`
}

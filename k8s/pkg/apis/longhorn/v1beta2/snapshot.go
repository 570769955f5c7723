package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SnapshotHashStatus is the state of a snapshot checksum computation.
type SnapshotHashStatus string

// Snapshot hash states.
const (
	SnapshotHashStatusNew        SnapshotHashStatus = ""
	SnapshotHashStatusInProgress SnapshotHashStatus = "in_progress"
	SnapshotHashStatusComplete   SnapshotHashStatus = "complete"
	SnapshotHashStatusError      SnapshotHashStatus = "error"
)

// SnapshotSpec is the desired state of a snapshot.
type SnapshotSpec struct {
	// Volume is the volume the snapshot belongs to; immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volume is immutable"
	Volume string `json:"volume"`
	// CreateSnapshot asks the engine to take the snapshot.
	// +optional
	CreateSnapshot bool `json:"createSnapshot"`
	// +optional
	// +nullable
	Labels map[string]string `json:"labels"`
}

// SnapshotStatus is the observed state of a snapshot.
type SnapshotStatus struct {
	// +optional
	Parent string `json:"parent"`
	// +optional
	// +nullable
	Children map[string]bool `json:"children"`
	// +optional
	MarkRemoved bool `json:"markRemoved"`
	// +optional
	UserCreated bool `json:"userCreated"`
	// RequestedTime is when the snapshot was requested (RFC 3339).
	// +optional
	RequestedTime string `json:"requestedTime,omitempty"`
	// +optional
	CreationTime string `json:"creationTime"`
	// Size in bytes.
	// +optional
	Size int64 `json:"size"`
	// +optional
	// +nullable
	Labels map[string]string `json:"labels"`
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	Error string `json:"error,omitempty"`
	// RestoreSize is the minimum volume size (bytes) to restore this snapshot.
	// +optional
	RestoreSize int64 `json:"restoreSize"`
	// +optional
	ReadyToUse bool `json:"readyToUse"`
	// +optional
	Checksum string `json:"checksum"`
	// ChecksumCalculatedAt is when the checksum was computed (RFC 3339).
	// +optional
	ChecksumCalculatedAt string `json:"checksumCalculatedAt,omitempty"`
}

// Snapshot is a point-in-time snapshot of a volume, as a custom resource.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhsnap
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Volume",type=string,JSONPath=`.spec.volume`,description="The volume that this snapshot belongs to"
// +kubebuilder:printcolumn:name="CreationTime",type=string,JSONPath=`.status.creationTime`,description="Timestamp when the point-in-time snapshot was taken"
// +kubebuilder:printcolumn:name="ReadyToUse",type=boolean,JSONPath=`.status.readyToUse`,description="Indicates if the snapshot is ready to be used to restore/backup a volume"
// +kubebuilder:printcolumn:name="RestoreSize",type=string,JSONPath=`.status.restoreSize`,description="Represents the minimum size of volume required to rehydrate from this snapshot"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`,description="The actual size of the snapshot"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Snapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SnapshotSpec   `json:"spec,omitempty"`
	Status SnapshotStatus `json:"status,omitempty"`
}

// SnapshotList is a list of Snapshots.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Snapshot `json:"items"`
}

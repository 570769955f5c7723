package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SystemRestoreState is the state of a system restore.
type SystemRestoreState string

// System restore states.
const (
	SystemRestoreStateNone         SystemRestoreState = ""
	SystemRestoreStatePending      SystemRestoreState = "Pending"
	SystemRestoreStateInitializing SystemRestoreState = "Initializing"
	SystemRestoreStateDownloading  SystemRestoreState = "Downloading"
	SystemRestoreStateUnpacking    SystemRestoreState = "Unpacking"
	SystemRestoreStateRestoring    SystemRestoreState = "Restoring"
	SystemRestoreStateInProgress   SystemRestoreState = "InProgress"
	SystemRestoreStateCompleted    SystemRestoreState = "Completed"
	SystemRestoreStateError        SystemRestoreState = "Error"
	SystemRestoreStateUnknown      SystemRestoreState = "Unknown"
	SystemRestoreStateDeleting     SystemRestoreState = "Deleting"
)

// System restore condition type and reasons.
const (
	SystemRestoreConditionTypeError = "Error"

	SystemRestoreConditionReasonRestore  = "Restore"
	SystemRestoreConditionReasonUnpack   = "Unpack"
	SystemRestoreConditionReasonDownload = "Download"
)

// SystemRestoreSpec is the desired state of a system restore.
type SystemRestoreSpec struct {
	// SystemBackup is the name of the system backup to restore.
	SystemBackup string `json:"systemBackup"`
}

// SystemRestoreStatus is the observed state of a system restore.
type SystemRestoreStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	State SystemRestoreState `json:"state"`
	// SourceURL is the backupstore URL of the system backup.
	// +optional
	SourceURL string `json:"sourceURL"`
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
}

// SystemRestore restores Longhorn's configuration from a SystemBackup.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhsr
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="The system restore state"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SystemRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SystemRestoreSpec   `json:"spec,omitempty"`
	Status SystemRestoreStatus `json:"status,omitempty"`
}

// SystemRestoreList is a list of SystemRestores.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type SystemRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SystemRestore `json:"items"`
}

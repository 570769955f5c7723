package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SystemBackupState is the state of a system backup.
type SystemBackupState string

// System backup states, in order of progress.
const (
	SystemBackupStateNone                        SystemBackupState = ""
	SystemBackupStateGenerating                  SystemBackupState = "Generating"
	SystemBackupStateCreatingVolumeBackups       SystemBackupState = "CreatingVolumeBackups"
	SystemBackupStateCreatingBackingImageBackups SystemBackupState = "CreatingBackingImageBackups"
	SystemBackupStateUploading                   SystemBackupState = "Uploading"
	SystemBackupStateSyncing                     SystemBackupState = "Syncing"
	SystemBackupStateReady                       SystemBackupState = "Ready"
	SystemBackupStateError                       SystemBackupState = "Error"
	SystemBackupStateDeleting                    SystemBackupState = "Deleting"
)

// SystemBackupCreateVolumeBackupPolicy says whether volume backups are made
// with a system backup.
type SystemBackupCreateVolumeBackupPolicy string

// Volume backup policies.
const (
	SystemBackupCreateVolumeBackupPolicyAlways       SystemBackupCreateVolumeBackupPolicy = "always"
	SystemBackupCreateVolumeBackupPolicyDisabled     SystemBackupCreateVolumeBackupPolicy = "disabled"
	SystemBackupCreateVolumeBackupPolicyIfNotPresent SystemBackupCreateVolumeBackupPolicy = "if-not-present"
)

// System backup condition type and reasons.
const (
	SystemBackupConditionTypeError = "Error"

	SystemBackupConditionReasonDelete   = "Delete"
	SystemBackupConditionReasonGenerate = "Generate"
	SystemBackupConditionReasonUpload   = "Upload"
	SystemBackupConditionReasonSync     = "Sync"
)

// SystemBackupSpec is the desired state of a system backup.
type SystemBackupSpec struct {
	// VolumeBackupPolicy: if-not-present, always or disabled.
	// +kubebuilder:validation:Enum=if-not-present;always;disabled;""
	// +optional
	// +nullable
	VolumeBackupPolicy SystemBackupCreateVolumeBackupPolicy `json:"volumeBackupPolicy"`
}

// SystemBackupStatus is the observed state of a system backup.
type SystemBackupStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// Version is the Longhorn version saved in the backup.
	// +optional
	// +nullable
	Version string `json:"version"`
	// +optional
	// +nullable
	GitCommit string `json:"gitCommit"`
	// +optional
	ManagerImage string `json:"managerImage"`
	// +optional
	State SystemBackupState `json:"state"`
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
	// +optional
	CreatedAt metav1.Time `json:"createdAt"`
	// +optional
	// +nullable
	LastSyncedAt metav1.Time `json:"lastSyncedAt"`
}

// SystemBackup is a backup of Longhorn's whole configuration in the backupstore.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhsb
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`,description="The system backup Longhorn version"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="The system backup state"
// +kubebuilder:printcolumn:name="Created",type=string,JSONPath=`.status.createdAt`,description="The system backup creation time"
// +kubebuilder:printcolumn:name="LastSyncedAt",type=string,JSONPath=`.status.lastSyncedAt`,description="The last time that the system backup was synced into the cluster"
type SystemBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SystemBackupSpec   `json:"spec,omitempty"`
	Status SystemBackupStatus `json:"status,omitempty"`
}

// SystemBackupList is a list of SystemBackups.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type SystemBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SystemBackup `json:"items"`
}

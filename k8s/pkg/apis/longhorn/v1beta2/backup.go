package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackupState is the state of a backup.
type BackupState string

// Backup states: "" (new), Pending and InProgress are transient; Completed,
// Error and Unknown are final; Deleting while the backupstore copy is removed.
const (
	BackupStateNew        BackupState = ""
	BackupStatePending    BackupState = "Pending"
	BackupStateInProgress BackupState = "InProgress"
	BackupStateCompleted  BackupState = "Completed"
	BackupStateError      BackupState = "Error"
	BackupStateUnknown    BackupState = "Unknown"
	BackupStateDeleting   BackupState = "Deleting"
)

// BackupCompressionMethod is the block compression used in the backupstore.
type BackupCompressionMethod string

// Compression methods.
const (
	BackupCompressionMethodNone BackupCompressionMethod = "none"
	BackupCompressionMethodLz4  BackupCompressionMethod = "lz4"
	BackupCompressionMethodGzip BackupCompressionMethod = "gzip"
)

// BackupMode selects a full or incremental backup.
// +kubebuilder:validation:Enum=full;incremental
type BackupMode string

// Backup modes.
const (
	BackupModeFull        BackupMode = "full"
	BackupModeIncremental BackupMode = "incremental"
)

// BackupSpec is the desired state of a backup.
type BackupSpec struct {
	// SyncRequestedAt asks the controller to resync the backup from the target.
	// +optional
	// +nullable
	SyncRequestedAt metav1.Time `json:"syncRequestedAt"`
	// SnapshotName is the snapshot to back up.
	// +optional
	SnapshotName string `json:"snapshotName"`
	// +optional
	Labels map[string]string `json:"labels"`
	// +optional
	BackupMode BackupMode `json:"backupMode,omitempty"`
	// BackupBlockSize in bytes, as a string: "-1" (invalid), "2097152" or
	// "16777216"; 0 means the legacy 2 MiB.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Enum="-1";"2097152";"16777216"
	// +optional
	BackupBlockSize int64 `json:"backupBlockSize,string,omitempty"`
}

// BackupStatus is the observed state of a backup.
type BackupStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	State BackupState `json:"state"`
	// Progress in percent (0-100).
	// +optional
	Progress int `json:"progress"`
	// ReplicaAddress is the replica that uploads the backup.
	// +optional
	ReplicaAddress string `json:"replicaAddress"`
	// +optional
	Error string `json:"error,omitempty"`
	// URL is the backup URL in the backupstore.
	// +optional
	URL string `json:"url"`
	// +optional
	SnapshotName string `json:"snapshotName"`
	// +optional
	SnapshotCreatedAt string `json:"snapshotCreatedAt"`
	// +optional
	BackupCreatedAt string `json:"backupCreatedAt"`
	// Size in bytes, as a decimal string.
	// +optional
	Size string `json:"size"`
	// +optional
	// +nullable
	Labels map[string]string `json:"labels"`
	// Messages holds errors from listing or inspecting the backup.
	// +optional
	// +nullable
	Messages map[string]string `json:"messages"`
	// +optional
	VolumeName string `json:"volumeName"`
	// +optional
	VolumeSize string `json:"volumeSize"`
	// +optional
	VolumeCreated string `json:"volumeCreated"`
	// +optional
	VolumeBackingImageName string `json:"volumeBackingImageName"`
	// +optional
	// +nullable
	LastSyncedAt metav1.Time `json:"lastSyncedAt"`
	// +optional
	CompressionMethod BackupCompressionMethod `json:"compressionMethod"`
	// NewlyUploadDataSize in bytes, as a decimal string.
	// +optional
	NewlyUploadedDataSize string `json:"newlyUploadDataSize"`
	// ReUploadedDataSize in bytes, as a decimal string.
	// +optional
	ReUploadedDataSize string `json:"reUploadedDataSize"`
	// +optional
	BackupTargetName string `json:"backupTargetName"`
}

// Backup is one backup of a volume snapshot in a backup target.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhb
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="SnapshotName",type=string,JSONPath=`.status.snapshotName`,description="The snapshot name"
// +kubebuilder:printcolumn:name="SnapshotSize",type=string,JSONPath=`.status.size`,description="The snapshot size"
// +kubebuilder:printcolumn:name="SnapshotCreatedAt",type=string,JSONPath=`.status.snapshotCreatedAt`,description="The snapshot creation time"
// +kubebuilder:printcolumn:name="BackupTarget",type=string,JSONPath=`.status.backupTargetName`,description="The backup target name"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="The backup state"
// +kubebuilder:printcolumn:name="LastSyncedAt",type=string,JSONPath=`.status.lastSyncedAt`,description="The backup last synced time"
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BackupSpec   `json:"spec,omitempty"`
	Status BackupStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backup `json:"items"`
}

package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackupVolumeSpec is the desired state of a backup volume.
type BackupVolumeSpec struct {
	// +optional
	// +nullable
	BackupTargetName string `json:"backupTargetName"`
	// +optional
	// +nullable
	SyncRequestedAt metav1.Time `json:"syncRequestedAt"`
	// VolumeName is the volume whose backups this folder holds.
	// +optional
	VolumeName string `json:"volumeName"`
}

// BackupVolumeStatus is the observed state of a backup volume.
type BackupVolumeStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	// +nullable
	LastModificationTime metav1.Time `json:"lastModificationTime"`
	// Size in bytes, as a decimal string.
	// +optional
	Size string `json:"size"`
	// +optional
	// +nullable
	Labels map[string]string `json:"labels"`
	// +optional
	CreatedAt string `json:"createdAt"`
	// +optional
	LastBackupName string `json:"lastBackupName"`
	// +optional
	LastBackupAt string `json:"lastBackupAt"`
	// DataStored is the stored size in bytes, as a decimal string.
	// +optional
	DataStored string `json:"dataStored"`
	// +optional
	// +nullable
	Messages map[string]string `json:"messages"`
	// +optional
	BackingImageName string `json:"backingImageName"`
	// +optional
	BackingImageChecksum string `json:"backingImageChecksum"`
	// +optional
	StorageClassName string `json:"storageClassName"`
	// +optional
	LinkedCloneSourceVolume string `json:"linkedCloneSourceVolume,omitempty"`
	// +optional
	LinkedCloneSourceSnapshot string `json:"linkedCloneSourceSnapshot,omitempty"`
	// +optional
	// +nullable
	LastSyncedAt metav1.Time `json:"lastSyncedAt"`
}

// BackupVolume is a per-volume folder in a backup target.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhbv
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="BackupTarget",type=string,JSONPath=`.spec.backupTargetName`,description="The backup target name"
// +kubebuilder:printcolumn:name="CreatedAt",type=string,JSONPath=`.status.createdAt`,description="The backup volume creation time"
// +kubebuilder:printcolumn:name="LastBackupName",type=string,JSONPath=`.status.lastBackupName`,description="The backup volume last backup name"
// +kubebuilder:printcolumn:name="LastBackupAt",type=string,JSONPath=`.status.lastBackupAt`,description="The backup volume last backup time"
// +kubebuilder:printcolumn:name="LastSyncedAt",type=string,JSONPath=`.status.lastSyncedAt`,description="The backup volume last synced time"
type BackupVolume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BackupVolumeSpec   `json:"spec,omitempty"`
	Status BackupVolumeStatus `json:"status,omitempty"`
}

// BackupVolumeList is a list of BackupVolumes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BackupVolumeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupVolume `json:"items"`
}

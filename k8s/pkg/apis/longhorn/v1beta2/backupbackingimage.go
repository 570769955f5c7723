package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackupBackingImageSpec is the desired state of a backing image backup.
type BackupBackingImageSpec struct {
	// BackingImage is the backing image to back up.
	BackingImage string `json:"backingImage"`
	// +optional
	// +nullable
	BackupTargetName string `json:"backupTargetName"`
	// +optional
	// +nullable
	SyncRequestedAt metav1.Time `json:"syncRequestedAt"`
	// UserCreated is true when created through the API or UI.
	UserCreated bool `json:"userCreated"`
	// +optional
	Labels map[string]string `json:"labels"`
}

// BackupBackingImageStatus is the observed state of a backing image backup.
type BackupBackingImageStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	BackingImage string `json:"backingImage"`
	// +optional
	State BackupState `json:"state"`
	// +optional
	URL string `json:"url"`
	// +optional
	Error string `json:"error"`
	// +optional
	Progress int `json:"progress"`
	// ManagerAddress is the backing image manager that uploads the backup.
	// +optional
	ManagerAddress string `json:"managerAddress"`
	// +optional
	Checksum string `json:"checksum"`
	// Size in bytes.
	// +optional
	Size int64 `json:"size"`
	// +optional
	// +nullable
	Labels map[string]string `json:"labels"`
	// +optional
	BackupCreatedAt string `json:"backupCreatedAt"`
	// +optional
	// +nullable
	LastSyncedAt metav1.Time `json:"lastSyncedAt"`
	// +optional
	// +nullable
	Messages map[string]string `json:"messages"`
	// +optional
	CompressionMethod BackupCompressionMethod `json:"compressionMethod"`
	// +optional
	Secret string `json:"secret"`
	// +optional
	SecretNamespace string `json:"secretNamespace"`
}

// BackupBackingImage is a backup of a backing image in a backup target.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhbbi
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="BackingImage",type=string,JSONPath=`.status.backingImage`,description="The backing image name"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`,description="The backing image size"
// +kubebuilder:printcolumn:name="BackupCreatedAt",type=string,JSONPath=`.status.backupCreatedAt`,description="The backing image backup upload finished time"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="The backing image backup state"
// +kubebuilder:printcolumn:name="LastSyncedAt",type=string,JSONPath=`.status.lastSyncedAt`,description="The last synced time"
type BackupBackingImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BackupBackingImageSpec   `json:"spec,omitempty"`
	Status BackupBackingImageStatus `json:"status,omitempty"`
}

// BackupBackingImageList is a list of BackupBackingImages.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BackupBackingImageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupBackingImage `json:"items"`
}

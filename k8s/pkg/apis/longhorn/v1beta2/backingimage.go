package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackingImageState is the state of one backing image file (per disk) or of
// a data source.
type BackingImageState string

// Backing image states.
const (
	BackingImageStatePending          BackingImageState = "pending"
	BackingImageStateStarting         BackingImageState = "starting"
	BackingImageStateReadyForTransfer BackingImageState = "ready-for-transfer"
	BackingImageStateReady            BackingImageState = "ready"
	BackingImageStateInProgress       BackingImageState = "in-progress"
	BackingImageStateFailed           BackingImageState = "failed"
	BackingImageStateFailedAndCleanUp BackingImageState = "failed-and-cleanup"
	BackingImageStateUnknown          BackingImageState = "unknown"
)

// Backing image parameter keys used in StorageClass parameters.
const (
	BackingImageParameterName                 = "backingImage"
	BackingImageParameterDataSourceType       = "backingImageDataSourceType"
	BackingImageParameterChecksum             = "backingImageChecksum"
	BackingImageParameterDataSourceParameters = "backingImageDataSourceParameters"
	BackingImageParameterMinNumberOfCopies    = "backingImageMinNumberOfCopies"
	BackingImageParameterNodeSelector         = "backingImageNodeSelector"
	BackingImageParameterDiskSelector         = "backingImageDiskSelector"
)

// BackingImageDiskFileSpec is the desired state of the file on one disk.
type BackingImageDiskFileSpec struct {
	// +optional
	EvictionRequested bool `json:"evictionRequested"`
	// +kubebuilder:validation:Enum=v1;v2
	// +optional
	DataEngine DataEngineType `json:"dataEngine,omitempty"`
}

// BackingImageDiskFileStatus is the observed state of the file on one disk.
type BackingImageDiskFileStatus struct {
	// +kubebuilder:validation:Enum=v1;v2
	// +optional
	DataEngine DataEngineType `json:"dataEngine,omitempty"`
	// +optional
	State BackingImageState `json:"state"`
	// +optional
	Progress int `json:"progress"`
	// +optional
	Message string `json:"message"`
	// +optional
	LastStateTransitionTime string `json:"lastStateTransitionTime"`
}

// BackingImageSpec is the desired state of a backing image.
type BackingImageSpec struct {
	// Disks is deprecated; see DiskFileSpecMap.
	// +optional
	Disks map[string]string `json:"disks"`
	// DiskFileSpecMap maps disk UUID to the file wanted on it.
	// +optional
	DiskFileSpecMap map[string]*BackingImageDiskFileSpec `json:"diskFileSpecMap"`
	// Checksum is the expected SHA-512 of the file.
	// +optional
	Checksum string `json:"checksum"`
	// +optional
	SourceType BackingImageDataSourceType `json:"sourceType,omitempty"`
	// +optional
	SourceParameters map[string]string `json:"sourceParameters"`
	// +optional
	MinNumberOfCopies int `json:"minNumberOfCopies"`
	// +optional
	DiskSelector []string `json:"diskSelector"`
	// +optional
	NodeSelector []string `json:"nodeSelector"`
	// Secret and SecretNamespace name the encryption key of an encrypted image.
	// +optional
	Secret string `json:"secret"`
	// +optional
	SecretNamespace string `json:"secretNamespace"`
	// +kubebuilder:validation:Enum=v1;v2
	// +kubebuilder:default:=v1
	// +optional
	DataEngine DataEngineType `json:"dataEngine,omitempty"`
}

// BackingImageStatus is the observed state of a backing image; sizes in bytes.
type BackingImageStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	UUID string `json:"uuid"`
	// +optional
	Size int64 `json:"size"`
	// VirtualSize may exceed Size (qcow2); 0 until known.
	// +optional
	VirtualSize int64 `json:"virtualSize"`
	// RealSize may be below Size for sparse files; 0 until known.
	// +optional
	RealSize int64 `json:"realSize"`
	// +optional
	Checksum string `json:"checksum"`
	// +optional
	// +nullable
	DiskFileStatusMap map[string]*BackingImageDiskFileStatus `json:"diskFileStatusMap"`
	// +optional
	// +nullable
	DiskLastRefAtMap map[string]string `json:"diskLastRefAtMap"`
	// V2FirstCopyStatus goes pending -> in-progress -> ready/failed.
	// +optional
	V2FirstCopyStatus BackingImageState `json:"v2FirstCopyStatus"`
	// +optional
	V2FirstCopyDisk string `json:"v2FirstCopyDisk"`
}

// BackingImage is a base image volumes can be layered on.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhbi
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="UUID",type=string,JSONPath=`.status.uuid`,description="The system generated UUID"
// +kubebuilder:printcolumn:name="SourceType",type=string,JSONPath=`.spec.sourceType`,description="The source of the backing image file data"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`,description="The backing image file size in each disk"
// +kubebuilder:printcolumn:name="VirtualSize",type=string,JSONPath=`.status.virtualSize`,description="The virtual size of the image (may be larger than file size)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BackingImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BackingImageSpec   `json:"spec,omitempty"`
	Status BackingImageStatus `json:"status,omitempty"`
}

// BackingImageList is a list of BackingImages.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BackingImageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackingImage `json:"items"`
}

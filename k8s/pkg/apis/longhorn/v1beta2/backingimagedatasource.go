package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackingImageDataSourceType is where a backing image's data comes from.
// +kubebuilder:validation:Enum=download;upload;export-from-volume;restore;clone
type BackingImageDataSourceType string

// Data source types.
const (
	BackingImageDataSourceTypeDownload         BackingImageDataSourceType = "download"
	BackingImageDataSourceTypeUpload           BackingImageDataSourceType = "upload"
	BackingImageDataSourceTypeExportFromVolume BackingImageDataSourceType = "export-from-volume"
	BackingImageDataSourceTypeRestore          BackingImageDataSourceType = "restore"
	BackingImageDataSourceTypeClone            BackingImageDataSourceType = "clone"
)

// Data source parameter keys (spec.parameters).
const (
	DataSourceTypeDownloadParameterURL                               = "url"
	DataSourceTypeExportFromVolumeParameterExportType                = "export-type"
	DataSourceTypeExportFromVolumeParameterVolumeName                = "volume-name"
	DataSourceTypeExportFromVolumeParameterVolumeSize                = "volume-size"
	DataSourceTypeExportFromVolumeParameterSnapshotName              = "snapshot-name"
	DataSourceTypeExportFromVolumeParameterSenderAddress             = "sender-address"
	DataSourceTypeExportFromVolumeParameterFileSyncHTTPClientTimeout = "file-sync-http-client-timeout"
	DataSourceTypeRestoreParameterBackupTargetName                   = "backup-target-name"
	DataSourceTypeRestoreParameterBackupURL                          = "backup-url"
	DataSourceTypeRestoreParameterConcurrentLimit                    = "concurrent-limit"
	DataSourceTypeCloneParameterBackingImage                         = "backing-image"
	DataSourceTypeCloneParameterBackingImageUUID                     = "backing-image-uuid"
	DataSourceTypeCloneParameterEncryption                           = "encryption"
	DataSourceTypeCloneParameterSecret                               = "secret"
	DataSourceTypeCloneParameterSecretNamespace                      = "secret-namespace"
	DataSourceTypeParameterDataEngine                                = "data-engine"
)

// BackingImageDataSourceSpec is the desired state of a data source.
type BackingImageDataSourceSpec struct {
	// +optional
	NodeID string `json:"nodeID"`
	// UUID of the backing image file being prepared.
	// +optional
	UUID string `json:"uuid"`
	// +optional
	DiskUUID string `json:"diskUUID"`
	// +optional
	DiskPath string `json:"diskPath"`
	// +optional
	Checksum string `json:"checksum"`
	// +optional
	SourceType BackingImageDataSourceType `json:"sourceType,omitempty"`
	// +optional
	Parameters map[string]string `json:"parameters"`
	// FileTransferred is set once the file was handed to a backing image manager.
	// +optional
	FileTransferred bool `json:"fileTransferred"`
	// +optional
	RecoveryRequested bool `json:"recoveryRequested"`
}

// BackingImageDataSourceStatus is the observed state of a data source.
type BackingImageDataSourceStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	// +nullable
	RunningParameters map[string]string `json:"runningParameters"`
	// +optional
	CurrentState BackingImageState `json:"currentState"`
	// +optional
	IP string `json:"ip"`
	// +optional
	StorageIP string `json:"storageIP"`
	// Size in bytes.
	// +optional
	Size int64 `json:"size"`
	// +optional
	Progress int `json:"progress"`
	// +optional
	Checksum string `json:"checksum"`
	// +optional
	Message string `json:"message"`
	// +optional
	RetryCount int `json:"retryCount"`
}

// BackingImageDataSource imports the first copy of a backing image.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhbids
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="UUID",type=string,JSONPath=`.spec.uuid`,description="The system generated UUID of the provisioned backing image file"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.currentState`,description="The current state of the pod used to provision the backing image file from source"
// +kubebuilder:printcolumn:name="SourceType",type=string,JSONPath=`.spec.sourceType`,description="The data source type"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`,description="The backing image file size"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeID`,description="The node the backing image file will be prepared on"
// +kubebuilder:printcolumn:name="DiskUUID",type=string,JSONPath=`.spec.diskUUID`,description="The disk the backing image file will be prepared on"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BackingImageDataSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BackingImageDataSourceSpec   `json:"spec,omitempty"`
	Status BackingImageDataSourceStatus `json:"status,omitempty"`
}

// BackingImageDataSourceList is a list of BackingImageDataSources.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BackingImageDataSourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackingImageDataSource `json:"items"`
}

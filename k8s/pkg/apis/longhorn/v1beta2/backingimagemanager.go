package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackingImageManagerState is the state of a backing image manager pod.
type BackingImageManagerState string

// Backing image manager states.
const (
	BackingImageManagerStateError    BackingImageManagerState = "error"
	BackingImageManagerStateRunning  BackingImageManagerState = "running"
	BackingImageManagerStateStopped  BackingImageManagerState = "stopped"
	BackingImageManagerStateStarting BackingImageManagerState = "starting"
	BackingImageManagerStateUnknown  BackingImageManagerState = "unknown"
)

// BackingImageFileInfo is one backing image file held by a manager; sizes in bytes.
type BackingImageFileInfo struct {
	// +optional
	Name string `json:"name"`
	// +optional
	UUID string `json:"uuid"`
	// +optional
	Size int64 `json:"size"`
	// +optional
	VirtualSize int64 `json:"virtualSize"`
	// +optional
	RealSize int64 `json:"realSize"`
	// +optional
	State BackingImageState `json:"state"`
	// +optional
	CurrentChecksum string `json:"currentChecksum"`
	// +optional
	Message string `json:"message"`
	// SendingReference counts transfers in progress from this file.
	// +optional
	SendingReference int `json:"sendingReference"`
	// +optional
	SenderManagerAddress string `json:"senderManagerAddress"`
	// +optional
	Progress int `json:"progress"`
}

// BackingImageManagerSpec is the desired state of a backing image manager.
type BackingImageManagerSpec struct {
	// +optional
	Image string `json:"image"`
	// +optional
	NodeID string `json:"nodeID"`
	// +optional
	DiskUUID string `json:"diskUUID"`
	// +optional
	DiskPath string `json:"diskPath"`
	// BackingImages maps backing image name to file UUID.
	// +optional
	BackingImages map[string]string `json:"backingImages"`
}

// BackingImageManagerStatus is the observed state of a backing image manager.
type BackingImageManagerStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	CurrentState BackingImageManagerState `json:"currentState"`
	// +optional
	// +nullable
	BackingImageFileMap map[string]BackingImageFileInfo `json:"backingImageFileMap"`
	// +optional
	IP string `json:"ip"`
	// +optional
	StorageIP string `json:"storageIP"`
	// +optional
	APIMinVersion int `json:"apiMinVersion"`
	// +optional
	APIVersion int `json:"apiVersion"`
}

// BackingImageManager is the per-disk pod that holds backing image files.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhbim
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.currentState`,description="The current state of the manager"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,description="The image the manager pod will use"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeID`,description="The node the manager is on"
// +kubebuilder:printcolumn:name="DiskUUID",type=string,JSONPath=`.spec.diskUUID`,description="The disk the manager is responsible for"
// +kubebuilder:printcolumn:name="DiskPath",type=string,JSONPath=`.spec.diskPath`,description="The disk path the manager is using"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BackingImageManager struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BackingImageManagerSpec   `json:"spec,omitempty"`
	Status BackingImageManagerStatus `json:"status,omitempty"`
}

// BackingImageManagerList is a list of BackingImageManagers.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BackingImageManagerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackingImageManager `json:"items"`
}

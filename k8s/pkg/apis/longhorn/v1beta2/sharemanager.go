package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ShareManagerState is the state of a share manager (NFS server pod).
type ShareManagerState string

// Share manager states.
const (
	ShareManagerStateUnknown  ShareManagerState = "unknown"
	ShareManagerStateStarting ShareManagerState = "starting"
	ShareManagerStateRunning  ShareManagerState = "running"
	ShareManagerStateStopping ShareManagerState = "stopping"
	ShareManagerStateStopped  ShareManagerState = "stopped"
	ShareManagerStateError    ShareManagerState = "error"
)

// ShareManagerSpec is the desired state of a share manager.
type ShareManagerSpec struct {
	// Image is the share manager pod image.
	// +optional
	Image string `json:"image"`
}

// ShareManagerStatus is the observed state of a share manager.
type ShareManagerStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	State ShareManagerState `json:"state"`
	// +optional
	CurrentImage string `json:"currentImage"`
	// Endpoint is nfs://<service or ip>/<volume>.
	// +optional
	Endpoint string `json:"endpoint"`
}

// ShareManager serves an RWX volume over NFS; named after the volume.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhsm
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="The state of the share manager"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.ownerID`,description="The node that the share manager is owned by"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.currentImage`,description="The current image of the share manager"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ShareManager struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ShareManagerSpec   `json:"spec,omitempty"`
	Status ShareManagerStatus `json:"status,omitempty"`
}

// ShareManagerList is a list of ShareManagers.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ShareManagerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ShareManager `json:"items"`
}

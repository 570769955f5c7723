package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// EngineImageState is the deployment state of an engine image.
type EngineImageState string

// Engine image states.
const (
	EngineImageStateDeploying    EngineImageState = "deploying"
	EngineImageStateDeployed     EngineImageState = "deployed"
	EngineImageStateIncompatible EngineImageState = "incompatible"
	EngineImageStateError        EngineImageState = "error"
)

// Engine image condition type and reasons.
const (
	EngineImageConditionTypeReady                = "ready"
	EngineImageConditionTypeReadyReasonDaemonSet = "daemonSet"
	EngineImageConditionTypeReadyReasonBinary    = "binary"
)

// EngineVersionDetails are the versions an engine binary reports.
type EngineVersionDetails struct {
	// +optional
	Version string `json:"version"`
	// +optional
	GitCommit string `json:"gitCommit"`
	// +optional
	BuildDate string `json:"buildDate"`
	// +optional
	CLIAPIVersion int `json:"cliAPIVersion"`
	// +optional
	CLIAPIMinVersion int `json:"cliAPIMinVersion"`
	// +optional
	ControllerAPIVersion int `json:"controllerAPIVersion"`
	// +optional
	ControllerAPIMinVersion int `json:"controllerAPIMinVersion"`
	// +optional
	DataFormatVersion int `json:"dataFormatVersion"`
	// +optional
	DataFormatMinVersion int `json:"dataFormatMinVersion"`
}

// EngineImageSpec is the desired state of an engine image.
type EngineImageSpec struct {
	// Image is the container image holding the engine binary.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
}

// EngineImageStatus is the observed state of an engine image.
type EngineImageStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	State EngineImageState `json:"state"`
	// RefCount is the number of engines and replicas using the image.
	// +optional
	RefCount int `json:"refCount"`
	// +optional
	NoRefSince string `json:"noRefSince"`
	// +optional
	Incompatible bool `json:"incompatible"`
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
	// NodeDeploymentMap says on which nodes the image is deployed.
	// +optional
	// +nullable
	NodeDeploymentMap    map[string]bool `json:"nodeDeploymentMap"`
	EngineVersionDetails `json:",inline"`
}

// EngineImage is an engine binary image deployed to every node.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhei
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Incompatible",type=boolean,JSONPath=`.status.incompatible`,description="Compatibility of the engine image"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="State of the engine image"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,description="The Longhorn engine image"
// +kubebuilder:printcolumn:name="RefCount",type=integer,JSONPath=`.status.refCount`,description="Number of resources using the engine image"
// +kubebuilder:printcolumn:name="BuildDate",type=date,JSONPath=`.status.buildDate`,description="The build date of the engine image"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EngineImage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EngineImageSpec   `json:"spec,omitempty"`
	Status EngineImageStatus `json:"status,omitempty"`
}

// EngineImageList is a list of EngineImages.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type EngineImageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EngineImage `json:"items"`
}

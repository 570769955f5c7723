package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SupportBundleState is the state of a support bundle.
type SupportBundleState string

// Support bundle states.
const (
	SupportBundleStateNone             SupportBundleState = ""
	SupportBundleStateStarted          SupportBundleState = "Started"
	SupportBundleStateGenerating       SupportBundleState = "Generating"
	SupportBundleStateReadyForDownload SupportBundleState = "ReadyForDownload"
	SupportBundleStateError            SupportBundleState = "Error"
	SupportBundleStateUnknown          SupportBundleState = "Unknown"
	SupportBundleStateReplaced         SupportBundleState = "Replaced"
	SupportBundleStateDeleting         SupportBundleState = "Deleting"
)

// Support bundle condition types.
const (
	SupportBundleConditionTypeError   = "Error"
	SupportBundleConditionTypeManager = "Manager"
)

// SupportBundleSpec is the desired state of a support bundle.
type SupportBundleSpec struct {
	// NodeID is the preferred node to generate the bundle on.
	// +optional
	NodeID string `json:"nodeID"`
	// IssueURL links the bundle to an issue.
	// +optional
	// +nullable
	IssueURL string `json:"issueURL"`
	// Description briefly describes the issue.
	Description string `json:"description"`
}

// SupportBundleStatus is the observed state of a support bundle.
type SupportBundleStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// Image is the support bundle manager image.
	// +optional
	Image string `json:"image"`
	// ManagerIP is the support bundle manager pod IP.
	// +optional
	IP string `json:"managerIP"`
	// +optional
	State SupportBundleState `json:"state"`
	// Progress in percent (0-100).
	// +optional
	Progress int `json:"progress"`
	// +optional
	Filename string `json:"filename"`
	// Filesize in bytes.
	// +optional
	Filesize int64 `json:"filesize"`
	// +optional
	Conditions []Condition `json:"conditions"`
}

// SupportBundle asks for a support bundle (logs and objects) to be generated.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhbundle
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`,description="The state of the support bundle"
// +kubebuilder:printcolumn:name="Issue",type=string,JSONPath=`.spec.issueURL`,description="The issue URL"
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`,description="A brief description of the issue"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SupportBundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SupportBundleSpec   `json:"spec,omitempty"`
	Status SupportBundleStatus `json:"status,omitempty"`
}

// SupportBundleList is a list of SupportBundles.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type SupportBundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SupportBundle `json:"items"`
}

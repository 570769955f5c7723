package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SettingStatus is the observed state of a setting.
type SettingStatus struct {
	// Applied is true once the manager has acted on the current value.
	Applied bool `json:"applied"`
}

// Setting is one global setting; the object name is the setting name
// (e.g. "default-replica-count"). It has no spec: Value is top-level.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhs
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Value",type=string,JSONPath=`.value`,description="The value of the setting"
// +kubebuilder:printcolumn:name="Applied",type=boolean,JSONPath=`.status.applied`,description="The setting is applied"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Setting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Value is the setting value: a plain string that applies to every data
	// engine the setting covers, or, for data-engine-specific settings, a JSON
	// object such as {"v1":"3","v2":"3"}.
	Value string `json:"value"`

	// +optional
	Status SettingStatus `json:"status,omitempty"`
}

// SettingList is a list of Settings.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type SettingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Setting `json:"items"`
}

package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Backup target condition type and reason.
const (
	BackupTargetConditionTypeUnavailable   = "Unavailable"
	BackupTargetConditionReasonUnavailable = "Unavailable"
)

// BackupTargetDefault is the name of the default backup target.
const BackupTargetDefault = "default"

// BackupTargetSpec is the desired state of a backup target.
type BackupTargetSpec struct {
	// BackupTargetURL is the backupstore URL: s3://bucket@region/path,
	// nfs://host:/path, cifs://host/share or azblob://container@endpoint/.
	// +optional
	BackupTargetURL string `json:"backupTargetURL"`
	// CredentialSecret names the Secret with the backupstore credentials.
	// +optional
	CredentialSecret string `json:"credentialSecret"`
	// PollInterval is how often the target is synced (e.g. "5m0s"); 0 disables polling.
	// +optional
	PollInterval metav1.Duration `json:"pollInterval"`
	// +optional
	// +nullable
	SyncRequestedAt metav1.Time `json:"syncRequestedAt"`
}

// BackupTargetStatus is the observed state of a backup target.
type BackupTargetStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// +optional
	Available bool `json:"available"`
	// +optional
	// +nullable
	Conditions []Condition `json:"conditions"`
	// +optional
	// +nullable
	LastSyncedAt metav1.Time `json:"lastSyncedAt"`
}

// BackupTarget is a backupstore location and its credentials.
// The third column shows the poll interval (Longhorn labels it LastBackupAt).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhbt
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.backupTargetURL`,description="The backup target URL"
// +kubebuilder:printcolumn:name="Credential",type=string,JSONPath=`.spec.credentialSecret`,description="The backup target credential secret"
// +kubebuilder:printcolumn:name="PollInterval",type=string,JSONPath=`.spec.pollInterval`,description="The backup target poll interval"
// +kubebuilder:printcolumn:name="Available",type=boolean,JSONPath=`.status.available`,description="Indicate whether the backup target is available or not"
// +kubebuilder:printcolumn:name="LastSyncedAt",type=string,JSONPath=`.status.lastSyncedAt`,description="The backup target last synced time"
type BackupTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BackupTargetSpec   `json:"spec,omitempty"`
	Status BackupTargetStatus `json:"status,omitempty"`
}

// BackupTargetList is a list of BackupTargets.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BackupTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupTarget `json:"items"`
}

package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RecurringJobType is the task a recurring job runs.
// +kubebuilder:validation:Enum=snapshot;snapshot-force-create;snapshot-cleanup;snapshot-delete;backup;backup-force-create;filesystem-trim;system-backup
type RecurringJobType string

// Recurring job tasks.
const (
	// RecurringJobTypeSnapshot takes a snapshot unless cleaning up old ones failed.
	RecurringJobTypeSnapshot RecurringJobType = "snapshot"
	// RecurringJobTypeSnapshotForceCreate takes a snapshot even if cleanup failed.
	RecurringJobTypeSnapshotForceCreate RecurringJobType = "snapshot-force-create"
	// RecurringJobTypeSnapshotCleanup purges removable and system snapshots.
	RecurringJobTypeSnapshotCleanup RecurringJobType = "snapshot-cleanup"
	// RecurringJobTypeSnapshotDelete deletes snapshots beyond the retain count.
	RecurringJobTypeSnapshotDelete RecurringJobType = "snapshot-delete"
	// RecurringJobTypeBackup takes a snapshot and backs it up.
	RecurringJobTypeBackup RecurringJobType = "backup"
	// RecurringJobTypeBackupForceCreate backs up even if cleanup failed.
	RecurringJobTypeBackupForceCreate RecurringJobType = "backup-force-create"
	// RecurringJobTypeFilesystemTrim trims the mounted filesystem.
	RecurringJobTypeFilesystemTrim RecurringJobType = "filesystem-trim"
	// RecurringJobTypeSystemBackup creates a system backup.
	RecurringJobTypeSystemBackup RecurringJobType = "system-backup"

	// RecurringJobGroupDefault is the group volumes without job labels join.
	RecurringJobGroupDefault = "default"
)

// RecurringJobRetentionPolicy decides which snapshots/backups are kept.
// +kubebuilder:validation:Enum=count-based;age-based
type RecurringJobRetentionPolicy string

// Retention policies.
const (
	// RecurringJobRetentionPolicyCountBased keeps the newest Retain items.
	RecurringJobRetentionPolicyCountBased RecurringJobRetentionPolicy = "count-based"
	// RecurringJobRetentionPolicyAgeBased keeps items younger than RetainAge.
	RecurringJobRetentionPolicyAgeBased RecurringJobRetentionPolicy = "age-based"
)

// Recurring job parameter keys (spec.parameters).
const (
	RecurringJobParameterFullBackupInterval = "full-backup-interval"
	RecurringJobParameterVolumeBackupPolicy = "volume-backup-policy"
)

// RecurringJobSpec is the desired state of a recurring job.
type RecurringJobSpec struct {
	// +optional
	Name string `json:"name"`
	// +optional
	Groups []string `json:"groups,omitempty"`
	// +optional
	Task RecurringJobType `json:"task"`
	// Cron is a standard 5-field cron expression.
	// +optional
	Cron string `json:"cron"`
	// Retain is the number of snapshots/backups kept (count-based policy).
	// +optional
	Retain int `json:"retain"`
	// RetainAge is a Go duration (e.g. "24h"); items older are removed (age-based policy).
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-')",message="retainAge must be a positive duration"
	// +optional
	RetainAge metav1.Duration `json:"retainAge,omitempty"`
	// +kubebuilder:default:=count-based
	// +optional
	RetentionPolicy RecurringJobRetentionPolicy `json:"retentionPolicy,omitempty"`
	// Concurrency is how many volumes the job processes at once.
	// +optional
	Concurrency int `json:"concurrency"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Parameters: full-backup-interval, volume-backup-policy.
	// +optional
	Parameters map[string]string `json:"parameters,omitempty"`
}

// RecurringJobStatus is the observed state of a recurring job.
type RecurringJobStatus struct {
	// +optional
	OwnerID string `json:"ownerID"`
	// ExecutionCount counts triggered runs.
	// +optional
	ExecutionCount int `json:"executionCount"`
}

// RecurringJob is a scheduled snapshot/backup/trim task for groups of volumes.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhrj
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Groups",type=string,JSONPath=`.spec.groups`,description="The groups of the job; volumes without job labels join the default group"
// +kubebuilder:printcolumn:name="Task",type=string,JSONPath=`.spec.task`,description="The task the job runs"
// +kubebuilder:printcolumn:name="Cron",type=string,JSONPath=`.spec.cron`,description="The cron schedule"
// +kubebuilder:printcolumn:name="RetentionPolicy",type=string,JSONPath=`.spec.retentionPolicy`,description="count-based or age-based retention"
// +kubebuilder:printcolumn:name="RetainCount",type=integer,JSONPath=`.spec.retain`,description="The number of snapshots/backups to keep for the volume"
// +kubebuilder:printcolumn:name="RetainAge",type=string,JSONPath=`.spec.retainAge`,description="Items older than this are removed under age-based retention"
// +kubebuilder:printcolumn:name="Concurrency",type=integer,JSONPath=`.spec.concurrency`,description="The number of volumes processed at once"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Labels",type=string,JSONPath=`.spec.labels`,description="The labels put on the snapshots/backups"
type RecurringJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RecurringJobSpec   `json:"spec,omitempty"`
	Status RecurringJobStatus `json:"status,omitempty"`
}

// RecurringJobList is a list of RecurringJobs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type RecurringJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RecurringJob `json:"items"`
}

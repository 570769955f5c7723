package v1beta2

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ReplicaMode is a replica's mode as seen by its engine.
type ReplicaMode string

// Replica modes: RW serves reads and writes; WO is rebuilding (writes only);
// ERR has failed and is out of the I/O path.
const (
	ReplicaModeRW  ReplicaMode = "RW"
	ReplicaModeWO  ReplicaMode = "WO"
	ReplicaModeERR ReplicaMode = "ERR"
)

// EngineBackupStatus is the progress of one backup taken through the engine.
type EngineBackupStatus struct {
	// Progress in percent (0-100).
	// +optional
	Progress int `json:"progress"`
	// +optional
	BackupURL string `json:"backupURL,omitempty"`
	// +optional
	Error string `json:"error,omitempty"`
	// +optional
	SnapshotName string `json:"snapshotName"`
	// +optional
	State string `json:"state"`
	// +optional
	ReplicaAddress string `json:"replicaAddress"`
}

// RestoreStatus is the progress of a restore into one replica.
type RestoreStatus struct {
	// +optional
	IsRestoring bool `json:"isRestoring"`
	// +optional
	LastRestored string `json:"lastRestored"`
	// +optional
	CurrentRestoringBackup string `json:"currentRestoringBackup"`
	// Progress in percent (0-100).
	// +optional
	Progress int `json:"progress,omitempty"`
	// +optional
	Error string `json:"error,omitempty"`
	// +optional
	Filename string `json:"filename,omitempty"`
	// +optional
	State string `json:"state"`
	// +optional
	BackupURL string `json:"backupURL"`
}

// PurgeStatus is the progress of a snapshot purge in one replica.
type PurgeStatus struct {
	// +optional
	Error string `json:"error"`
	// +optional
	IsPurging bool `json:"isPurging"`
	// Progress in percent (0-100).
	// +optional
	Progress int `json:"progress"`
	// +optional
	State string `json:"state"`
}

// RebuildStatus is the progress of rebuilding one replica.
type RebuildStatus struct {
	// +optional
	Error string `json:"error"`
	// +optional
	IsRebuilding bool `json:"isRebuilding"`
	// Progress in percent (0-100).
	// +optional
	Progress int `json:"progress"`
	// +optional
	State string `json:"state"`
	// FromReplicaAddress is deprecated; see FromReplicaAddressList.
	// +optional
	FromReplicaAddress string `json:"fromReplicaAddress"`
	// +optional
	FromReplicaAddressList []string `json:"fromReplicaAddressList"`
	// AppliedRebuildingMBps is the bandwidth limit in force (MB/s).
	// +optional
	AppliedRebuildingMBps int64 `json:"appliedRebuildingMBps"`
}

// SnapshotCloneStatus is the progress of cloning a snapshot into this engine's volume.
type SnapshotCloneStatus struct {
	// +optional
	IsCloning bool `json:"isCloning"`
	// +optional
	Error string `json:"error"`
	// +optional
	Progress int `json:"progress"`
	// +optional
	State string `json:"state"`
	// +optional
	FromReplicaAddress string `json:"fromReplicaAddress"`
	// +optional
	SnapshotName string `json:"snapshotName"`
}

// SnapshotInfo is one snapshot as the engine reports it.
type SnapshotInfo struct {
	// +optional
	Name string `json:"name"`
	// +optional
	Parent string `json:"parent"`
	// +optional
	// +nullable
	Children map[string]bool `json:"children"`
	// +optional
	Removed bool `json:"removed"`
	// +optional
	UserCreated bool `json:"usercreated"`
	// Created is the RFC 3339 creation time.
	// +optional
	Created string `json:"created"`
	// Size in bytes, as a decimal string.
	// +optional
	Size string `json:"size"`
	// +optional
	// +nullable
	Labels map[string]string `json:"labels"`
}

// EngineSpec is the desired state of an engine (the volume's controller process).
type EngineSpec struct {
	InstanceSpec `json:",inline"`
	// +optional
	Frontend VolumeFrontend `json:"frontend"`
	// +optional
	UblkQueueDepth int `json:"ublkQueueDepth,omitempty"`
	// +optional
	UblkNumberOfQueue int `json:"ublkNumberOfQueue,omitempty"`
	// ReplicaAddressMap maps replica name to "ip:port" of its data server.
	// +optional
	ReplicaAddressMap map[string]string `json:"replicaAddressMap"`
	// +optional
	UpgradedReplicaAddressMap map[string]string `json:"upgradedReplicaAddressMap"`
	// +optional
	BackupVolume string `json:"backupVolume"`
	// +optional
	RequestedBackupRestore string `json:"requestedBackupRestore"`
	// +optional
	RequestedDataSource VolumeDataSource `json:"requestedDataSource"`
	// +optional
	DisableFrontend bool `json:"disableFrontend"`
	// +optional
	RevisionCounterDisabled bool `json:"revisionCounterDisabled"`
	// +optional
	UnmapMarkSnapChainRemovedEnabled bool `json:"unmapMarkSnapChainRemovedEnabled"`
	// +optional
	Active bool `json:"active"`
	// +optional
	SnapshotMaxCount int `json:"snapshotMaxCount"`
	// +kubebuilder:validation:Type=string
	// +optional
	SnapshotMaxSize int64 `json:"snapshotMaxSize,string"`
	// RebuildConcurrentSyncLimit caps concurrent file syncs in one rebuild.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=5
	// +optional
	RebuildConcurrentSyncLimit int `json:"rebuildConcurrentSyncLimit,omitempty"`
}

// EngineStatus is the observed state of an engine.
type EngineStatus struct {
	InstanceStatus `json:",inline"`
	// CurrentSize in bytes, as a decimal string.
	// +kubebuilder:validation:Type=string
	// +optional
	CurrentSize int64 `json:"currentSize,string"`
	// +optional
	// +nullable
	CurrentReplicaAddressMap map[string]string `json:"currentReplicaAddressMap"`
	// +optional
	// +nullable
	ReplicaModeMap map[string]ReplicaMode `json:"replicaModeMap"`
	// ReplicaTransitionTimeMap records when each replica last changed mode (RFC 3339).
	// +optional
	ReplicaTransitionTimeMap map[string]string `json:"replicaTransitionTimeMap"`
	// Endpoint is the frontend endpoint, e.g. /dev/longhorn/<vol> or an iSCSI/NBD address.
	// +optional
	Endpoint string `json:"endpoint"`
	// +optional
	LastRestoredBackup string `json:"lastRestoredBackup"`
	// +optional
	// +nullable
	BackupStatus map[string]*EngineBackupStatus `json:"backupStatus"`
	// +optional
	// +nullable
	RestoreStatus map[string]*RestoreStatus `json:"restoreStatus"`
	// +optional
	// +nullable
	PurgeStatus map[string]*PurgeStatus `json:"purgeStatus"`
	// +optional
	// +nullable
	RebuildStatus map[string]*RebuildStatus `json:"rebuildStatus"`
	// +optional
	// +nullable
	CloneStatus map[string]*SnapshotCloneStatus `json:"cloneStatus"`
	// +optional
	// +nullable
	Snapshots map[string]*SnapshotInfo `json:"snapshots"`
	// +optional
	SnapshotsError string `json:"snapshotsError"`
	// +optional
	IsExpanding bool `json:"isExpanding"`
	// +optional
	LastExpansionError string `json:"lastExpansionError"`
	// +optional
	LastExpansionFailedAt string `json:"lastExpansionFailedAt"`
	// +optional
	UnmapMarkSnapChainRemovedEnabled bool `json:"unmapMarkSnapChainRemovedEnabled"`
	// +optional
	SnapshotMaxCount int `json:"snapshotMaxCount"`
	// +kubebuilder:validation:Type=string
	// +optional
	SnapshotMaxSize int64 `json:"snapshotMaxSize,string"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	RebuildConcurrentSyncLimit int `json:"rebuildConcurrentSyncLimit,omitempty"`
}

// Engine is a volume's controller process (v1) as desired and observed.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:shortName=lhe
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Data Engine",type=string,JSONPath=`.spec.dataEngine`,description="The data engine of the engine"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.currentState`,description="The current state of the engine"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeID`,description="The node that the engine is on"
// +kubebuilder:printcolumn:name="InstanceManager",type=string,JSONPath=`.status.instanceManagerName`,description="The instance manager of the engine"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.currentImage`,description="The current image of the engine"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Engine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EngineSpec   `json:"spec,omitempty"`
	Status EngineStatus `json:"status,omitempty"`
}

// EngineList is a list of Engines.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type EngineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Engine `json:"items"`
}

package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of every Longhorn custom resource.
const GroupName = "longhorn.io"

// Version is the only served and stored version.
const Version = "v1beta2"

// SchemeGroupVersion is longhorn.io/v1beta2.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

// Resource returns the group-qualified resource for a plural resource name,
// e.g. Resource("volumes") = volumes.longhorn.io.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

// Kind returns the group-qualified kind, e.g. Kind("Volume").
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

var (
	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds every kind of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Volume{}, &VolumeList{},
		&Engine{}, &EngineList{},
		&Replica{}, &ReplicaList{},
		&Node{}, &NodeList{},
		&InstanceManager{}, &InstanceManagerList{},
		&Setting{}, &SettingList{},
		&EngineImage{}, &EngineImageList{},
		&Snapshot{}, &SnapshotList{},
		&Backup{}, &BackupList{},
		&BackupTarget{}, &BackupTargetList{},
		&BackupVolume{}, &BackupVolumeList{},
		&BackupBackingImage{}, &BackupBackingImageList{},
		&RecurringJob{}, &RecurringJobList{},
		&VolumeAttachment{}, &VolumeAttachmentList{},
		&Orphan{}, &OrphanList{},
		&ShareManager{}, &ShareManagerList{},
		&SystemBackup{}, &SystemBackupList{},
		&SystemRestore{}, &SystemRestoreList{},
		&BackingImage{}, &BackingImageList{},
		&BackingImageManager{}, &BackingImageManagerList{},
		&BackingImageDataSource{}, &BackingImageDataSourceList{},
		&SupportBundle{}, &SupportBundleList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

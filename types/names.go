package types

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// DefaultNamespace is where Longhorn's objects and pods live.
const DefaultNamespace = "longhorn-system"

// Object name prefixes and infixes (Longhorn types/types.go).
const (
	engineInfix           = "-e-"
	replicaInfix          = "-r-"
	instanceManagerPrefix = "instance-manager-"
	// InstanceManagerSuffixChecksumLength is how many hex digits of the
	// SHA-512 of node+image+data engine follow "instance-manager-".
	InstanceManagerSuffixChecksumLength = 32
	// RandomIDLength is the length of Longhorn's short random IDs (hex).
	RandomIDLength = 8
)

// EngineNameForVolume returns the engine name "<vol>-e-<index>"; index starts
// at 0 and grows each time the volume needs a new engine.
func EngineNameForVolume(volume string, index int) string {
	return volume + engineInfix + strconv.Itoa(index)
}

// ReplicaNameForVolume returns the replica name "<vol>-r-<id>", id being an
// 8-hex-digit ID from RandomID or DeterministicID.
func ReplicaNameForVolume(volume, id string) string {
	return volume + replicaInfix + id
}

// ReplicaDataDirectoryName returns the replica data directory name
// "<vol>-<id>" (under <disk>/replicas/), id being 8 hex digits.
func ReplicaDataDirectoryName(volume, id string) string {
	return volume + "-" + id
}

// RandomID returns 8 random lowercase hex digits (Longhorn's util.RandomID).
// It panics only if the system random source fails, as crypto/rand does.
func RandomID() string {
	var b [RandomIDLength / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// DeterministicID returns 8 hex digits derived from (owner, index), so a
// controller that names children from a monotonic index gets the same name
// on a retry while keeping Longhorn's name shape.
func DeterministicID(owner string, index int) string {
	sum := sha256.Sum256([]byte(owner + "/" + strconv.Itoa(index)))
	return hex.EncodeToString(sum[:])[:RandomIDLength]
}

// InstanceManagerName returns "instance-manager-" + the first 32 hex digits of
// SHA-512(nodeName + image + dataEngine) (Longhorn GetInstanceManagerName,
// type aio). The same node, image and engine always give the same name.
func InstanceManagerName(nodeName, image string, dataEngine longhorn.DataEngineType) string {
	sum := sha512.Sum512([]byte(nodeName + image + string(dataEngine)))
	return instanceManagerPrefix + hex.EncodeToString(sum[:])[:InstanceManagerSuffixChecksumLength]
}

// Label keys Longhorn puts on its objects and pods.
const (
	// LonghornLabelKeyPrefix prefixes Longhorn's namespaced label keys.
	LonghornLabelKeyPrefix = "longhorn.io"

	// LonghornLabelVolume etc. are Longhorn's legacy unprefixed keys on
	// engines and replicas: the volume, node and disk they belong to.
	LonghornLabelVolume   = "longhornvolume"
	LonghornLabelNode     = "longhornnode"
	LonghornLabelDiskUUID = "longhorndiskuuid"

	LonghornLabelComponent            = LonghornLabelKeyPrefix + "/component"
	LonghornLabelManagedBy            = LonghornLabelKeyPrefix + "/managed-by"
	LonghornLabelInstanceManager      = LonghornLabelKeyPrefix + "/instance-manager"
	LonghornLabelInstanceManagerType  = LonghornLabelKeyPrefix + "/instance-manager-type"
	LonghornLabelInstanceManagerImage = LonghornLabelKeyPrefix + "/instance-manager-image"
	LonghornLabelDataEngine           = LonghornLabelKeyPrefix + "/data-engine"
	LonghornLabelEngineImage          = LonghornLabelKeyPrefix + "/engine-image"
	LonghornLabelShareManager         = LonghornLabelKeyPrefix + "/share-manager"
	LonghornLabelBackupVolume         = "backup-volume"
	LonghornLabelBackupTarget         = "backup-target"
	// DefaultBackupTargetName is the BackupTarget created from
	// longhorn-default-resource, the one target of releases before v1.8.0.
	DefaultBackupTargetName        = "default"
	LonghornLabelSnapshotForVolume = LonghornLabelKeyPrefix + "/snapshot-for-volume"
	// LonghornLabelSkipReconcile "true" on a Longhorn object makes every
	// controller leave it alone (for repairs by hand), as Rook's
	// skip-reconcile label does.
	LonghornLabelSkipReconcile = LonghornLabelKeyPrefix + "/skip-reconcile"
	// AnnotationBackupstoreGone marks a BackupVolume or Backup whose
	// deletion must leave the backupstore alone (gone there already, or
	// its backup target is being removed).
	AnnotationBackupstoreGone = LonghornLabelKeyPrefix + "/backupstore-gone"
	// AnnotationBackupTargetURL records on a Backup the backup target URL
	// its backup was started with; the Backup controller cancels the
	// backup when its BackupTarget's URL no longer matches.
	AnnotationBackupTargetURL = LonghornLabelKeyPrefix + "/backup-target-url"

	// Recurring job opt-in labels on volumes: <prefix><job or group>: enabled.
	RecurringJobLabelPrefix       = "recurring-job.longhorn.io/"
	RecurringJobGroupLabelPrefix  = "recurring-job-group.longhorn.io/"
	RecurringJobLabelValueEnabled = "enabled"

	// ControlPlaneName is the value of LonghornLabelManagedBy on objects the manager creates.
	ControlPlaneName = "longhorn-manager"

	// Component values of LonghornLabelComponent.
	LonghornComponentInstanceManager = "instance-manager"
	LonghornComponentManager         = "manager"
	LonghornComponentEngineImage     = "engine-image"
)

// VolumeLabels returns the labels that tie an engine or replica to its volume.
func VolumeLabels(volume string) map[string]string {
	return map[string]string{LonghornLabelVolume: volume}
}

// ReplicaLabels returns the labels of a replica placed on node/disk.
func ReplicaLabels(volume, node, diskUUID string) map[string]string {
	l := VolumeLabels(volume)
	if node != "" {
		l[LonghornLabelNode] = node
	}
	if diskUUID != "" {
		l[LonghornLabelDiskUUID] = diskUUID
	}
	return l
}

// DiskRemovalRefused is Longhorn's message for removing a disk that still
// allows scheduling or holds replicas (webhook node validator); Longhorn's
// tests and UI match "Please disable the disk".
func DiskRemovalRefused(node, path string) string {
	return fmt.Sprintf("Delete Disk on node %s error: Please disable the disk %s and remove all replicas and backing images first", node, path)
}

// EngineImageName returns "ei-" + the first 8 hex digits of the SHA-512 of
// the trimmed image (Longhorn's GetEngineImageChecksumName), the name of
// the EngineImage object of that image.
func EngineImageName(image string) string {
	sum := sha512.Sum512([]byte(strings.TrimSpace(image)))
	return "ei-" + hex.EncodeToString(sum[:])[:8]
}

// AdoptionAnnotation marks a Volume whose existing replica directories are
// being adopted (`longhorn adopt`): while it is set the volume controller
// neither creates nor removes replicas of the volume.
const AdoptionAnnotation = "longhorn.io/adopting"

package webhook

import (
	"fmt"
	"slices"
	"strings"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// oneOf rejects value unless it is one of allowed; the message lists them.
func oneOf[T ~string](field string, value T, allowed ...T) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = fmt.Sprintf("%q", string(a))
	}
	return Invalid(field, "%q is not one of %s", string(value), strings.Join(names, ", "))
}

// ValidateName checks an object name against Longhorn's rule: lowercase
// letters, digits, '-', '_' and '.', starting with a letter or digit, 2 to
// NameMaximumLength characters.
func ValidateName(field, name string) error {
	if len(name) > NameMaximumLength {
		return Invalid(field, "volume name %q is %d characters; the limit is %d", name, len(name), NameMaximumLength)
	}
	if !nameRegexp.MatchString(name) {
		return Invalid(field, "%q must be 2 or more lowercase letters, digits, '-', '_' or '.', starting with a letter or digit", name)
	}
	return nil
}

// validateVolume checks a new volume after mutation.
func validateVolume(v *longhorn.Volume) error {
	if err := ValidateName("metadata.name", v.Name); err != nil {
		return err
	}
	if v.Spec.Image == "" {
		return Invalid("spec.image", "must be set (setting default-engine-image is empty)")
	}
	return validateVolumeSpec(v)
}

// validateVolumeSpec holds the checks shared by create and update.
func validateVolumeSpec(v *longhorn.Volume) error {
	s := &v.Spec
	checks := []func() error{
		func() error { return validateSizeField("spec.size", s.Size) },
		func() error { return validateReplicaCount(s.NumberOfReplicas, s.DataLocality) },
		func() error {
			return oneOf("spec.dataEngine", s.DataEngine, longhorn.DataEngineTypeV1, longhorn.DataEngineTypeV2)
		},
		func() error { return validateFrontend(s) },
		func() error { return validateFromBackup(s) },
		func() error {
			return oneOf("spec.accessMode", s.AccessMode, longhorn.AccessModeReadWriteOnce, longhorn.AccessModeReadWriteOncePod, longhorn.AccessModeReadWriteMany)
		},
		func() error {
			if s.Migratable && s.AccessMode != longhorn.AccessModeReadWriteMany {
				return Invalid("spec.migratable", "migratable volumes need accessMode %q, got %q", longhorn.AccessModeReadWriteMany, s.AccessMode)
			}
			return nil
		},
		func() error { return validateVolumeEnums(s) },
		func() error { return validateSnapshotLimits(s) },
		func() error { return validateSelectors(s) },
		func() error { return validateResourceLimits(v) },
		func() error {
			if s.RebuildConcurrentSyncLimit < 0 || s.RebuildConcurrentSyncLimit > 5 {
				return Invalid("spec.rebuildConcurrentSyncLimit", "%d is outside 0-5 (0 uses the setting)", s.RebuildConcurrentSyncLimit)
			}
			if s.StaleReplicaTimeout < 0 {
				return Invalid("spec.staleReplicaTimeout", "%d minutes must not be negative", s.StaleReplicaTimeout)
			}
			if s.ReplicaRebuildingBandwidthLimit < 0 {
				return Invalid("spec.replicaRebuildingBandwidthLimit", "%d MB/s must not be negative", s.ReplicaRebuildingBandwidthLimit)
			}
			return nil
		},
		func() error {
			if s.DataLayout.Type == longhorn.DataLayoutTypeSharded || s.DataLayout.Mode == longhorn.DataLayoutModeErasureCoding {
				return Invalid("spec.dataLayout", "sharded/erasure-coded layouts are not supported; use type %q", longhorn.DataLayoutTypeReplicated)
			}
			return nil
		},
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// validateFromBackup checks spec.fromBackup, Longhorn's backup URL
// "<target>?backup=<name>&volume=<volume>" with an s3://, nfs:// or vfs://
// target, and that a standby volume has one.
func validateFromBackup(s *longhorn.VolumeSpec) error {
	if s.FromBackup == "" {
		if s.Standby {
			return Invalid("spec.Standby", "a standby (disaster recovery) volume needs spec.fromBackup")
		}
		return nil
	}
	const want = "want <target>?backup=<backup>&volume=<volume>, e.g. s3://bucket@us-east-1/?backup=backup-1&volume=vol1"
	backup, _, target, err := backupstore.DecodeBackupURL(s.FromBackup)
	if err != nil {
		return Invalid("spec.fromBackup", "%v; %s", err, want)
	}
	if backup == "" {
		return Invalid("spec.fromBackup", "%q names no backup; %s", s.FromBackup, want)
	}
	kind, err := backupstore.TargetKind(target)
	if err != nil {
		return Invalid("spec.fromBackup", "%v; %s", err, want)
	}
	switch kind {
	case backupstore.KindS3, backupstore.KindNFS, backupstore.KindVFS:
		return nil
	}
	return Invalid("spec.fromBackup", "target %q: scheme %q is not supported (s3://, nfs:// or vfs://)", target, kind)
}

func validateSizeField(field string, size int64) error {
	if size <= 0 {
		return Invalid(field, "must be greater than 0, got %d", size)
	}
	if size%SizeAlignment != 0 {
		return Invalid(field, "%d is not a multiple of 2 MiB (%d bytes)", size, SizeAlignment)
	}
	return nil
}

// validateReplicaCount: 1-20 replicas; strict-local needs exactly one.
func validateReplicaCount(n int, locality longhorn.DataLocality) error {
	if err := oneOf("spec.dataLocality", locality, longhorn.DataLocalityDisabled, longhorn.DataLocalityBestEffort, longhorn.DataLocalityStrictLocal); err != nil {
		return err
	}
	if n < 1 || n > MaxReplicaCount {
		return Invalid("spec.numberOfReplicas", "%d is outside 1-%d (0 means the default-replica-count setting)", n, MaxReplicaCount)
	}
	if locality == longhorn.DataLocalityStrictLocal && n != 1 {
		return Invalid("spec.numberOfReplicas", "must be 1 with dataLocality %q, got %d", locality, n)
	}
	return nil
}

// validateFrontend: v1 volumes use blockdev, iscsi or nbd; v2 volumes
// blockdev, nvmf or ublk. A standby (DR) volume has no frontend (Longhorn:
// "cannot set frontend for standby volume").
func validateFrontend(s *longhorn.VolumeSpec) error {
	if s.Standby {
		if s.Frontend != "" {
			return Invalid("spec.frontend", "must be empty for a standby volume (spec.Standby), got %q", s.Frontend)
		}
		return nil
	}
	if s.DataEngine == longhorn.DataEngineTypeV2 {
		return oneOf("spec.frontend", s.Frontend, longhorn.VolumeFrontendBlockDev, longhorn.VolumeFrontendNvmf, longhorn.VolumeFrontendUblk)
	}
	return oneOf("spec.frontend", s.Frontend, longhorn.VolumeFrontendBlockDev, longhorn.VolumeFrontendISCSI, longhorn.VolumeFrontendNBD)
}

func validateVolumeEnums(s *longhorn.VolumeSpec) error {
	errs := []error{
		oneOf("spec.replicaAutoBalance", s.ReplicaAutoBalance, longhorn.ReplicaAutoBalanceIgnored, longhorn.ReplicaAutoBalanceDisabled,
			longhorn.ReplicaAutoBalanceLeastEffort, longhorn.ReplicaAutoBalanceBestEffort),
		oneOf("spec.replicaSoftAntiAffinity", s.ReplicaSoftAntiAffinity, longhorn.ReplicaSoftAntiAffinityDefault,
			longhorn.ReplicaSoftAntiAffinityEnabled, longhorn.ReplicaSoftAntiAffinityDisabled),
		oneOf("spec.replicaZoneSoftAntiAffinity", s.ReplicaZoneSoftAntiAffinity, longhorn.ReplicaZoneSoftAntiAffinityDefault,
			longhorn.ReplicaZoneSoftAntiAffinityEnabled, longhorn.ReplicaZoneSoftAntiAffinityDisabled),
		oneOf("spec.replicaDiskSoftAntiAffinity", s.ReplicaDiskSoftAntiAffinity, longhorn.ReplicaDiskSoftAntiAffinityDefault,
			longhorn.ReplicaDiskSoftAntiAffinityEnabled, longhorn.ReplicaDiskSoftAntiAffinityDisabled),
		oneOf("spec.unmapMarkSnapChainRemoved", s.UnmapMarkSnapChainRemoved, longhorn.UnmapMarkSnapChainRemovedIgnored,
			longhorn.UnmapMarkSnapChainRemovedDisabled, longhorn.UnmapMarkSnapChainRemovedEnabled),
		oneOf("spec.snapshotDataIntegrity", s.SnapshotDataIntegrity, longhorn.SnapshotDataIntegrityIgnored, longhorn.SnapshotDataIntegrityDisabled,
			longhorn.SnapshotDataIntegrityEnabled, longhorn.SnapshotDataIntegrityFastCheck),
		oneOf("spec.restoreVolumeRecurringJob", s.RestoreVolumeRecurringJob, longhorn.RestoreVolumeRecurringJobDefault,
			longhorn.RestoreVolumeRecurringJobEnabled, longhorn.RestoreVolumeRecurringJobDisabled),
		oneOf("spec.freezeFilesystemForSnapshot", s.FreezeFilesystemForSnapshot, longhorn.FreezeFilesystemForSnapshotDefault,
			longhorn.FreezeFilesystemForSnapshotEnabled, longhorn.FreezeFilesystemForSnapshotDisabled),
		oneOf("spec.offlineRebuilding", s.OfflineRebuilding, longhorn.VolumeOfflineRebuildingIgnored,
			longhorn.VolumeOfflineRebuildingDisabled, longhorn.VolumeOfflineRebuildingEnabled),
		oneOf("spec.backupCompressionMethod", s.BackupCompressionMethod, "", longhorn.BackupCompressionMethodNone,
			longhorn.BackupCompressionMethodLz4, longhorn.BackupCompressionMethodGzip),
		oneOf("spec.cloneMode", s.CloneMode, longhorn.CloneModeEmpty, longhorn.CloneModeFullCopy, longhorn.CloneModeLinkedClone),
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	switch s.BackupBlockSize {
	case 0, longhorn.BackupBlockSize2Mi, longhorn.BackupBlockSize16Mi:
		return nil
	}
	return Invalid("spec.backupBlockSize", "%d is not one of 2097152, 16777216 (0 uses the setting)", s.BackupBlockSize)
}

// validateSnapshotLimits: snapshotMaxCount 0 (the setting) or 2-250;
// snapshotMaxSize 0 (no limit) or at least twice the volume size.
func validateSnapshotLimits(s *longhorn.VolumeSpec) error {
	if s.SnapshotMaxCount != 0 && (s.SnapshotMaxCount < 2 || s.SnapshotMaxCount > 250) {
		return Invalid("spec.snapshotMaxCount", "%d is outside 2-250 (0 uses the snapshot-max-count setting)", s.SnapshotMaxCount)
	}
	if s.SnapshotMaxSize != 0 && s.SnapshotMaxSize < 2*s.Size {
		return Invalid("spec.snapshotMaxSize", "%d must be 0 or at least twice spec.size (%d)", s.SnapshotMaxSize, 2*s.Size)
	}
	return nil
}

func validateSelectors(s *longhorn.VolumeSpec) error {
	for i, t := range s.NodeSelector {
		if strings.TrimSpace(t) == "" {
			return Invalid(fmt.Sprintf("spec.nodeSelector[%d]", i), "tag must not be empty")
		}
	}
	for i, t := range s.DiskSelector {
		if strings.TrimSpace(t) == "" {
			return Invalid(fmt.Sprintf("spec.diskSelector[%d]", i), "tag must not be empty")
		}
	}
	for i, t := range s.TopologyRequirement {
		if t.Zone == "" && t.Region == "" {
			return Invalid(fmt.Sprintf("spec.topologyRequirement[%d]", i), "needs a zone or a region")
		}
	}
	return nil
}

// validateVolumeUpdate checks a change: the new spec must be valid, the size
// may only grow, and immutable fields stay.
func validateVolumeUpdate(old, v *longhorn.Volume) error {
	if v.DeletionTimestamp != nil {
		return nil // finalizer removal during deletion
	}
	if v.Spec.Size < old.Spec.Size && !v.Status.ExpansionRequired {
		return Invalid("spec.size", "cannot shrink from %d to %d bytes; volumes only grow", old.Spec.Size, v.Spec.Size)
	}
	immutable := []struct {
		field    string
		old, new string
	}{
		{"spec.dataEngine", string(old.Spec.DataEngine), string(v.Spec.DataEngine)},
		{"spec.backingImage", old.Spec.BackingImage, v.Spec.BackingImage},
		{"spec.encrypted", fmt.Sprint(old.Spec.Encrypted), fmt.Sprint(v.Spec.Encrypted)},
		{"spec.topologyRequirement", fmt.Sprint(old.Spec.TopologyRequirement), fmt.Sprint(v.Spec.TopologyRequirement)},
		{"spec.dataLayout", fmt.Sprint(old.Spec.DataLayout), fmt.Sprint(v.Spec.DataLayout)},
		{"spec.fromBackup", old.Spec.FromBackup, v.Spec.FromBackup},
		{"spec.dataSource", string(old.Spec.DataSource), string(v.Spec.DataSource)},
	}
	for _, f := range immutable {
		if f.old != "" && f.old != f.new {
			return Invalid(f.field, "is immutable (was %q, now %q)", f.old, f.new)
		}
	}
	if err := checkLimitChange(old, v); err != nil {
		return err
	}
	if v.Spec.Standby && !old.Spec.Standby {
		return Invalid("spec.Standby", "a normal volume cannot become a standby volume; create one with spec.fromBackup")
	}
	if old.Spec.BackupCompressionMethod != "" && old.Spec.BackupCompressionMethod != v.Spec.BackupCompressionMethod {
		return Invalid("spec.backupCompressionMethod", "cannot change from %q to %q", old.Spec.BackupCompressionMethod, v.Spec.BackupCompressionMethod)
	}
	return validateVolumeSpec(v)
}

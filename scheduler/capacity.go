package scheduler

import (
	"fmt"
	"sort"
)

// DiskCapacity is the input of the capacity formulas, in bytes and percent.
type DiskCapacity struct {
	StorageMaximum   int64
	StorageAvailable int64
	StorageScheduled int64
	StorageReserved  int64
	// OverProvisioningPercentage is storage-over-provisioning-percentage,
	// MinimalAvailablePercentage is storage-minimal-available-percentage.
	OverProvisioningPercentage int64
	MinimalAvailablePercentage int64
}

// capacityOf builds the formula input for a disk under the given settings.
func capacityOf(d Disk, s Settings) DiskCapacity {
	return DiskCapacity{
		StorageMaximum:             d.StorageMaximum,
		StorageAvailable:           d.StorageAvailable,
		StorageScheduled:           d.StorageScheduled,
		StorageReserved:            d.StorageReserved,
		OverProvisioningPercentage: s.OverProvisioningPercentage,
		MinimalAvailablePercentage: s.MinimalAvailablePercentage,
	}
}

// IsSchedulableToDisk applies Longhorn's two capacity conditions to a replica
// of `size` bytes (volume spec.size) that needs `required` bytes of real space
// (volume status.actualSize):
//
//	actual space:  StorageAvailable - required  >  StorageMaximum * minimal% / 100
//	provisioned:   size + StorageScheduled      <= (StorageMaximum - StorageReserved) * overProvisioning% / 100
//
// StorageMaximum and StorageAvailable must be positive. A disk exactly at the
// minimal-available line is not schedulable; a disk exactly at the
// over-provisioning limit is. On failure the string explains which condition
// failed, with the numbers.
func IsSchedulableToDisk(size, required int64, c DiskCapacity) (bool, string) {
	if c.StorageMaximum <= 0 {
		return false, fmt.Sprintf("storageMaximum %d must be greater than 0", c.StorageMaximum)
	}
	if c.StorageAvailable <= 0 {
		return false, fmt.Sprintf("storageAvailable %d must be greater than 0", c.StorageAvailable)
	}
	currentAvailable := c.StorageAvailable - required
	minimalAvailable := percentOf(c.StorageMaximum, c.MinimalAvailablePercentage)
	if currentAvailable <= minimalAvailable {
		return false, fmt.Sprintf("actual space: available %d - required %d = %d is not above the minimal available %d (%d%% of maximum %d)",
			c.StorageAvailable, required, currentAvailable, minimalAvailable, c.MinimalAvailablePercentage, c.StorageMaximum)
	}
	scheduledTotal := size + c.StorageScheduled
	limit := percentOf(c.StorageMaximum-c.StorageReserved, c.OverProvisioningPercentage)
	if scheduledTotal > limit {
		return false, fmt.Sprintf("provisioned space: size %d + scheduled %d = %d exceeds the limit %d (%d%% of maximum %d - reserved %d)",
			size, c.StorageScheduled, scheduledTotal, limit, c.OverProvisioningPercentage, c.StorageMaximum, c.StorageReserved)
	}
	return true, ""
}

// percentOf returns v*pct/100 truncated toward zero, computed in float64 as
// Longhorn does (int64(float64(v) * float64(pct) / 100)).
func percentOf(v, pct int64) int64 {
	return int64(float64(v) * float64(pct) / 100)
}

// IsDiskNotFull reports whether a disk still has more than the minimal
// available space (Longhorn's isDiskNotFull): used to reuse a failed replica
// on a disk that is unschedulable only because of DiskPressure.
func IsDiskNotFull(c DiskCapacity) bool {
	return c.StorageMaximum > 0 && c.StorageAvailable > 0 &&
		c.StorageAvailable > percentOf(c.StorageMaximum, c.MinimalAvailablePercentage)
}

// IsDiskUnderPressure reports whether the unused share of a disk,
// (StorageAvailable - StorageReserved) * 100 / StorageMaximum in whole percent,
// is below 100 - pressurePercentage
// (replica-auto-balance-disk-pressure-percentage).
func IsDiskUnderPressure(pressurePercentage int64, c DiskCapacity) bool {
	var unusedPct int64
	unused := c.StorageAvailable - c.StorageReserved
	if unused > 0 && c.StorageMaximum > 0 {
		unusedPct = unused * 100 / c.StorageMaximum
	}
	return unusedPct < 100-pressurePercentage
}

// IsSupportedVolumeSize reports whether a v1 replica of `size` bytes fits the
// filesystem of the disk: ext4 files are limited to MaxExt4VolumeSize. Other
// filesystems and v2 block disks have no limit here.
func IsSupportedVolumeSize(engine DataEngine, fsType string, size int64) bool {
	if engine == DataEngineV2 {
		return true
	}
	if fsType == "ext4" && size > MaxExt4VolumeSize {
		return false
	}
	return true
}

// IsSelectorsInTags reports whether every selector is one of the tags. An empty
// selector matches anything, except that when allowEmptySelector is false it
// matches only an object without tags (allow-empty-node-selector-volume /
// allow-empty-disk-selector-volume).
func IsSelectorsInTags(tags, selectors []string, allowEmptySelector bool) bool {
	if len(selectors) == 0 {
		return allowEmptySelector || len(tags) == 0
	}
	sorted := append([]string(nil), tags...)
	sort.Strings(sorted)
	for _, s := range selectors {
		i := sort.SearchStrings(sorted, s)
		if i >= len(sorted) || sorted[i] != s {
			return false
		}
	}
	return true
}

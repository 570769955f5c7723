package types

import (
	"fmt"
	"slices"
	"strings"
)

// SettingSupport says whether the product acts on a setting. A setting is
// either implemented, with Reader naming the code that acts on it, or not
// supported yet: its definition, object and default stay (Longhorn's table,
// chart keys and UI), but a value other than the default or one of Inert is
// refused, by the webhook, the REST API and the default-setting ConfigMap
// reader alike, with a message that says it is not supported yet.
//
// types/setting_support_test.go checks the list against the code: every
// setting has an entry, each Reader ("dir/file.go:Func", module-relative)
// names a function that exists and mentions the setting's constant or name,
// and no code outside types/ and hack/ reads a not-supported setting unless
// the entry names that code as its Reader.
type SettingSupport struct {
	// Reader is "dir/file.go:Func" of the code that acts on the setting.
	// Required when implemented; a not-supported setting may name code that
	// reads it for a partial purpose (v2-data-engine gates v2 volumes).
	Reader string
	// NotSupported marks a setting nothing acts on yet.
	NotSupported bool
	// Inert are the values besides the default that a not-supported setting
	// accepts because they ask for nothing (a feature switched off), e.g.
	// upgrade-checker "false".
	Inert []string
}

func reader(r string) SettingSupport { return SettingSupport{Reader: r} }

func notSupported(inert ...string) SettingSupport {
	return SettingSupport{NotSupported: true, Inert: inert}
}

const (
	readVolumeSettings = "controller/volume_snapshot.go:loadVolumeSettings"
	readSystemManaged  = "controller/system_managed.go:systemManagedFrom"
	readVolumeDefaults = "webhook/store.go:VolumeDefaults"
	readReplicaAdd     = "controller/engine_rebuild.go:replicaAddRequest"
)

// settingSupport is the support list, in the order of the definition table.
var settingSupport = map[SettingName]SettingSupport{
	SettingNameAllowRecurringJobWhileVolumeDetached:                     reader("recurringjob/detached.go:allowDetached"),
	SettingNameCreateDefaultDiskLabeledNodes:                            reader("controller/node_controller.go:wantDefaultDisk"),
	SettingNameDefaultDataPath:                                          reader("controller/node_controller.go:defaultDisk"),
	SettingNameDefaultControlPath:                                       notSupported(),
	SettingNameDefaultEngineImage:                                       reader(readVolumeDefaults),
	SettingNameDefaultInstanceManagerImage:                              notSupported(),
	SettingNameDefaultBackingImageManagerImage:                          notSupported(),
	SettingNameSupportBundleManagerImage:                                notSupported(),
	SettingNameReplicaSoftAntiAffinity:                                  reader(readVolumeSettings),
	SettingNameReplicaAutoBalance:                                       reader(readVolumeSettings),
	SettingNameReplicaAutoBalanceDiskPressurePercentage:                 notSupported(),
	SettingNameStorageOverProvisioningPercentage:                        reader(readVolumeSettings),
	SettingNameStorageMinimalAvailablePercentage:                        reader(readVolumeSettings),
	SettingNameStorageReservedPercentageForDefaultDisk:                  reader("controller/node_controller.go:defaultDisk"),
	SettingNameUpgradeChecker:                                           notSupported("false"),
	SettingNameUpgradeResponderURL:                                      notSupported(),
	SettingNameManagerURL:                                               notSupported(),
	SettingNameAllowCollectingLonghornUsageMetrics:                      notSupported("false"),
	SettingNameKubernetesMetricsServerMetricsEnabled:                    notSupported("false"),
	SettingNameCurrentLonghornVersion:                                   reader("controller/setting_controller.go:pinnedValues"),
	SettingNameLatestLonghornVersion:                                    notSupported(),
	SettingNameStableLonghornVersions:                                   notSupported(),
	SettingNameDefaultReplicaCount:                                      reader(readVolumeDefaults),
	SettingNameDefaultDataLocality:                                      reader(readVolumeDefaults),
	SettingNameDefaultLonghornStaticStorageClass:                        reader("api/volume_kube.go:pvCreate"),
	SettingNameTaintToleration:                                          reader(readSystemManaged),
	SettingNameSystemManagedComponentsNodeSelector:                      reader(readSystemManaged),
	SettingNameSystemManagedCSIComponentsResourceLimits:                 notSupported(),
	SettingNameCRDAPIVersion:                                            notSupported(),
	SettingNameAutoSalvage:                                              reader(readVolumeSettings),
	SettingNameAutoDeletePodWhenVolumeDetachedUnexpectedly:              notSupported("false"),
	SettingNameBlacklistForAutoDeletePodWhenVolumeDetachedUnexpectedly:  notSupported(),
	SettingNameRegistrySecret:                                           reader(readSystemManaged),
	SettingNameDisableSchedulingOnCordonedNode:                          reader("controller/node_controller.go:reconcileConditions"),
	SettingNameReplicaZoneSoftAntiAffinity:                              reader(readVolumeSettings),
	SettingNameNodeDownPodDeletionPolicy:                                notSupported(),
	SettingNameNodeDrainPolicy:                                          reader("controller/drain_policy.go:reconcilePDB"),
	SettingNameDetachManuallyAttachedVolumesWhenCordoned:                notSupported(),
	SettingNamePriorityClass:                                            reader(readSystemManaged),
	SettingNameDisableRevisionCounter:                                   reader(readVolumeSettings),
	SettingNameReplicaReplenishmentWaitInterval:                         reader(readVolumeSettings),
	SettingNameConcurrentReplicaRebuildPerNodeLimit:                     reader("controller/engine_rebuild.go:rebuildAllowed"),
	SettingNameReplicaRebuildConcurrentSyncLimit:                        reader(readReplicaAdd),
	SettingNameConcurrentBackingImageReplenishPerNodeLimit:              notSupported(),
	SettingNameConcurrentVolumeBackupRestorePerNodeLimit:                notSupported(),
	SettingNameSystemManagedPodsImagePullPolicy:                         reader(readSystemManaged),
	SettingNameAllowVolumeCreationWithDegradedAvailability:              notSupported(),
	SettingNameAutoCleanupSystemGeneratedSnapshot:                       reader("controller/engine_rebuild.go:cleanupAfterRebuild"),
	SettingNameAutoCleanupRecurringJobBackupSnapshot:                    notSupported("false"),
	SettingNameConcurrentAutomaticEngineUpgradePerNodeLimit:             reader("controller/engine_image_autoupgrade.go:autoUpgrade"),
	SettingNameBackingImageCleanupWaitInterval:                          notSupported(),
	SettingNameBackingImageRecoveryWaitInterval:                         notSupported(),
	SettingNameGuaranteedInstanceManagerCPU:                             reader("controller/instance_manager_controller.go:podCPURequest"),
	SettingNameKubernetesClusterAutoscalerEnabled:                       notSupported(),
	SettingNameOrphanResourceAutoDeletion:                               reader("controller/orphan_controller.go:autoDeleteOrphan"),
	SettingNameOrphanResourceAutoDeletionGracePeriod:                    reader("controller/orphan_controller.go:autoDeleteOrphan"),
	SettingNameStorageNetwork:                                           reader("controller/storage_network.go:reconcileStorageNetwork"),
	SettingNameEndpointNetworkForRWXVolume:                              notSupported(),
	SettingNameFailedBackupTTL:                                          notSupported("0"),
	SettingNameRecurringSuccessfulJobsHistoryLimit:                      notSupported(),
	SettingNameRecurringFailedJobsHistoryLimit:                          notSupported(),
	SettingNameRecurringJobMaxRetention:                                 reader("webhook/store.go:MaxRecurringJobRetention"),
	SettingNameSupportBundleFailedHistoryLimit:                          notSupported(),
	SettingNameSupportBundleNodeCollectionTimeout:                       notSupported(),
	SettingNameDeletingConfirmationFlag:                                 reader("uninstall/uninstall.go:CheckConfirmed"),
	SettingNameEngineReplicaTimeout:                                     reader("controller/engine_controller.go:engineSettings"),
	SettingNameSnapshotDataIntegrity:                                    notSupported("disabled"),
	SettingNameSnapshotDataIntegrityCronjob:                             notSupported(),
	SettingNameSnapshotDataIntegrityImmediateCheckAfterSnapshotCreation: notSupported(),
	SettingNameSnapshotMaxCount:                                         reader("controller/engine_controller.go:engineSettings"),
	SettingNameSnapshotCountWarningThreshold:                            reader(readVolumeSettings),
	SettingNameRestoreVolumeRecurringJobs:                               notSupported(),
	SettingNameRemoveSnapshotsDuringFilesystemTrim:                      notSupported(),
	SettingNameFastReplicaRebuildEnabled:                                reader(readReplicaAdd),
	SettingNameReplicaFileSyncHTTPClientTimeout:                         notSupported(),
	SettingNameLongGRPCTimeout:                                          notSupported(),
	SettingNameBackupCompressionMethod:                                  reader("controller/backup_controller.go:startBackup"),
	SettingNameBackupConcurrentLimit:                                    reader("controller/backup_controller.go:startBackup"),
	SettingNameRestoreConcurrentLimit:                                   reader("controller/engine_restore.go:startRestore"),
	SettingNameLogLevel:                                                 reader("controller/setting_controller.go:syncSetting"),
	SettingNameV1DataEngine:                                             reader("webhook/store.go:DataEngineEnabled"),
	SettingNameV2DataEngine:                                             {Reader: "webhook/store.go:DataEngineEnabled", NotSupported: true},
	SettingNameDataEngineHugepageEnabled:                                notSupported(),
	SettingNameDataEngineMemorySize:                                     notSupported(),
	SettingNameDataEngineIobufLargePoolSize:                             notSupported(),
	SettingNameDataEngineIobufSmallPoolSize:                             notSupported(),
	SettingNameDataEngineCPUMask:                                        notSupported(),
	SettingNameDataEngineNumberOfCPUCores:                               notSupported(),
	SettingNameDataEngineLogLevel:                                       notSupported(),
	SettingNameDataEngineLogFlags:                                       notSupported(),
	SettingNameDataEngineInterruptModeEnabled:                           notSupported(),
	SettingNameDataEngineCPUIsolationEnabled:                            notSupported(),
	SettingNameReplicaDiskSoftAntiAffinity:                              reader(readVolumeSettings),
	SettingNameAllowEmptyNodeSelectorVolume:                             reader(readVolumeSettings),
	SettingNameAllowEmptyDiskSelectorVolume:                             reader(readVolumeSettings),
	SettingNameDisableSnapshotPurge:                                     reader("controller/snapshot_controller.go:removeSnapshot"),
	SettingNameFreezeFilesystemForSnapshot:                              notSupported(),
	SettingNameAutoCleanupWhenDeleteBackup:                              notSupported(),
	SettingNameAutoCleanupSnapshotAfterOnDemandBackupCompleted:          notSupported(),
	SettingNameDefaultMinNumberOfBackingImageCopies:                     notSupported(),
	SettingNameBackupExecutionTimeout:                                   notSupported(),
	SettingNameRWXVolumeFastFailover:                                    notSupported(),
	SettingNameOfflineReplicaRebuilding:                                 notSupported(),
	SettingNameReplicaRebuildingBandwidthLimit:                          reader("controller/engine_rebuild.go:rebuildBandwidthLimit"),
	SettingNameDefaultUblkQueueDepth:                                    notSupported(),
	SettingNameDefaultNVMeTCPNrIOQueues:                                 notSupported(),
	SettingNameDefaultUblkNumberOfQueue:                                 notSupported(),
	SettingNameDefaultBackupBlockSize:                                   reader(readVolumeDefaults),
	SettingNameEngineImagePodLivenessProbePeriod:                        notSupported(),
	SettingNameEngineImagePodLivenessProbeTimeout:                       notSupported(),
	SettingNameEngineImagePodLivenessProbeFailureThreshold:              notSupported(),
	SettingNameInstanceManagerPodLivenessProbeTimeout:                   notSupported(),
	SettingNameLogPath:                                                  notSupported(),
	SettingNameNodeDiskHealthMonitoring:                                 notSupported("false"),
	SettingNameSnapshotHeavyTaskConcurrentLimit:                         notSupported(),
	SettingNameCSIAllowedTopologyKeys:                                   notSupported(),
	SettingNameCSIStorageCapacityTracking:                               notSupported(),
	SettingNameAllowLiveEngineUpgradeOnSameImageCommit:                  notSupported(),
}

// GetSettingSupport returns the support entry of name and whether the
// setting is in the list (every setting of the table is).
func GetSettingSupport(name SettingName) (SettingSupport, bool) {
	s, ok := settingSupport[name]
	return s, ok
}

// SettingSupported reports whether the product acts on setting name.
func SettingSupported(name SettingName) bool {
	s, ok := settingSupport[name]
	return ok && !s.NotSupported
}

// AcceptedValues lists the values a not-supported setting accepts: its
// default (per data engine, the distinct values of the default) and its
// Inert values; nil for a supported setting.
func AcceptedValues(name SettingName) []string {
	s, ok := settingSupport[name]
	def, known := GetSettingDefinition(name)
	if !ok || !known || !s.NotSupported {
		return nil
	}
	var out []string
	if m, err := parseEngineJSON(def.Default); def.DataEngineSpecific && err == nil {
		for _, e := range sortedEngines(m) {
			out = append(out, m[e])
		}
	} else {
		out = append(out, def.Default)
	}
	for _, v := range s.Inert {
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ValidateSettingSupported refuses a value of a not-supported setting that
// asks for something: anything but "" (the default), the default itself
// (for a data-engine-specific setting, each engine's value is checked
// against that engine's default) or an Inert value. Call it after
// ValidateSetting. Error: *SettingValueError whose reason says the setting
// is not supported yet and lists the accepted values.
func ValidateSettingSupported(name SettingName, value string) error {
	s, ok := settingSupport[name]
	def, known := GetSettingDefinition(name)
	if !ok || !known || !s.NotSupported || value == "" {
		return nil
	}
	accepted := func(engineDefault, v string) bool {
		return v == engineDefault || slices.Contains(s.Inert, v)
	}
	good := accepted(def.Default, value)
	if def.DataEngineSpecific && !good {
		good = true
		for _, e := range def.DataEngines() {
			v, err := SettingValueForDataEngine(name, value, e)
			d, derr := SettingValueForDataEngine(name, "", e)
			if err != nil || derr != nil || !accepted(d, v) {
				good = false
			}
		}
	}
	if good {
		return nil
	}
	quoted := make([]string, 0, 4)
	for _, v := range AcceptedValues(name) {
		quoted = append(quoted, fmt.Sprintf("%q", v))
	}
	return &SettingValueError{Name: name, Value: value,
		Reason: fmt.Sprintf("setting %s is not supported yet; it only accepts %s", name, strings.Join(quoted, " or "))}
}

package helm

import (
	"testing"

	"github.com/longhorn-go/longhorn/types"
)

// settingKey is one defaultSettings key of Longhorn's chart values: the
// setting it sets, a valid value that differs from the default where that
// is safe on the test cluster (for a setting not supported yet, an inert
// value or its default: other values fail the install), and the value the Setting object must hold
// (the manager stores a plain value of a per-data-engine setting as the
// JSON object of every engine the setting covers).
type settingKey struct {
	Key, Setting string
	Value        any
	Want         string
}

// v2 is a per-data-engine value for the v2 engine only.
func v2(v any) map[string]any { return map[string]any{"v2": v} }

// longhornSettingKeys is the test's own copy of the defaultSettings keys
// Longhorn's chart (1.12) documents, written from its values.yaml and
// settings reference (not from this chart), with Longhorn's spellings:
// rebuildConcurrentSyncLimit, dataEngineCPUIsolationEnabled,
// dataEngineNumberOfCPUCores, dataEngineCPUMask, guaranteedInstanceManagerCPU,
// longGRPCTimeOut, upgradeResponderURL, failedBackupTTL, ...
var longhornSettingKeys = []settingKey{
	{"allowRecurringJobWhileVolumeDetached", "allow-recurring-job-while-volume-detached", false, "false"},
	{"createDefaultDiskLabeledNodes", "create-default-disk-labeled-nodes", true, "true"},
	{"defaultDataPath", "default-data-path", "/var/lib/longhorn-data", "/var/lib/longhorn-data"},
	{"defaultControlPath", "default-control-path", "/var/lib/longhorn", "/var/lib/longhorn"},
	{"replicaSoftAntiAffinity", "replica-soft-anti-affinity", true, "true"},
	{"replicaAutoBalance", "replica-auto-balance", "best-effort", "best-effort"},
	{"replicaAutoBalanceDiskPressurePercentage", "replica-auto-balance-disk-pressure-percentage", 90, "90"},
	{"storageOverProvisioningPercentage", "storage-over-provisioning-percentage", 150, "150"},
	{"storageMinimalAvailablePercentage", "storage-minimal-available-percentage", 10, "10"},
	{"storageReservedPercentageForDefaultDisk", "storage-reserved-percentage-for-default-disk", 20, "20"},
	{"upgradeChecker", "upgrade-checker", false, "false"},
	{"upgradeResponderURL", "upgrade-responder-url", "https://longhorn-upgrade-responder.rancher.io/v1/checkupgrade", "https://longhorn-upgrade-responder.rancher.io/v1/checkupgrade"},
	{"managerUrl", "manager-url", "", ""},
	{"allowCollectingLonghornUsageMetrics", "allow-collecting-longhorn-usage-metrics", false, "false"},
	{"kubernetesMetricsServerMetricsEnabled", "kubernetes-metrics-server-metrics-enabled", false, "false"},
	{"defaultReplicaCount", "default-replica-count", 2, `{"v1":"2","v2":"2"}`},
	{"defaultDataLocality", "default-data-locality", "best-effort", "best-effort"},
	{"defaultLonghornStaticStorageClass", "default-longhorn-static-storage-class", "longhorn-static-test", "longhorn-static-test"},
	{"taintToleration", "taint-toleration", "dedicated=storage:NoSchedule", "dedicated=storage:NoSchedule"},
	{"systemManagedComponentsNodeSelector", "system-managed-components-node-selector", "kubernetes.io/os:linux", "kubernetes.io/os:linux"},
	{"systemManagedCSIComponentsResourceLimits", "system-managed-csi-components-resource-limits", "", ""},
	{"autoSalvage", "auto-salvage", false, "false"},
	{"autoDeletePodWhenVolumeDetachedUnexpectedly", "auto-delete-pod-when-volume-detached-unexpectedly", false, "false"},
	{"blacklistForAutoDeletePodWhenVolumeDetachedUnexpectedly", "blacklist-for-auto-delete-pod-when-volume-detached-unexpectedly", "", ""},
	{"disableSchedulingOnCordonedNode", "disable-scheduling-on-cordoned-node", false, "false"},
	{"replicaZoneSoftAntiAffinity", "replica-zone-soft-anti-affinity", false, "false"},
	{"nodeDownPodDeletionPolicy", "node-down-pod-deletion-policy", "do-nothing", "do-nothing"},
	{"nodeDrainPolicy", "node-drain-policy", "always-allow", "always-allow"},
	{"detachManuallyAttachedVolumesWhenCordoned", "detach-manually-attached-volumes-when-cordoned", false, "false"},
	{"priorityClass", "priority-class", "longhorn-critical", "longhorn-critical"},
	{"disableRevisionCounter", "disable-revision-counter", map[string]any{"v1": false}, `{"v1":"false"}`},
	{"replicaReplenishmentWaitInterval", "replica-replenishment-wait-interval", 300, "300"},
	{"concurrentReplicaRebuildPerNodeLimit", "concurrent-replica-rebuild-per-node-limit", 3, "3"},
	{"rebuildConcurrentSyncLimit", "replica-rebuild-concurrent-sync-limit", 3, `{"v1":"3"}`},
	{"concurrentBackingImageReplenishPerNodeLimit", "concurrent-backing-image-replenish-per-node-limit", 5, "5"},
	{"concurrentVolumeBackupRestorePerNodeLimit", "concurrent-volume-backup-restore-per-node-limit", 5, "5"},
	{"systemManagedPodsImagePullPolicy", "system-managed-pods-image-pull-policy", "never", "never"},
	{"allowVolumeCreationWithDegradedAvailability", "allow-volume-creation-with-degraded-availability", true, "true"},
	{"autoCleanupSystemGeneratedSnapshot", "auto-cleanup-system-generated-snapshot", false, "false"},
	{"autoCleanupRecurringJobBackupSnapshot", "auto-cleanup-recurring-job-backup-snapshot", false, "false"},
	{"concurrentAutomaticEngineUpgradePerNodeLimit", "concurrent-automatic-engine-upgrade-per-node-limit", 0, "0"},
	{"backingImageCleanupWaitInterval", "backing-image-cleanup-wait-interval", 60, "60"},
	{"backingImageRecoveryWaitInterval", "backing-image-recovery-wait-interval", 300, "300"},
	{"guaranteedInstanceManagerCPU", "guaranteed-instance-manager-cpu", 10, `{"v1":"10","v2":"10"}`},
	{"kubernetesClusterAutoscalerEnabled", "kubernetes-cluster-autoscaler-enabled", false, "false"},
	{"orphanResourceAutoDeletion", "orphan-resource-auto-deletion", "", ""},
	{"orphanResourceAutoDeletionGracePeriod", "orphan-resource-auto-deletion-grace-period", 300, "300"},
	{"storageNetwork", "storage-network", "kube-system/storage-net", "kube-system/storage-net"},
	{"endpointNetworkForRWXVolume", "endpoint-network-for-rwx-volume", "", ""},
	{"failedBackupTTL", "failed-backup-ttl", 0, "0"},
	{"recurringSuccessfulJobsHistoryLimit", "recurring-successful-jobs-history-limit", 1, "1"},
	{"recurringFailedJobsHistoryLimit", "recurring-failed-jobs-history-limit", 1, "1"},
	{"recurringJobMaxRetention", "recurring-job-max-retention", 50, "50"},
	{"supportBundleFailedHistoryLimit", "support-bundle-failed-history-limit", 1, "1"},
	{"supportBundleNodeCollectionTimeout", "support-bundle-node-collection-timeout", 30, "30"},
	{"deletingConfirmationFlag", "deleting-confirmation-flag", false, "false"},
	{"engineReplicaTimeout", "engine-replica-timeout", 10, `{"v1":"10","v2":"10"}`},
	{"snapshotDataIntegrity", "snapshot-data-integrity", "disabled", `{"v1":"disabled","v2":"disabled"}`},
	{"snapshotDataIntegrityCronjob", "snapshot-data-integrity-cronjob", "0 0 */7 * *", `{"v1":"0 0 */7 * *","v2":"0 0 */7 * *"}`},
	{"snapshotDataIntegrityImmediateCheckAfterSnapshotCreation", "snapshot-data-integrity-immediate-check-after-snapshot-creation", false, `{"v1":"false","v2":"false"}`},
	{"snapshotMaxCount", "snapshot-max-count", 200, "200"},
	{"snapshotCountWarningThreshold", "snapshot-count-warning-threshold", 80, "80"},
	{"restoreVolumeRecurringJobs", "restore-volume-recurring-jobs", false, "false"},
	{"removeSnapshotsDuringFilesystemTrim", "remove-snapshots-during-filesystem-trim", false, "false"},
	{"fastReplicaRebuildEnabled", "fast-replica-rebuild-enabled", false, `{"v1":"false","v2":"false"}`},
	{"replicaFileSyncHttpClientTimeout", "replica-file-sync-http-client-timeout", 30, "30"},
	{"longGRPCTimeOut", "long-grpc-timeout", 86400, "86400"},
	{"backupCompressionMethod", "backup-compression-method", "gzip", "gzip"},
	{"backupConcurrentLimit", "backup-concurrent-limit", 4, "4"},
	{"restoreConcurrentLimit", "restore-concurrent-limit", 2, "2"},
	{"logLevel", "log-level", "Warn", "Warn"},
	// v1-data-engine stays true: turning off the only data engine this
	// product has would be refused once volumes exist; it is set anyway.
	{"v1DataEngine", "v1-data-engine", true, "true"},
	{"v2DataEngine", "v2-data-engine", false, "false"},
	{"dataEngineHugepageEnabled", "data-engine-hugepage-enabled", v2(true), `{"v2":"true"}`},
	{"dataEngineMemorySize", "data-engine-memory-size", v2(2048), `{"v2":"2048"}`},
	{"dataEngineIobufLargePoolSize", "data-engine-iobuf-large-pool-size", v2(1024), `{"v2":"1024"}`},
	{"dataEngineIobufSmallPoolSize", "data-engine-iobuf-small-pool-size", v2(8192), `{"v2":"8192"}`},
	{"dataEngineCPUMask", "data-engine-cpu-mask", v2("0x3"), `{"v2":"0x3"}`},
	{"dataEngineNumberOfCPUCores", "data-engine-number-of-cpu-cores", v2(0), `{"v2":"0"}`},
	{"dataEngineLogLevel", "data-engine-log-level", v2("Notice"), `{"v2":"Notice"}`},
	{"dataEngineLogFlags", "data-engine-log-flags", v2(""), `{"v2":""}`},
	{"dataEngineInterruptModeEnabled", "data-engine-interrupt-mode-enabled", v2(false), `{"v2":"false"}`},
	{"dataEngineCPUIsolationEnabled", "data-engine-cpu-isolation-enabled", v2(true), `{"v2":"true"}`},
	{"replicaDiskSoftAntiAffinity", "replica-disk-soft-anti-affinity", false, "false"},
	{"allowEmptyNodeSelectorVolume", "allow-empty-node-selector-volume", false, "false"},
	{"allowEmptyDiskSelectorVolume", "allow-empty-disk-selector-volume", false, "false"},
	{"disableSnapshotPurge", "disable-snapshot-purge", false, "false"},
	{"freezeFilesystemForSnapshot", "freeze-filesystem-for-snapshot", map[string]any{"v1": false}, `{"v1":"false"}`},
	{"autoCleanupSnapshotWhenDeleteBackup", "auto-cleanup-when-delete-backup", false, "false"},
	{"autoCleanupSnapshotAfterOnDemandBackupCompleted", "auto-cleanup-snapshot-after-on-demand-backup-completed", false, "false"},
	{"defaultMinNumberOfBackingImageCopies", "default-min-number-of-backing-image-copies", 3, "3"},
	{"backupExecutionTimeout", "backup-execution-timeout", 1, "1"},
	{"rwxVolumeFastFailover", "rwx-volume-fast-failover", false, "false"},
	{"offlineReplicaRebuilding", "offline-replica-rebuilding", false, "false"},
	{"replicaRebuildingBandwidthLimit", "replica-rebuilding-bandwidth-limit", v2(0), `{"v2":"0"}`},
	{"defaultUblkQueueDepth", "default-ublk-queue-depth", v2(128), `{"v2":"128"}`},
	{"defaultNvmeTcpNrIoQueues", "default-nvme-tcp-nr-io-queues", v2(0), `{"v2":"0"}`},
	{"defaultUblkNumberOfQueue", "default-ublk-number-of-queue", v2(1), `{"v2":"1"}`},
	{"defaultBackupBlockSize", "default-backup-block-size", 16, "16"},
	{"engineImagePodLivenessProbePeriod", "engine-image-pod-liveness-probe-period", 5, "5"},
	{"engineImagePodLivenessProbeTimeout", "engine-image-pod-liveness-probe-timeout", 4, "4"},
	{"engineImagePodLivenessProbeFailureThreshold", "engine-image-pod-liveness-probe-failure-threshold", 3, "3"},
	{"instanceManagerPodLivenessProbeTimeout", "instance-manager-pod-liveness-probe-timeout", 10, "10"},
	{"logPath", "log-path", "/var/lib/longhorn/logs", "/var/lib/longhorn/logs"},
	{"nodeDiskHealthMonitoring", "node-disk-health-monitoring", false, "false"},
	{"snapshotHeavyTaskConcurrentLimit", "snapshot-heavy-task-concurrent-limit", 5, "5"},
	{"csiAllowedTopologyKeys", "csi-allowed-topology-keys", "", ""},
	{"csiStorageCapacityTracking", "csi-storage-capacity-tracking", false, "false"},
	{"allowLiveEngineUpgradeOnSameImageCommit", "allow-live-engine-upgrade-on-same-image-commit", false, "false"},
}

// The key list holds valid values for real settings, once each, and covers
// every setting a user can set through defaultSettings (so "every key set"
// means every key).
func TestSettingKeyList(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range longhornSettingKeys {
		if seen[k.Setting] {
			t.Errorf("%s listed twice", k.Setting)
		}
		seen[k.Setting] = true
		if err := types.ValidateSetting(k.Setting, k.Want); err != nil {
			t.Errorf("%s: %v", k.Key, err)
		}
		if err := types.ValidateSettingSupported(types.SettingName(k.Setting), k.Want); err != nil {
			t.Errorf("%s: %v (a setting not supported yet takes its default or an inert value here; hack/chart tests the refusal)", k.Key, err)
		}
	}
	for _, d := range types.SettingDefinitions() {
		settable := !d.ReadOnly && d.Type != types.SettingTypeDeprecated && d.Category != types.SettingCategorySystemInfo
		if settable && !seen[string(d.Name)] && d.Name != types.SettingNameRegistrySecret {
			t.Errorf("setting %s has no defaultSettings key in the list", d.Name)
		}
	}
}

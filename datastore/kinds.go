package datastore

import longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"

// Short aliases for the generic store parameters.
type (
	volumeT                 = longhorn.Volume
	engineT                 = longhorn.Engine
	replicaT                = longhorn.Replica
	nodeT                   = longhorn.Node
	instanceManagerT        = longhorn.InstanceManager
	settingT                = longhorn.Setting
	engineImageT            = longhorn.EngineImage
	snapshotT               = longhorn.Snapshot
	backupT                 = longhorn.Backup
	backupTargetT           = longhorn.BackupTarget
	backupVolumeT           = longhorn.BackupVolume
	backupBackingImageT     = longhorn.BackupBackingImage
	recurringJobT           = longhorn.RecurringJob
	volumeAttachmentT       = longhorn.VolumeAttachment
	orphanT                 = longhorn.Orphan
	shareManagerT           = longhorn.ShareManager
	systemBackupT           = longhorn.SystemBackup
	systemRestoreT          = longhorn.SystemRestore
	backingImageT           = longhorn.BackingImage
	backingImageManagerT    = longhorn.BackingImageManager
	backingImageDataSourceT = longhorn.BackingImageDataSource
	supportBundleT          = longhorn.SupportBundle
)

// initStores creates one store per kind over the factory's informers.
func (ds *DataStore) initStores() {
	lh := ds.factory.Longhorn().V1beta2()
	c := ds.client.LonghornV1beta2()
	ns := ds.namespace
	ds.volumes = newStore[volumeT](ns, longhorn.Resource("volumes"), lh.Volumes().Informer(), c.Volumes(ns))
	ds.engines = newStore[engineT](ns, longhorn.Resource("engines"), lh.Engines().Informer(), c.Engines(ns))
	ds.replicas = newStore[replicaT](ns, longhorn.Resource("replicas"), lh.Replicas().Informer(), c.Replicas(ns))
	ds.nodes = newStore[nodeT](ns, longhorn.Resource("nodes"), lh.Nodes().Informer(), c.Nodes(ns))
	ds.instanceManagers = newStore[instanceManagerT](ns, longhorn.Resource("instancemanagers"), lh.InstanceManagers().Informer(), c.InstanceManagers(ns))
	ds.settings = newStore[settingT](ns, longhorn.Resource("settings"), lh.Settings().Informer(), c.Settings(ns))
	ds.engineImages = newStore[engineImageT](ns, longhorn.Resource("engineimages"), lh.EngineImages().Informer(), c.EngineImages(ns))
	ds.snapshots = newStore[snapshotT](ns, longhorn.Resource("snapshots"), lh.Snapshots().Informer(), c.Snapshots(ns))
	ds.backups = newStore[backupT](ns, longhorn.Resource("backups"), lh.Backups().Informer(), c.Backups(ns))
	ds.backupTargets = newStore[backupTargetT](ns, longhorn.Resource("backuptargets"), lh.BackupTargets().Informer(), c.BackupTargets(ns))
	ds.backupVolumes = newStore[backupVolumeT](ns, longhorn.Resource("backupvolumes"), lh.BackupVolumes().Informer(), c.BackupVolumes(ns))
	ds.backupBackingImages = newStore[backupBackingImageT](ns, longhorn.Resource("backupbackingimages"), lh.BackupBackingImages().Informer(), c.BackupBackingImages(ns))
	ds.recurringJobs = newStore[recurringJobT](ns, longhorn.Resource("recurringjobs"), lh.RecurringJobs().Informer(), c.RecurringJobs(ns))
	ds.volumeAttachments = newStore[volumeAttachmentT](ns, longhorn.Resource("volumeattachments"), lh.VolumeAttachments().Informer(), c.VolumeAttachments(ns))
	ds.orphans = newStore[orphanT](ns, longhorn.Resource("orphans"), lh.Orphans().Informer(), c.Orphans(ns))
	ds.shareManagers = newStore[shareManagerT](ns, longhorn.Resource("sharemanagers"), lh.ShareManagers().Informer(), c.ShareManagers(ns))
	ds.systemBackups = newStore[systemBackupT](ns, longhorn.Resource("systembackups"), lh.SystemBackups().Informer(), c.SystemBackups(ns))
	ds.systemRestores = newStore[systemRestoreT](ns, longhorn.Resource("systemrestores"), lh.SystemRestores().Informer(), c.SystemRestores(ns))
	ds.backingImages = newStore[backingImageT](ns, longhorn.Resource("backingimages"), lh.BackingImages().Informer(), c.BackingImages(ns))
	ds.backingImageManagers = newStore[backingImageManagerT](ns, longhorn.Resource("backingimagemanagers"), lh.BackingImageManagers().Informer(), c.BackingImageManagers(ns))
	ds.backingImageDataSources = newStore[backingImageDataSourceT](ns, longhorn.Resource("backingimagedatasources"), lh.BackingImageDataSources().Informer(), c.BackingImageDataSources(ns))
	ds.supportBundles = newStore[supportBundleT](ns, longhorn.Resource("supportbundles"), lh.SupportBundles().Informer(), c.SupportBundles(ns))
}

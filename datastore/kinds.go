package datastore

import longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"

// Short aliases for the generic store parameters.
type (
	volumeT           = longhorn.Volume
	engineT           = longhorn.Engine
	replicaT          = longhorn.Replica
	nodeT             = longhorn.Node
	instanceManagerT  = longhorn.InstanceManager
	settingT          = longhorn.Setting
	engineImageT      = longhorn.EngineImage
	backupTargetT     = longhorn.BackupTarget
	volumeAttachmentT = longhorn.VolumeAttachment
	recurringJobT     = longhorn.RecurringJob
	snapshotT         = longhorn.Snapshot
	backupT           = longhorn.Backup
	backupVolumeT     = longhorn.BackupVolume
	orphanT           = longhorn.Orphan
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
	ds.backupTargets = newStore[backupTargetT](ns, longhorn.Resource("backuptargets"), lh.BackupTargets().Informer(), c.BackupTargets(ns))
	ds.volumeAttachments = newStore[volumeAttachmentT](ns, longhorn.Resource("volumeattachments"), lh.VolumeAttachments().Informer(), c.VolumeAttachments(ns))
	ds.recurringJobs = newStore[recurringJobT](ns, longhorn.Resource("recurringjobs"), lh.RecurringJobs().Informer(), c.RecurringJobs(ns))
	ds.snapshots = newStore[snapshotT](ns, longhorn.Resource("snapshots"), lh.Snapshots().Informer(), c.Snapshots(ns))
	ds.backups = newStore[backupT](ns, longhorn.Resource("backups"), lh.Backups().Informer(), c.Backups(ns))
	ds.backupVolumes = newStore[backupVolumeT](ns, longhorn.Resource("backupvolumes"), lh.BackupVolumes().Informer(), c.BackupVolumes(ns))
	ds.orphans = newStore[orphanT](ns, longhorn.Resource("orphans"), lh.Orphans().Informer(), c.Orphans(ns))
}

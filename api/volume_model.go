package api

import (
	"sort"
	"strconv"
	"strings"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Volume is a volume resource (Longhorn's api/model.go Volume): spec and
// status flattened, conditions by type, the volume's replicas and engines
// ("controllers"), the progress of backups, restores, purges and rebuilds,
// and its attachment tickets.
type Volume struct {
	Resource
	Name                            string                                 `json:"name"`
	Size                            string                                 `json:"size"`
	Frontend                        longhorn.VolumeFrontend                `json:"frontend"`
	DisableFrontend                 bool                                   `json:"disableFrontend"`
	FromBackup                      string                                 `json:"fromBackup"`
	RestoreVolumeRecurringJob       longhorn.RestoreVolumeRecurringJobType `json:"restoreVolumeRecurringJob"`
	DataSource                      longhorn.VolumeDataSource              `json:"dataSource"`
	DataLocality                    longhorn.DataLocality                  `json:"dataLocality"`
	StaleReplicaTimeout             int                                    `json:"staleReplicaTimeout"`
	State                           longhorn.VolumeState                   `json:"state"`
	Robustness                      longhorn.VolumeRobustness              `json:"robustness"`
	Image                           string                                 `json:"image"`
	CurrentImage                    string                                 `json:"currentImage"`
	BackingImage                    string                                 `json:"backingImage"`
	Created                         string                                 `json:"created"`
	LastBackup                      string                                 `json:"lastBackup"`
	LastBackupAt                    string                                 `json:"lastBackupAt"`
	LastAttachedBy                  string                                 `json:"lastAttachedBy"`
	Standby                         bool                                   `json:"standby"`
	RestoreRequired                 bool                                   `json:"restoreRequired"`
	RestoreInitiated                bool                                   `json:"restoreInitiated"`
	RevisionCounterDisabled         bool                                   `json:"revisionCounterDisabled"`
	SnapshotDataIntegrity           longhorn.SnapshotDataIntegrity         `json:"snapshotDataIntegrity"`
	UnmapMarkSnapChainRemoved       longhorn.UnmapMarkSnapChainRemoved     `json:"unmapMarkSnapChainRemoved"`
	BackupCompressionMethod         longhorn.BackupCompressionMethod       `json:"backupCompressionMethod"`
	BackupBlockSize                 string                                 `json:"backupBlockSize"`
	ReplicaSoftAntiAffinity         longhorn.ReplicaSoftAntiAffinity       `json:"replicaSoftAntiAffinity"`
	ReplicaZoneSoftAntiAffinity     longhorn.ReplicaZoneSoftAntiAffinity   `json:"replicaZoneSoftAntiAffinity"`
	ReplicaDiskSoftAntiAffinity     longhorn.ReplicaDiskSoftAntiAffinity   `json:"replicaDiskSoftAntiAffinity"`
	DataEngine                      longhorn.DataEngineType                `json:"dataEngine"`
	OfflineRebuilding               longhorn.VolumeOfflineRebuilding       `json:"offlineRebuilding"`
	SnapshotMaxCount                int                                    `json:"snapshotMaxCount"`
	SnapshotMaxSize                 string                                 `json:"snapshotMaxSize"`
	ReplicaRebuildingBandwidthLimit int64                                  `json:"replicaRebuildingBandwidthLimit"`
	RebuildConcurrentSyncLimit      int                                    `json:"rebuildConcurrentSyncLimit"`
	FreezeFilesystemForSnapshot     longhorn.FreezeFilesystemForSnapshot   `json:"freezeFilesystemForSnapshot"`
	BackupTargetName                string                                 `json:"backupTargetName"`
	UblkQueueDepth                  int                                    `json:"ublkQueueDepth"`
	UblkNumberOfQueue               int                                    `json:"ublkNumberOfQueue"`
	DiskSelector                    []string                               `json:"diskSelector"`
	NodeSelector                    []string                               `json:"nodeSelector"`
	RecurringJobSelector            []RecurringJobRef                      `json:"recurringJobSelector"`
	NumberOfReplicas                int                                    `json:"numberOfReplicas"`
	ReplicaAutoBalance              longhorn.ReplicaAutoBalance            `json:"replicaAutoBalance"`
	Conditions                      map[string]longhorn.Condition          `json:"conditions"`
	KubernetesStatus                longhorn.KubernetesStatus              `json:"kubernetesStatus"`
	CloneStatus                     longhorn.VolumeCloneStatus             `json:"cloneStatus"`
	Ready                           bool                                   `json:"ready"`
	AccessMode                      longhorn.AccessMode                    `json:"accessMode"`
	ShareEndpoint                   string                                 `json:"shareEndpoint"`
	ShareState                      longhorn.ShareManagerState             `json:"shareState"`
	Migratable                      bool                                   `json:"migratable"`
	Encrypted                       bool                                   `json:"encrypted"`
	CurrentNodeID                   string                                 `json:"currentNodeID"`
	ActualSize                      int64                                  `json:"actualSize"`
	ExpansionRequired               bool                                   `json:"expansionRequired"`
	Replicas                        []Replica                              `json:"replicas"`
	Controllers                     []Controller                           `json:"controllers"`
	BackupStatus                    []BackupStatus                         `json:"backupStatus"`
	RestoreStatus                   []RestoreStatus                        `json:"restoreStatus"`
	PurgeStatus                     []PurgeStatus                          `json:"purgeStatus"`
	RebuildStatus                   []RebuildStatus                        `json:"rebuildStatus"`
	VolumeAttachment                VolumeAttachment                       `json:"volumeAttachment"`
}

// Instance is what replicas and controllers share in Longhorn's API.
type Instance struct {
	Name                string                  `json:"name"`
	NodeID              string                  `json:"hostId"`
	Address             string                  `json:"address"`
	Running             bool                    `json:"running"`
	Image               string                  `json:"image"`
	CurrentImage        string                  `json:"currentImage"`
	InstanceManagerName string                  `json:"instanceManagerName"`
	DataEngine          longhorn.DataEngineType `json:"dataEngine"`
}

// Replica is one replica of a volume.
type Replica struct {
	Instance
	DiskID   string `json:"diskID"`
	DiskPath string `json:"diskPath"`
	DataPath string `json:"dataPath"`
	Mode     string `json:"mode"`
	FailedAt string `json:"failedAt"`
}

// Controller is one engine of a volume.
type Controller struct {
	Instance
	Endpoint                         string `json:"endpoint"`
	Size                             string `json:"size"`
	ActualSize                       string `json:"actualSize"`
	IsExpanding                      bool   `json:"isExpanding"`
	LastExpansionError               string `json:"lastExpansionError"`
	LastExpansionFailedAt            string `json:"lastExpansionFailedAt"`
	LastRestoredBackup               string `json:"lastRestoredBackup"`
	RequestedBackupRestore           string `json:"requestedBackupRestore"`
	UnmapMarkSnapChainRemovedEnabled bool   `json:"unmapMarkSnapChainRemovedEnabled"`
}

// BackupStatus is the progress of one backup of the volume.
type BackupStatus struct {
	Resource
	Snapshot  string `json:"snapshot"`
	Progress  int    `json:"progress"`
	BackupURL string `json:"backupURL"`
	Error     string `json:"error"`
	State     string `json:"state"`
	Replica   string `json:"replica"`
	Size      string `json:"size"`
}

// RestoreStatus is the progress of a restore into one replica.
type RestoreStatus struct {
	Resource
	Replica      string `json:"replica"`
	IsRestoring  bool   `json:"isRestoring"`
	LastRestored string `json:"lastRestored"`
	Progress     int    `json:"progress"`
	Error        string `json:"error"`
	Filename     string `json:"filename"`
	State        string `json:"state"`
	BackupURL    string `json:"backupURL"`
}

// PurgeStatus is the progress of a snapshot purge in one replica.
type PurgeStatus struct {
	Resource
	Error     string `json:"error"`
	IsPurging bool   `json:"isPurging"`
	Progress  int    `json:"progress"`
	Replica   string `json:"replica"`
	State     string `json:"state"`
}

// RebuildStatus is the progress of rebuilding one replica, from which.
type RebuildStatus struct {
	Resource
	Error        string `json:"error"`
	IsRebuilding bool   `json:"isRebuilding"`
	Progress     int    `json:"progress"`
	Replica      string `json:"replica"`
	State        string `json:"state"`
	FromReplica  string `json:"fromReplica"`
}

// volumeObjects is what a volume resource is made of, read from the caches.
type volumeObjects struct {
	vol      *longhorn.Volume
	engines  []*longhorn.Engine
	replicas []*longhorn.Replica
	// backups are the volume's Backup objects (label backup-volume).
	backups []*longhorn.Backup
	va      *longhorn.VolumeAttachment
	// backupBlockSize is the block size in bytes used when the volume's
	// spec leaves it 0 (setting default-backup-block-size).
	backupBlockSize int64
}

// volume builds the resource of a volume from its objects.
func (u urls) volume(o volumeObjects) Volume {
	v := o.vol
	s, st := v.Spec, v.Status
	out := Volume{Resource: u.newResource("volume", "volumes", v.Name, volumeActions(v)...),
		Name: v.Name, Size: formatInt(s.Size), Frontend: s.Frontend, DisableFrontend: s.DisableFrontend,
		FromBackup: s.FromBackup, RestoreVolumeRecurringJob: s.RestoreVolumeRecurringJob, DataSource: s.DataSource,
		DataLocality: s.DataLocality, StaleReplicaTimeout: s.StaleReplicaTimeout, State: st.State, Robustness: st.Robustness,
		Image: s.Image, CurrentImage: st.CurrentImage, BackingImage: s.BackingImage, Created: goTime(v.CreationTimestamp.Time),
		LastBackup: st.LastBackup, LastBackupAt: st.LastBackupAt, LastAttachedBy: s.LastAttachedBy, Standby: s.Standby,
		RestoreRequired: st.RestoreRequired, RestoreInitiated: st.RestoreInitiated, RevisionCounterDisabled: s.RevisionCounterDisabled,
		SnapshotDataIntegrity: s.SnapshotDataIntegrity, UnmapMarkSnapChainRemoved: s.UnmapMarkSnapChainRemoved,
		BackupCompressionMethod: s.BackupCompressionMethod, BackupBlockSize: formatInt(o.effectiveBackupBlockSize()),
		ReplicaSoftAntiAffinity: s.ReplicaSoftAntiAffinity, ReplicaZoneSoftAntiAffinity: s.ReplicaZoneSoftAntiAffinity,
		ReplicaDiskSoftAntiAffinity: s.ReplicaDiskSoftAntiAffinity, DataEngine: s.DataEngine, OfflineRebuilding: s.OfflineRebuilding,
		SnapshotMaxCount: s.SnapshotMaxCount, SnapshotMaxSize: formatInt(s.SnapshotMaxSize),
		ReplicaRebuildingBandwidthLimit: s.ReplicaRebuildingBandwidthLimit, RebuildConcurrentSyncLimit: s.RebuildConcurrentSyncLimit,
		FreezeFilesystemForSnapshot: s.FreezeFilesystemForSnapshot, BackupTargetName: s.BackupTargetName,
		UblkQueueDepth: s.UblkQueueDepth, UblkNumberOfQueue: s.UblkNumberOfQueue,
		DiskSelector: nonNil(s.DiskSelector), NodeSelector: nonNil(s.NodeSelector),
		RecurringJobSelector: recurringJobSelector(v), NumberOfReplicas: s.NumberOfReplicas, ReplicaAutoBalance: s.ReplicaAutoBalance,
		Conditions: conditionMap(st.Conditions), KubernetesStatus: kubernetesStatus(st.KubernetesStatus), CloneStatus: st.CloneStatus,
		Ready: volumeReady(v), AccessMode: s.AccessMode, ShareEndpoint: st.ShareEndpoint, ShareState: st.ShareState,
		Migratable: s.Migratable, Encrypted: s.Encrypted, CurrentNodeID: st.CurrentNodeID, ActualSize: st.ActualSize,
		ExpansionRequired: st.ExpansionRequired,
		VolumeAttachment: VolumeAttachment{Resource: u.newResource("volumeAttachment", "volumeattachments", v.Name),
			Name: v.Name, Volume: v.Name, Attachments: attachments(o.va)},
	}
	names := replicaNamesByAddress(o.engines, o.replicas)
	out.Replicas = replicasOf(o.replicas, activeEngine(v, o.engines))
	out.Controllers = make([]Controller, 0, len(o.engines))
	out.RestoreStatus, out.PurgeStatus, out.RebuildStatus = []RestoreStatus{}, []PurgeStatus{}, []RebuildStatus{}
	for _, e := range o.engines {
		out.Controllers = append(out.Controllers, controller(e))
		out.RestoreStatus = append(out.RestoreStatus, restoreStatuses(e, names)...)
		out.PurgeStatus = append(out.PurgeStatus, purgeStatuses(e, names)...)
		out.RebuildStatus = append(out.RebuildStatus, rebuildStatuses(e, names)...)
	}
	sort.Slice(out.Controllers, func(i, j int) bool { return out.Controllers[i].Name < out.Controllers[j].Name })
	out.BackupStatus = backupStatuses(o.backups, names)
	return out
}

func (o volumeObjects) effectiveBackupBlockSize() int64 {
	if o.vol.Spec.BackupBlockSize != 0 {
		return o.vol.Spec.BackupBlockSize
	}
	return o.backupBlockSize
}

// volumeReady is Longhorn's "ready for workloads": not faulted, not waiting
// for a restore, not failed to clone, and, when detached, scheduled.
func volumeReady(v *longhorn.Volume) bool {
	st := v.Status
	scheduled := conditionMap(st.Conditions)[longhorn.VolumeConditionTypeScheduled]
	switch {
	case v.Spec.NodeID == "" && st.State != longhorn.VolumeStateDetached:
		return false
	case st.State == longhorn.VolumeStateDetached && scheduled.Status != longhorn.ConditionStatusTrue:
		return false
	case st.Robustness == longhorn.VolumeRobustnessFaulted, st.RestoreRequired,
		st.CloneStatus.State == longhorn.VolumeCloneStateFailed:
		return false
	}
	return true
}

func kubernetesStatus(ks longhorn.KubernetesStatus) longhorn.KubernetesStatus {
	ks.WorkloadsStatus = nonNil(ks.WorkloadsStatus)
	return ks
}

// activeEngine is the engine whose replica modes the replicas show: the
// active one, else the one on the volume's node.
func activeEngine(v *longhorn.Volume, engines []*longhorn.Engine) *longhorn.Engine {
	for _, e := range engines {
		if e.Spec.Active {
			return e
		}
	}
	for _, e := range engines {
		if e.Spec.NodeID == v.Status.CurrentNodeID {
			return e
		}
	}
	return nil
}

func instance(name string, spec longhorn.InstanceSpec, st longhorn.InstanceStatus) Instance {
	return Instance{Name: name, NodeID: spec.NodeID, Address: st.IP, Running: st.CurrentState == longhorn.InstanceStateRunning,
		Image: spec.Image, CurrentImage: st.CurrentImage, InstanceManagerName: st.InstanceManagerName, DataEngine: spec.DataEngine}
}

// replicasOf reports the replicas with their mode in engine e (sorted).
func replicasOf(reps []*longhorn.Replica, e *longhorn.Engine) []Replica {
	out := make([]Replica, 0, len(reps))
	for _, r := range reps {
		rep := Replica{Instance: instance(r.Name, r.Spec.InstanceSpec, r.Status.InstanceStatus),
			DiskID: r.Spec.DiskID, DiskPath: r.Spec.DiskPath, FailedAt: r.Spec.FailedAt}
		if r.Spec.DiskPath != "" && r.Spec.DataDirectoryName != "" {
			rep.DataPath = strings.TrimRight(r.Spec.DiskPath, "/") + "/replicas/" + r.Spec.DataDirectoryName
		}
		if e != nil {
			rep.Mode = string(e.Status.ReplicaModeMap[r.Name])
		}
		out = append(out, rep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// controller reports an engine; its actual size is the sum of its
// snapshots' sizes, as in Longhorn.
func controller(e *longhorn.Engine) Controller {
	var actual int64
	for _, sn := range e.Status.Snapshots {
		if sn != nil {
			n, _ := strconv.ParseInt(sn.Size, 10, 64)
			actual += n
		}
	}
	return Controller{Instance: instance(e.Name, e.Spec.InstanceSpec, e.Status.InstanceStatus),
		Endpoint: e.Status.Endpoint, Size: formatInt(e.Status.CurrentSize), ActualSize: formatInt(actual),
		IsExpanding: e.Status.IsExpanding, LastExpansionError: e.Status.LastExpansionError,
		LastExpansionFailedAt: e.Status.LastExpansionFailedAt, LastRestoredBackup: e.Status.LastRestoredBackup,
		RequestedBackupRestore: e.Spec.RequestedBackupRestore, UnmapMarkSnapChainRemovedEnabled: e.Status.UnmapMarkSnapChainRemovedEnabled}
}

// replicaNamesByAddress maps every address a replica is known by to its
// name: "ip:port" and "tcp://ip:port", from the engines' address maps and
// the replicas' own status.
func replicaNamesByAddress(engines []*longhorn.Engine, reps []*longhorn.Replica) map[string]string {
	out := map[string]string{}
	add := func(name, addr string) {
		if addr == "" {
			return
		}
		addr = strings.TrimPrefix(addr, "tcp://")
		out[addr], out["tcp://"+addr] = name, name
	}
	for _, e := range engines {
		for name, addr := range e.Spec.ReplicaAddressMap {
			add(name, addr)
		}
		for name, addr := range e.Status.CurrentReplicaAddressMap {
			add(name, addr)
		}
	}
	for _, r := range reps {
		if r.Status.IP != "" && r.Status.Port != 0 {
			add(r.Name, r.Status.IP+":"+strconv.Itoa(r.Status.Port))
		}
	}
	return out
}

// replicaName is the name of the replica at addr, or addr when unknown.
func replicaName(names map[string]string, addr string) string {
	if n, ok := names[addr]; ok {
		return n
	}
	return addr
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func restoreStatuses(e *longhorn.Engine, names map[string]string) []RestoreStatus {
	var out []RestoreStatus
	for _, addr := range sortedKeys(e.Status.RestoreStatus) {
		if rs := e.Status.RestoreStatus[addr]; rs != nil {
			out = append(out, RestoreStatus{Resource: emptyResource(), Replica: replicaName(names, addr), IsRestoring: rs.IsRestoring,
				LastRestored: rs.LastRestored, Progress: rs.Progress, Error: rs.Error, Filename: rs.Filename, State: rs.State,
				BackupURL: rs.BackupURL})
		}
	}
	return out
}

func purgeStatuses(e *longhorn.Engine, names map[string]string) []PurgeStatus {
	var out []PurgeStatus
	for _, addr := range sortedKeys(e.Status.PurgeStatus) {
		if ps := e.Status.PurgeStatus[addr]; ps != nil {
			out = append(out, PurgeStatus{Resource: emptyResource(), Error: ps.Error, IsPurging: ps.IsPurging,
				Progress: ps.Progress, Replica: replicaName(names, addr), State: ps.State})
		}
	}
	return out
}

func rebuildStatuses(e *longhorn.Engine, names map[string]string) []RebuildStatus {
	var out []RebuildStatus
	for _, addr := range sortedKeys(e.Status.RebuildStatus) {
		if rs := e.Status.RebuildStatus[addr]; rs != nil {
			from := rs.FromReplicaAddress
			if from == "" && len(rs.FromReplicaAddressList) > 0 {
				from = rs.FromReplicaAddressList[0]
			}
			out = append(out, RebuildStatus{Resource: emptyResource(), Error: rs.Error, IsRebuilding: rs.IsRebuilding,
				Progress: rs.Progress, Replica: replicaName(names, addr), State: rs.State, FromReplica: replicaName(names, from)})
		}
	}
	return out
}

func backupStatuses(backups []*longhorn.Backup, names map[string]string) []BackupStatus {
	out := make([]BackupStatus, 0, len(backups))
	for _, b := range backups {
		res := emptyResource()
		res.ID = b.Name
		out = append(out, BackupStatus{Resource: res, Snapshot: b.Status.SnapshotName, Progress: b.Status.Progress,
			BackupURL: b.Status.URL, Error: b.Status.Error, State: string(b.Status.State),
			Replica: replicaName(names, b.Status.ReplicaAddress), Size: b.Status.Size})
	}
	return sortResources(out)
}

// emptyResource is the Resource of embedded status entries (no links).
func emptyResource() Resource {
	return Resource{Links: map[string]string{}, Actions: map[string]string{}}
}

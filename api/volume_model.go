package api

import (
	"strconv"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Volume is a volume resource (Longhorn's api/model.go Volume, the fields
// this product has): spec and status flattened, conditions by type, the
// volume's replicas and engines ("controllers").
type Volume struct {
	Resource
	Name                        string                               `json:"name"`
	Size                        string                               `json:"size"`
	Frontend                    longhorn.VolumeFrontend              `json:"frontend"`
	DisableFrontend             bool                                 `json:"disableFrontend"`
	FromBackup                  string                               `json:"fromBackup"`
	DataSource                  longhorn.VolumeDataSource            `json:"dataSource"`
	DataLocality                longhorn.DataLocality                `json:"dataLocality"`
	StaleReplicaTimeout         int                                  `json:"staleReplicaTimeout"`
	State                       longhorn.VolumeState                 `json:"state"`
	Robustness                  longhorn.VolumeRobustness            `json:"robustness"`
	Image                       string                               `json:"image"`
	CurrentImage                string                               `json:"currentImage"`
	BackingImage                string                               `json:"backingImage"`
	Created                     string                               `json:"created"`
	LastBackup                  string                               `json:"lastBackup"`
	LastBackupAt                string                               `json:"lastBackupAt"`
	Standby                     bool                                 `json:"standby"`
	RestoreRequired             bool                                 `json:"restoreRequired"`
	RevisionCounterDisabled     bool                                 `json:"revisionCounterDisabled"`
	UnmapMarkSnapChainRemoved   longhorn.UnmapMarkSnapChainRemoved   `json:"unmapMarkSnapChainRemoved"`
	ReplicaAutoBalance          longhorn.ReplicaAutoBalance          `json:"replicaAutoBalance"`
	ReplicaSoftAntiAffinity     longhorn.ReplicaSoftAntiAffinity     `json:"replicaSoftAntiAffinity"`
	ReplicaZoneSoftAntiAffinity longhorn.ReplicaZoneSoftAntiAffinity `json:"replicaZoneSoftAntiAffinity"`
	ReplicaDiskSoftAntiAffinity longhorn.ReplicaDiskSoftAntiAffinity `json:"replicaDiskSoftAntiAffinity"`
	NumberOfReplicas            int                                  `json:"numberOfReplicas"`
	DataEngine                  longhorn.DataEngineType              `json:"dataEngine"`
	AccessMode                  longhorn.AccessMode                  `json:"accessMode"`
	Migratable                  bool                                 `json:"migratable"`
	Encrypted                   bool                                 `json:"encrypted"`
	DiskSelector                []string                             `json:"diskSelector"`
	NodeSelector                []string                             `json:"nodeSelector"`
	SnapshotDataIntegrity       longhorn.SnapshotDataIntegrity       `json:"snapshotDataIntegrity"`
	SnapshotMaxCount            int                                  `json:"snapshotMaxCount"`
	SnapshotMaxSize             string                               `json:"snapshotMaxSize"`
	BackupCompressionMethod     longhorn.BackupCompressionMethod     `json:"backupCompressionMethod"`
	BackupTargetName            string                               `json:"backupTargetName"`
	ShareEndpoint               string                               `json:"shareEndpoint"`
	ShareState                  string                               `json:"shareState"`
	CurrentNodeID               string                               `json:"currentNodeID"`
	ActualSize                  int64                                `json:"actualSize"`
	ExpansionRequired           bool                                 `json:"expansionRequired"`
	Ready                       bool                                 `json:"ready"`
	Conditions                  map[string]longhorn.Condition        `json:"conditions"`
	KubernetesStatus            longhorn.KubernetesStatus            `json:"kubernetesStatus"`
	Replicas                    []Replica                            `json:"replicas"`
	Controllers                 []Controller                         `json:"controllers"`
	VolumeAttachment            *VolumeAttachment                    `json:"volumeAttachment"`
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
	Endpoint           string `json:"endpoint"`
	Size               string `json:"size"`
	ActualSize         string `json:"actualSize"`
	IsExpanding        bool   `json:"isExpanding"`
	LastExpansionError string `json:"lastExpansionError"`
}

// Volume action names (POST /v1/volumes/{name}?action=...).
const (
	ActionAttach             = "attach"
	ActionDetach             = "detach"
	ActionSalvage            = "salvage"
	ActionExpand             = "expand"
	ActionUpdateReplicaCount = "updateReplicaCount"
	ActionSnapshotCreate     = "snapshotCreate"
	ActionSnapshotList       = "snapshotList"
	ActionSnapshotGet        = "snapshotGet"
	ActionSnapshotDelete     = "snapshotDelete"
	ActionSnapshotRevert     = "snapshotRevert"
	ActionSnapshotPurge      = "snapshotPurge"
)

// volumeActions returns the actions valid for a volume in its state, as
// Longhorn advertises them (api/model.go toVolumeResource): attach and
// detach always; a faulted volume only salvage; a detached one expand,
// replica count, replicaRemove and the field updates; an attached one those
// and the snapshot actions.
func volumeActions(v *longhorn.Volume) []string {
	actions := []string{ActionAttach, ActionDetach}
	if v.Status.Robustness == longhorn.VolumeRobustnessFaulted {
		return append(actions, ActionSalvage)
	}
	switch v.Status.State {
	case longhorn.VolumeStateDetached:
		actions = append(actions, ActionExpand, ActionUpdateReplicaCount, ActionReplicaRemove,
			ActionUpdateDataLocality, ActionUpdateReplicaAutoBalance)
	case longhorn.VolumeStateAttached:
		actions = append(actions, ActionExpand, ActionUpdateReplicaCount, ActionReplicaRemove,
			ActionUpdateDataLocality, ActionUpdateReplicaAutoBalance,
			ActionSnapshotCreate, ActionSnapshotList, ActionSnapshotGet, ActionSnapshotDelete,
			ActionSnapshotRevert, ActionSnapshotPurge)
	}
	return actions
}

// volume builds the resource of v with its engines, replicas and attachment.
func (u urls) volume(v *longhorn.Volume, engines []*longhorn.Engine, replicas []*longhorn.Replica, va *longhorn.VolumeAttachment) Volume {
	s, st := v.Spec, v.Status
	out := Volume{Resource: u.newResource("volume", "volumes", v.Name, volumeActions(v)...),
		Name: v.Name, Size: strconv.FormatInt(s.Size, 10), Frontend: s.Frontend, DisableFrontend: s.DisableFrontend,
		FromBackup: s.FromBackup, DataSource: s.DataSource, DataLocality: s.DataLocality,
		StaleReplicaTimeout: s.StaleReplicaTimeout, State: st.State, Robustness: st.Robustness,
		Image: s.Image, CurrentImage: st.CurrentImage, BackingImage: s.BackingImage,
		Created: rfc3339(v.CreationTimestamp.Time), LastBackup: st.LastBackup, LastBackupAt: st.LastBackupAt,
		Standby: s.Standby, RestoreRequired: st.RestoreRequired, RevisionCounterDisabled: s.RevisionCounterDisabled,
		UnmapMarkSnapChainRemoved: s.UnmapMarkSnapChainRemoved, ReplicaAutoBalance: s.ReplicaAutoBalance,
		ReplicaSoftAntiAffinity: s.ReplicaSoftAntiAffinity, ReplicaZoneSoftAntiAffinity: s.ReplicaZoneSoftAntiAffinity,
		ReplicaDiskSoftAntiAffinity: s.ReplicaDiskSoftAntiAffinity, NumberOfReplicas: s.NumberOfReplicas,
		DataEngine: s.DataEngine, AccessMode: s.AccessMode, Migratable: s.Migratable, Encrypted: s.Encrypted,
		DiskSelector: nonNil(s.DiskSelector), NodeSelector: nonNil(s.NodeSelector),
		SnapshotDataIntegrity: s.SnapshotDataIntegrity, SnapshotMaxCount: s.SnapshotMaxCount,
		SnapshotMaxSize: strconv.FormatInt(s.SnapshotMaxSize, 10), BackupCompressionMethod: s.BackupCompressionMethod,
		BackupTargetName: s.BackupTargetName, ShareEndpoint: st.ShareEndpoint, ShareState: string(st.ShareState),
		CurrentNodeID: st.CurrentNodeID, ActualSize: st.ActualSize, ExpansionRequired: st.ExpansionRequired,
		Conditions: conditionMap(st.Conditions), KubernetesStatus: st.KubernetesStatus,
		Replicas: []Replica{}, Controllers: []Controller{},
	}
	out.Ready = st.Robustness != longhorn.VolumeRobustnessFaulted && st.State != longhorn.VolumeStateCreating
	for _, r := range replicas {
		out.Replicas = append(out.Replicas, replica(r, engines))
	}
	for _, e := range engines {
		out.Controllers = append(out.Controllers, controller(e))
	}
	sortByID(out.Replicas, func(r Replica) string { return r.Name })
	sortByID(out.Controllers, func(c Controller) string { return c.Name })
	if va != nil {
		vaRes := u.volumeAttachment(va)
		out.VolumeAttachment = &vaRes
	}
	return out
}

func instance(name string, spec longhorn.InstanceSpec, st longhorn.InstanceStatus) Instance {
	addr := ""
	if st.IP != "" && st.Port != 0 {
		addr = "tcp://" + st.IP + ":" + strconv.Itoa(st.Port)
	}
	return Instance{Name: name, NodeID: spec.NodeID, Address: addr, Running: st.CurrentState == longhorn.InstanceStateRunning,
		Image: spec.Image, CurrentImage: st.CurrentImage, InstanceManagerName: st.InstanceManagerName, DataEngine: spec.DataEngine}
}

// replica reports a replica with its mode in the volume's active engine.
func replica(r *longhorn.Replica, engines []*longhorn.Engine) Replica {
	out := Replica{Instance: instance(r.Name, r.Spec.InstanceSpec, r.Status.InstanceStatus),
		DiskID: r.Spec.DiskID, DiskPath: r.Spec.DiskPath, FailedAt: r.Spec.FailedAt}
	if r.Spec.DiskPath != "" && r.Spec.DataDirectoryName != "" {
		out.DataPath = r.Spec.DiskPath + "/replicas/" + r.Spec.DataDirectoryName
	}
	for _, e := range engines {
		if m, ok := e.Status.ReplicaModeMap[r.Name]; ok && e.Spec.Active {
			out.Mode = string(m)
		}
	}
	return out
}

func controller(e *longhorn.Engine) Controller {
	return Controller{Instance: instance(e.Name, e.Spec.InstanceSpec, e.Status.InstanceStatus),
		Endpoint: e.Status.Endpoint, Size: strconv.FormatInt(e.Spec.VolumeSize, 10),
		ActualSize: strconv.FormatInt(e.Status.CurrentSize, 10), IsExpanding: e.Status.IsExpanding,
		LastExpansionError: e.Status.LastExpansionError}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

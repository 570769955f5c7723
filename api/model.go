package api

import (
	"net/url"
	"sort"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Resource is the part every gdapi resource has.
type Resource struct {
	ID      string            `json:"id"`
	Type    string            `json:"type"`
	Links   map[string]string `json:"links"`
	Actions map[string]string `json:"actions"`
}

// Collection is a gdapi collection of one resource type.
type Collection struct {
	Type         string            `json:"type"`
	ResourceType string            `json:"resourceType"`
	Links        map[string]string `json:"links"`
	Data         any               `json:"data"`
}

// urls builds resource and action URLs under <base>/v1.
type urls struct{ base string }

func (u urls) collection(coll string) string { return u.base + "/v1/" + coll }

func (u urls) resource(coll, id string) string { return u.collection(coll) + "/" + url.PathEscape(id) }

// resource returns the common fields with links.self and one action URL per
// name in actions.
func (u urls) newResource(typ, coll, id string, actions ...string) Resource {
	self := u.resource(coll, id)
	acts := make(map[string]string, len(actions))
	for _, a := range actions {
		acts[a] = self + "?action=" + a
	}
	return Resource{ID: id, Type: typ, Links: map[string]string{"self": self}, Actions: acts}
}

func (u urls) newCollection(typ, coll string, data any) Collection {
	return Collection{Type: "collection", ResourceType: typ, Links: map[string]string{"self": u.collection(coll)}, Data: data}
}

// Setting is a setting resource: the value in force (the Setting object's,
// or the definition default when the object does not exist yet) and its
// definition.
type Setting struct {
	Resource
	Name       string                  `json:"name"`
	Value      string                  `json:"value"`
	Applied    bool                    `json:"applied"`
	Definition types.SettingDefinition `json:"definition"`
}

func (u urls) setting(def types.SettingDefinition, s *longhorn.Setting) Setting {
	out := Setting{Resource: u.newResource("setting", "settings", string(def.Name)),
		Name: string(def.Name), Value: def.Default, Definition: def}
	if s != nil {
		out.Value, out.Applied = s.Value, s.Status.Applied
	}
	return out
}

// Node is a node resource (Longhorn's Node model).
type Node struct {
	Resource
	Name                      string                        `json:"name"`
	Address                   string                        `json:"address"`
	AllowScheduling           bool                          `json:"allowScheduling"`
	EvictionRequested         bool                          `json:"evictionRequested"`
	Disks                     map[string]DiskInfo           `json:"disks"`
	Conditions                map[string]longhorn.Condition `json:"conditions"`
	Tags                      []string                      `json:"tags"`
	Region                    string                        `json:"region"`
	Zone                      string                        `json:"zone"`
	InstanceManagerCPURequest int                           `json:"instanceManagerCPURequest"`
	AutoEvicting              bool                          `json:"autoEvicting"`
}

// DiskInfo is a disk of a node as Longhorn's API shows it: spec and
// status fields side by side, conditions by type.
type DiskInfo struct {
	Path                string                        `json:"path"`
	DiskType            longhorn.DiskType             `json:"diskType"`
	DiskDriver          longhorn.DiskDriver           `json:"diskDriver"`
	AllowScheduling     bool                          `json:"allowScheduling"`
	EvictionRequested   bool                          `json:"evictionRequested"`
	StorageReserved     int64                         `json:"storageReserved"`
	Tags                []string                      `json:"tags"`
	StorageAvailable    int64                         `json:"storageAvailable"`
	StorageScheduled    int64                         `json:"storageScheduled"`
	StorageMaximum      int64                         `json:"storageMaximum"`
	ScheduledReplica    map[string]int64              `json:"scheduledReplica"`
	DiskUUID            string                        `json:"diskUUID"`
	FSType              string                        `json:"filesystemType"`
	InstanceManagerName string                        `json:"instanceManagerName"`
	Conditions          map[string]longhorn.Condition `json:"conditions"`
}

func diskInfo(spec longhorn.DiskSpec, st *longhorn.DiskStatus) DiskInfo {
	d := DiskInfo{Path: spec.Path, DiskType: spec.Type, DiskDriver: spec.DiskDriver,
		AllowScheduling: spec.AllowScheduling, EvictionRequested: spec.EvictionRequested,
		StorageReserved: spec.StorageReserved, Tags: spec.Tags, Conditions: map[string]longhorn.Condition{}}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	if st != nil {
		d.StorageAvailable, d.StorageScheduled, d.StorageMaximum = st.StorageAvailable, st.StorageScheduled, st.StorageMaximum
		d.ScheduledReplica, d.DiskUUID, d.FSType = st.ScheduledReplica, st.DiskUUID, st.FSType
		d.InstanceManagerName, d.Conditions = st.InstanceManagerName, conditionMap(st.Conditions)
	}
	return d
}

func (u urls) node(n *longhorn.Node, address string) Node {
	disks := make(map[string]DiskInfo, len(n.Spec.Disks))
	for name, spec := range n.Spec.Disks {
		disks[name] = diskInfo(spec, n.Status.DiskStatus[name])
	}
	tags := n.Spec.Tags
	if tags == nil {
		tags = []string{}
	}
	return Node{Resource: u.newResource("node", "nodes", n.Name, "diskUpdate"),
		Name: n.Name, Address: address, AllowScheduling: n.Spec.AllowScheduling,
		EvictionRequested: n.Spec.EvictionRequested, Disks: disks,
		Conditions: conditionMap(n.Status.Conditions), Tags: tags, Region: n.Status.Region, Zone: n.Status.Zone,
		InstanceManagerCPURequest: n.Spec.InstanceManagerCPURequest, AutoEvicting: n.Status.AutoEvicting}
}

// conditionMap indexes conditions by type, as Longhorn's API shows them.
func conditionMap(cs []longhorn.Condition) map[string]longhorn.Condition {
	out := make(map[string]longhorn.Condition, len(cs))
	for _, c := range cs {
		out[c.Type] = c
	}
	return out
}

// EngineImage is an engine image resource.
type EngineImage struct {
	Resource
	Name string `json:"name"`
	longhorn.EngineImageSpec
	longhorn.EngineImageStatus
}

func (u urls) engineImage(ei *longhorn.EngineImage) EngineImage {
	return EngineImage{Resource: u.newResource("engineImage", "engineimages", ei.Name),
		Name: ei.Name, EngineImageSpec: ei.Spec, EngineImageStatus: ei.Status}
}

// InstanceManager is an instance manager resource (Longhorn's model:
// the spec type is "managerType" since "type" is the resource type).
type InstanceManager struct {
	Resource
	Name               string                              `json:"name"`
	Image              string                              `json:"image"`
	NodeID             string                              `json:"nodeID"`
	ManagerType        longhorn.InstanceManagerType        `json:"managerType"`
	DataEngine         longhorn.DataEngineType             `json:"dataEngine"`
	CurrentState       longhorn.InstanceManagerState       `json:"currentState"`
	IP                 string                              `json:"ip"`
	InstanceEngines    map[string]longhorn.InstanceProcess `json:"instanceEngines"`
	InstanceReplicas   map[string]longhorn.InstanceProcess `json:"instanceReplicas"`
	Conditions         map[string]longhorn.Condition       `json:"conditions"`
	APIMinVersion      int                                 `json:"apiMinVersion"`
	APIVersion         int                                 `json:"apiVersion"`
	ProxyAPIMinVersion int                                 `json:"proxyApiMinVersion"`
	ProxyAPIVersion    int                                 `json:"proxyApiVersion"`
}

func (u urls) instanceManager(im *longhorn.InstanceManager) InstanceManager {
	st := im.Status
	eng, rep := st.InstanceEngines, st.InstanceReplicas
	if eng == nil {
		eng = map[string]longhorn.InstanceProcess{}
	}
	if rep == nil {
		rep = map[string]longhorn.InstanceProcess{}
	}
	return InstanceManager{Resource: u.newResource("instanceManager", "instancemanagers", im.Name),
		Name: im.Name, Image: im.Spec.Image, NodeID: im.Spec.NodeID, ManagerType: im.Spec.Type,
		DataEngine: im.Spec.DataEngine, CurrentState: st.CurrentState, IP: st.IP,
		InstanceEngines: eng, InstanceReplicas: rep, Conditions: conditionMap(st.Conditions),
		APIMinVersion: st.APIMinVersion, APIVersion: st.APIVersion,
		ProxyAPIMinVersion: st.ProxyAPIMinVersion, ProxyAPIVersion: st.ProxyAPIVersion}
}

// VolumeAttachment is a volume attachment resource.
type VolumeAttachment struct {
	Resource
	Name        string                                      `json:"name"`
	Volume      string                                      `json:"volume"`
	Attachments map[string]*longhorn.AttachmentTicket       `json:"attachments"`
	Statuses    map[string]*longhorn.AttachmentTicketStatus `json:"attachmentTicketStatuses"`
}

func (u urls) volumeAttachment(va *longhorn.VolumeAttachment) VolumeAttachment {
	att := va.Spec.AttachmentTickets
	if att == nil {
		att = map[string]*longhorn.AttachmentTicket{}
	}
	st := va.Status.AttachmentTicketStatuses
	if st == nil {
		st = map[string]*longhorn.AttachmentTicketStatus{}
	}
	return VolumeAttachment{Resource: u.newResource("volumeAttachment", "volumeattachments", va.Name),
		Name: va.Name, Volume: va.Spec.Volume, Attachments: att, Statuses: st}
}

// sortByID orders resources by ID so lists are stable (WebSocket streams
// compare successive lists).
func sortByID[T any](items []T, id func(T) string) {
	sort.Slice(items, func(i, j int) bool { return id(items[i]) < id(items[j]) })
}

// rfc3339 formats a creation time as Longhorn's API does ("" when unset).
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

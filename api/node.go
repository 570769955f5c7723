package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Node is a node resource (Longhorn's api/model.go Node).
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

// DiskInfo is a disk of a node as Longhorn's API shows it: the disk spec
// and status side by side, storage numbers as JSON numbers (bytes),
// conditions by type.
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
		StorageReserved: spec.StorageReserved, Tags: nonNil(spec.Tags), Conditions: map[string]longhorn.Condition{},
		ScheduledReplica: map[string]int64{}}
	if st != nil {
		d.StorageAvailable, d.StorageScheduled, d.StorageMaximum = st.StorageAvailable, st.StorageScheduled, st.StorageMaximum
		d.ScheduledReplica, d.DiskUUID, d.FSType = nonNilMap(st.ScheduledReplica), st.DiskUUID, st.FSType
		d.InstanceManagerName, d.Conditions = st.InstanceManagerName, conditionMap(st.Conditions)
	}
	return d
}

func (u urls) node(n *longhorn.Node, address string) Node {
	disks := make(map[string]DiskInfo, len(n.Spec.Disks))
	for name, spec := range n.Spec.Disks {
		disks[name] = diskInfo(spec, n.Status.DiskStatus[name])
	}
	return Node{Resource: u.newResource("node", "nodes", n.Name, "diskUpdate"),
		Name: n.Name, Address: address, AllowScheduling: n.Spec.AllowScheduling,
		EvictionRequested: n.Spec.EvictionRequested, Disks: disks,
		Conditions: conditionMap(n.Status.Conditions), Tags: nonNil(n.Spec.Tags), Region: n.Status.Region, Zone: n.Status.Zone,
		InstanceManagerCPURequest: n.Spec.InstanceManagerCPURequest, AutoEvicting: n.Status.AutoEvicting}
}

// nodeAddress returns the node's address as Longhorn shows it: the IP of
// its instance manager ("" until one runs).
func (s *Server) nodeAddress(ctx context.Context, node string) string {
	ims, err := s.ds.ListInstanceManagersByNodeRO(ctx, node)
	if err != nil {
		return ""
	}
	for _, im := range ims {
		if im.Status.IP != "" {
			return im.Status.IP
		}
	}
	return ""
}

func (s *Server) listNodes(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListNodesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	out := toResources(objs, func(n *longhorn.Node) Node { return u.node(n, s.nodeAddress(ctx, n.Name)) })
	return http.StatusOK, u.newCollection("node", "nodes", out), nil
}

func (s *Server) getNode(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	n, err := s.ds.GetNodeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.node(n, s.nodeAddress(ctx, n.Name)), nil
}

// NodeInput is the body of PUT /v1/nodes/{name}; absent fields are kept.
type NodeInput struct {
	AllowScheduling           *bool     `json:"allowScheduling"`
	EvictionRequested         *bool     `json:"evictionRequested"`
	Tags                      *[]string `json:"tags"`
	InstanceManagerCPURequest *int      `json:"instanceManagerCPURequest"`
}

func (s *Server) updateNode(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in NodeInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	var tags []string
	if in.Tags != nil {
		var err error
		if tags, err = cleanTags("tags", *in.Tags); err != nil {
			return 0, nil, err
		}
	}
	if in.InstanceManagerCPURequest != nil && *in.InstanceManagerCPURequest < 0 {
		return 0, nil, invalidInput("instanceManagerCPURequest", "must be at least 0 (millicpu), got %d", *in.InstanceManagerCPURequest)
	}
	return s.editNode(ctx, u, r.PathValue("name"), func(n *longhorn.Node) error {
		if in.AllowScheduling != nil {
			n.Spec.AllowScheduling = *in.AllowScheduling
		}
		if in.EvictionRequested != nil {
			n.Spec.EvictionRequested = *in.EvictionRequested
		}
		if in.Tags != nil {
			n.Spec.Tags = tags
		}
		if in.InstanceManagerCPURequest != nil {
			n.Spec.InstanceManagerCPURequest = *in.InstanceManagerCPURequest
		}
		return nil
	})
}

// editNode applies edit to a fresh copy of node name and writes it,
// retrying on conflicts; it answers with the node resource. An error from
// edit is returned unchanged and nothing is written.
func (s *Server) editNode(ctx context.Context, u urls, name string, edit func(*longhorn.Node) error) (int, any, error) {
	var out *longhorn.Node
	err := retry.RetryOnConflict(writeBackoff, func() error {
		n, err := s.ds.GetNode(ctx, name)
		if err != nil {
			return err
		}
		if err := edit(n); err != nil {
			return err
		}
		out, err = s.ds.UpdateNode(ctx, n)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.node(out, s.nodeAddress(ctx, out.Name)), nil
}

// cleanTags trims, de-duplicates and sorts tags; a tag that is not a
// Kubernetes qualified name ("fast", "example.com/ssd") is a 422 naming
// field, as Longhorn's util.ValidateTags refuses it.
func cleanTags(field string, tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if errs := validation.IsQualifiedName(t); len(errs) > 0 {
			return nil, invalidInput(field, "tag %q is not a qualified name: %s", t, strings.Join(errs, "; "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// DiskUpdateInput is the body of the node action diskUpdate: the node's
// complete disk map (disks left out are removed, as in Longhorn).
type DiskUpdateInput struct {
	Disks map[string]longhorn.DiskSpec `json:"disks"`
}

func (s *Server) nodeAction(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	if a := r.URL.Query().Get("action"); a != "diskUpdate" {
		return 0, nil, newError(http.StatusBadRequest, CodeInvalidAction, "node action %q is not one of diskUpdate", a)
	}
	var in DiskUpdateInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Disks == nil {
		return 0, nil, invalidInput("disks", "is required (the complete map of the node's disks)")
	}
	for name, d := range in.Disks {
		if d.Path == "" {
			return 0, nil, invalidInput("disks."+name+".path", "is required")
		}
		if d.StorageReserved < 0 {
			return 0, nil, invalidInput("disks."+name+".storageReserved", "must be at least 0 bytes")
		}
		tags, err := cleanTags("disks."+name+".tags", d.Tags)
		if err != nil {
			return 0, nil, err
		}
		d.Tags = tags
		if d.Type == "" {
			d.Type = longhorn.DiskTypeFilesystem
		}
		in.Disks[name] = d
	}
	return s.editNode(ctx, u, r.PathValue("name"), func(n *longhorn.Node) error {
		if err := checkDiskRemoval(n, in.Disks); err != nil {
			return err
		}
		n.Spec.Disks = in.Disks
		return nil
	})
}

// checkDiskRemoval refuses to drop a disk that is still schedulable or holds
// replicas, with Longhorn's message (the webhook refuses it too).
func checkDiskRemoval(n *longhorn.Node, disks map[string]longhorn.DiskSpec) error {
	for name, d := range n.Spec.Disks {
		if _, kept := disks[name]; kept {
			continue
		}
		st := n.Status.DiskStatus[name]
		if d.AllowScheduling || (st != nil && (len(st.ScheduledReplica) > 0 || st.StorageScheduled != 0)) {
			return invalidInput("disks", "%s", types.DiskRemovalRefused(n.Name, d.Path))
		}
	}
	return nil
}

// deleteNode removes a node from Longhorn, only when its manager is gone
// (Ready is false because the Kubernetes node or the manager pod is
// missing), scheduling is disabled and no engine or replica is on it
// (Longhorn's manager DeleteNode rule); otherwise 409 naming what blocks it.
func (s *Server) deleteNode(ctx context.Context, r *http.Request, _ urls) (int, any, error) {
	n, err := s.ds.GetNodeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	reps, err := s.ds.ListReplicasByNodeRO(ctx, n.Name)
	if err != nil {
		return 0, nil, err
	}
	engs, err := s.ds.ListEnginesByNodeRO(ctx, n.Name)
	if err != nil {
		return 0, nil, err
	}
	ready := conditionMap(n.Status.Conditions)[longhorn.NodeConditionTypeReady]
	gone := ready.Status != longhorn.ConditionStatusTrue && (ready.Reason == longhorn.NodeConditionReasonKubernetesNodeGone ||
		ready.Reason == longhorn.NodeConditionReasonManagerPodMissing)
	if !gone || n.Spec.AllowScheduling || len(reps) > 0 || len(engs) > 0 {
		return 0, nil, invalidState("could not delete node %v with node ready condition is %v, reason is %v, node schedulable %v, and %v replica, %v engine running on it",
			n.Name, orUnknown(string(ready.Status)), orUnknown(ready.Reason), n.Spec.AllowScheduling, len(reps), len(engs))
	}
	if err := s.ds.DeleteNode(ctx, n.Name); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// Tag is a node or disk tag resource (Longhorn's Tag, tagType "node" or
// "disk").
type Tag struct {
	Resource
	Name    string `json:"name"`
	TagType string `json:"tagType"`
}

func (s *Server) listDiskTags(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	return s.listTags(ctx, u, "disktags", "disk", func(n *longhorn.Node) []string {
		var tags []string
		for _, d := range n.Spec.Disks {
			tags = append(tags, d.Tags...)
		}
		return tags
	})
}

func (s *Server) listNodeTags(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	return s.listTags(ctx, u, "nodetags", "node", func(n *longhorn.Node) []string { return n.Spec.Tags })
}

// listTags collects the distinct tags of every node (sorted); the UI offers
// them in the volume's disk and node selectors.
func (s *Server) listTags(ctx context.Context, u urls, coll, tagType string, of func(*longhorn.Node) []string) (int, any, error) {
	nodes, err := s.ds.ListNodesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	seen := map[string]bool{}
	var out []Tag
	for _, n := range nodes {
		for _, t := range of(n) {
			if !seen[t] {
				seen[t] = true
				res := Resource{ID: t, Type: "tag", Links: map[string]string{"self": u.collection(coll)}, Actions: map[string]string{}}
				out = append(out, Tag{Resource: res, Name: t, TagType: tagType})
			}
		}
	}
	return http.StatusOK, u.newCollection("tag", coll, sortResources(out)), nil
}

package adopt

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Annotation marks a Volume whose replicas are being adopted: while it is
// set the volume controller neither creates nor removes its replicas (it
// would otherwise see a volume without replicas and make empty ones).
const Annotation = types.AdoptionAnnotation

// finalizer is the manager's finalizer on Volume and Replica objects.
const finalizer = "longhorn.io"

// Target says where the directories are and how to describe them.
type Target struct {
	Namespace string
	Node      string
	DiskPath  string // the disk's path on the node (Replica spec.diskPath)
	DiskUUID  string // the node's disk of that path (Replica spec.diskID)
	// Frontend of created volumes ("blockdev" as Longhorn's default).
	Frontend longhorn.VolumeFrontend
	// RevisionCounterDisabled follows the disable-revision-counter setting.
	RevisionCounterDisabled bool
	// Now stamps the replicas' healthyAt (RFC 3339).
	Now string
	// Only, when not empty, limits adoption to these volumes.
	Only map[string]bool
}

// Cluster is what exists already (read-only objects).
type Cluster struct {
	Volumes  map[string]*longhorn.Volume
	Replicas []*longhorn.Replica
}

// VolumePlan is what to do for one volume.
type VolumePlan struct {
	Name string
	// Create: the Volume does not exist; it is created with Size.
	Create bool
	Size   int64
	// Replicas are the Replica objects to create (the volume's ownerRef
	// and image are filled in by Apply once the Volume exists).
	Replicas []*longhorn.Replica
	// NumberOfReplicas is the volume's replica count afterwards.
	NumberOfReplicas int
}

// Skip is a directory left alone, and why.
type Skip struct{ Dir, Reason string }

// Plan is the whole outcome of MakePlan.
type Plan struct {
	Volumes []VolumePlan
	Skipped []Skip
}

// MakePlan decides, for the directories found on the target disk, which
// Volumes and Replicas to create: one Replica per directory not already
// referenced by a Replica object; a Volume (size from volume.meta) when
// none of that name exists; the volume's replica count raised to its
// replicas. A directory whose size differs from its volume's, or from the
// other directories of the same volume, is skipped.
func MakePlan(found []Found, c Cluster, t Target) Plan {
	var p Plan
	used := map[string]bool{}
	counts := map[string]int{}
	for _, r := range c.Replicas {
		if r.Spec.NodeID == t.Node && r.Spec.DataDirectoryName != "" {
			used[r.Spec.DataDirectoryName] = true
		}
		if r.DeletionTimestamp == nil {
			counts[r.Spec.VolumeName]++
		}
	}
	plans := map[string]*VolumePlan{}
	for _, f := range found {
		if reason := skipReason(f, c, t, used, plans); reason != "" {
			p.Skipped = append(p.Skipped, Skip{Dir: f.Dir, Reason: reason})
			continue
		}
		vp := plans[f.Volume]
		if vp == nil {
			_, exists := c.Volumes[f.Volume]
			vp = &VolumePlan{Name: f.Volume, Create: !exists, Size: f.Size, NumberOfReplicas: counts[f.Volume]}
			plans[f.Volume] = vp
		}
		vp.Replicas = append(vp.Replicas, replicaFor(f, t))
		vp.NumberOfReplicas++
	}
	for _, vp := range plans {
		p.Volumes = append(p.Volumes, *vp)
	}
	sort.Slice(p.Volumes, func(i, j int) bool { return p.Volumes[i].Name < p.Volumes[j].Name })
	return p
}

func skipReason(f Found, c Cluster, t Target, used map[string]bool, plans map[string]*VolumePlan) string {
	switch {
	case f.Problem != "":
		return f.Problem
	case len(t.Only) > 0 && !t.Only[f.Volume]:
		return "not among the volumes asked for"
	case used[f.Dir]:
		return "already used by a Replica object"
	}
	if v := c.Volumes[f.Volume]; v != nil {
		if v.DeletionTimestamp != nil {
			return fmt.Sprintf("volume %s is being deleted", f.Volume)
		}
		if v.Spec.Size != f.Size {
			return fmt.Sprintf("size %d differs from volume %s's %d", f.Size, f.Volume, v.Spec.Size)
		}
		if v.Status.State != "" && v.Status.State != longhorn.VolumeStateDetached {
			return fmt.Sprintf("volume %s is %s; adopt into detached volumes only", f.Volume, v.Status.State)
		}
	}
	if vp := plans[f.Volume]; vp != nil && vp.Size != f.Size {
		return fmt.Sprintf("size %d differs from the other directories of %s (%d)", f.Size, f.Volume, vp.Size)
	}
	return ""
}

// replicaFor describes the Replica object serving directory f.
func replicaFor(f Found, t Target) *longhorn.Replica {
	_, id, _ := VolumeNameOf(f.Dir)
	return &longhorn.Replica{
		ObjectMeta: metav1.ObjectMeta{Name: types.ReplicaNameForVolume(f.Volume, id), Namespace: t.Namespace,
			Labels: types.ReplicaLabels(f.Volume, t.Node, t.DiskUUID), Finalizers: []string{finalizer}},
		Spec: longhorn.ReplicaSpec{
			InstanceSpec: longhorn.InstanceSpec{VolumeName: f.Volume, VolumeSize: f.Size, NodeID: t.Node,
				DesireState: longhorn.InstanceStateStopped, DataEngine: longhorn.DataEngineTypeV1},
			EngineName: types.EngineNameForVolume(f.Volume, 0), DiskID: t.DiskUUID, DiskPath: t.DiskPath,
			DataDirectoryName: f.Dir, Active: true, HealthyAt: t.Now, LastHealthyAt: t.Now,
			RevisionCounterDisabled: t.RevisionCounterDisabled,
		},
	}
}

// NewVolume is the Volume object MakePlan's plan creates, annotated as
// being adopted.
func NewVolume(vp VolumePlan, t Target) *longhorn.Volume {
	return &longhorn.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: vp.Name, Namespace: t.Namespace, Annotations: map[string]string{Annotation: "true"}},
		Spec: longhorn.VolumeSpec{Size: vp.Size, NumberOfReplicas: vp.NumberOfReplicas, Frontend: t.Frontend,
			DataEngine: longhorn.DataEngineTypeV1},
	}
}

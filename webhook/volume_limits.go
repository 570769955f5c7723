package webhook

import (
	"sync"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// hostCgroupVersion is the cgroup version of the node the webhook runs on
// (0: none found). Nodes of a cluster normally share it; the instance
// manager still refuses, per node, what its own host cannot enforce.
var hostCgroupVersion = sync.OnceValue(func() int {
	l, err := cgroup.DetectHostLayout()
	if err != nil {
		return 0
	}
	return l.Version
})

// validateResourceLimits checks the longhorn.io/... resource-limit
// annotations (types.ParseResourceLimits) and refuses limits that cannot
// be enforced: write bandwidth/IOPS on a cgroup v1 host (writeback is not
// charged to the replica's cgroup there) and any limit on a v2 data-engine
// volume (whose instances are no processes of their own).
func validateResourceLimits(v *longhorn.Volume) error {
	l, err := types.ParseResourceLimits(v.Annotations)
	if err != nil {
		return Invalid("metadata.annotations", "%v", err)
	}
	if l.IsZero() {
		return nil
	}
	if v.Spec.DataEngine == longhorn.DataEngineTypeV2 {
		return Invalid("metadata.annotations", "resource limits apply to dataEngine v1 volumes only (v2 instances are no processes of their own)")
	}
	if (l.WriteBPS != 0 || l.WriteIOPS != 0) && hostCgroupVersion() == 1 {
		return Invalid("metadata.annotations", "%s and %s cannot be enforced: this node runs cgroup v1, which does not charge a replica's page-cache writeback to its cgroup (they need cgroup v2)",
			types.AnnotationReplicaWriteBandwidthLimit, types.AnnotationReplicaWriteIOPSLimit)
	}
	return nil
}

// checkLimitChange refuses to change the resource limits of a volume that
// is not detached: they apply when its engine and replicas start.
func checkLimitChange(old, v *longhorn.Volume) error {
	if old.Status.State == "" || old.Status.State == longhorn.VolumeStateDetached || old.Status.State == longhorn.VolumeStateCreating {
		return nil
	}
	for _, a := range types.ResourceLimitParameters {
		if old.Annotations[a] != v.Annotations[a] {
			return Invalid("metadata.annotations", "%s cannot change while the volume is %s: detach it first (limits apply when its engine and replicas start)", a, old.Status.State)
		}
	}
	return nil
}

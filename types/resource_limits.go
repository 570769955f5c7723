package types

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
)

// Per-volume resource limits (not in Longhorn, which has no such Volume
// field): Volume annotations, so Longhorn manifests stay valid. The
// StorageClass parameter (and REST resourceLimits key) of the same meaning
// is in ResourceLimitParameters. CPU and memory limit each engine and
// replica process of the volume; the I/O limits apply to each replica
// process on the disk its data directory is on. They take effect when the
// processes start; the webhook refuses changes while the volume is attached.
const (
	// AnnotationInstanceCPULimit: CPU per process, a quantity ("500m").
	AnnotationInstanceCPULimit = "longhorn.io/instance-cpu-limit"
	// AnnotationInstanceMemoryLimit: memory per process, page cache included ("256Mi").
	AnnotationInstanceMemoryLimit = "longhorn.io/instance-memory-limit"
	// AnnotationReplicaReadBandwidthLimit: bytes/s a replica reads from its disk ("20Mi").
	AnnotationReplicaReadBandwidthLimit = "longhorn.io/replica-read-bandwidth-limit"
	// AnnotationReplicaWriteBandwidthLimit: bytes/s a replica writes (cgroup v2 hosts only).
	AnnotationReplicaWriteBandwidthLimit = "longhorn.io/replica-write-bandwidth-limit"
	// AnnotationReplicaReadIOPSLimit: read operations/s of a replica on its disk.
	AnnotationReplicaReadIOPSLimit = "longhorn.io/replica-read-iops-limit"
	// AnnotationReplicaWriteIOPSLimit: write operations/s (cgroup v2 hosts only).
	AnnotationReplicaWriteIOPSLimit = "longhorn.io/replica-write-iops-limit"
)

// ResourceLimitParameters maps each StorageClass parameter (and REST
// VolumeInput.resourceLimits key) to its Volume annotation.
var ResourceLimitParameters = map[string]string{
	"instanceCPULimit":           AnnotationInstanceCPULimit,
	"instanceMemoryLimit":        AnnotationInstanceMemoryLimit,
	"replicaReadBandwidthLimit":  AnnotationReplicaReadBandwidthLimit,
	"replicaWriteBandwidthLimit": AnnotationReplicaWriteBandwidthLimit,
	"replicaReadIOPSLimit":       AnnotationReplicaReadIOPSLimit,
	"replicaWriteIOPSLimit":      AnnotationReplicaWriteIOPSLimit,
}

// limitRule parses one annotation into the limits.
type limitRule struct {
	unit  string // what the value means, for messages
	least int64
	cpu   bool // a CPU quantity: milli-units
	set   func(l *cgroup.Limits, v int64)
}

var limitRules = map[string]limitRule{
	AnnotationInstanceCPULimit:           {"CPU (e.g. 500m)", cgroup.MinCPUMillis, true, func(l *cgroup.Limits, v int64) { l.CPUMillis = v }},
	AnnotationInstanceMemoryLimit:        {"bytes (e.g. 256Mi)", cgroup.MinMemoryBytes, false, func(l *cgroup.Limits, v int64) { l.MemoryBytes = v }},
	AnnotationReplicaReadBandwidthLimit:  {"bytes/s (e.g. 20Mi)", cgroup.MinBPS, false, func(l *cgroup.Limits, v int64) { l.ReadBPS = v }},
	AnnotationReplicaWriteBandwidthLimit: {"bytes/s (e.g. 20Mi)", cgroup.MinBPS, false, func(l *cgroup.Limits, v int64) { l.WriteBPS = v }},
	AnnotationReplicaReadIOPSLimit:       {"operations/s (e.g. 500)", cgroup.MinIOPS, false, func(l *cgroup.Limits, v int64) { l.ReadIOPS = v }},
	AnnotationReplicaWriteIOPSLimit:      {"operations/s (e.g. 500)", cgroup.MinIOPS, false, func(l *cgroup.Limits, v int64) { l.WriteIOPS = v }},
}

// ParseResourceLimits reads a volume's limit annotations. An unknown
// longhorn.io/...-limit annotation (a typo would be a limit nothing acts
// on), a malformed value or one below its bound is an error naming the
// annotation. Absent annotations are unlimited.
func ParseResourceLimits(annotations map[string]string) (cgroup.Limits, error) {
	var l cgroup.Limits
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r, ok := limitRules[k]
		if !ok {
			if strings.HasPrefix(k, "longhorn.io/") && strings.HasSuffix(k, "-limit") {
				return cgroup.Limits{}, fmt.Errorf("annotation %s: unknown resource limit; known: %s", k, strings.Join(knownLimitAnnotations(), ", "))
			}
			continue
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(annotations[k]))
		if err != nil {
			return cgroup.Limits{}, fmt.Errorf("annotation %s: %q is not a quantity of %s", k, annotations[k], r.unit)
		}
		v := q.Value()
		if r.cpu {
			v = q.MilliValue()
		} else if q.CmpInt64(v) != 0 {
			return cgroup.Limits{}, fmt.Errorf("annotation %s: %q is not a whole number of %s", k, annotations[k], r.unit)
		}
		if v < r.least {
			least := fmt.Sprint(r.least)
			if r.cpu {
				least = fmt.Sprintf("%dm", r.least)
			}
			return cgroup.Limits{}, fmt.Errorf("annotation %s: %q is below the smallest limit %s %s", k, annotations[k], least, r.unit)
		}
		if r.cpu && v > cgroup.MaxCPUMillis {
			return cgroup.Limits{}, fmt.Errorf("annotation %s: %q is above the largest limit %d CPUs", k, annotations[k], cgroup.MaxCPUMillis/1000)
		}
		r.set(&l, v)
	}
	return l, nil
}

func knownLimitAnnotations() []string {
	out := make([]string, 0, len(limitRules))
	for k := range limitRules {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ResourceLimitAnnotations turns StorageClass parameters (or REST
// resourceLimits) into the Volume annotations, validated: the error names
// the parameter. Parameters that are not resource limits are ignored.
func ResourceLimitAnnotations(params map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for p, v := range params {
		if a, ok := ResourceLimitParameters[p]; ok && strings.TrimSpace(v) != "" {
			out[a] = strings.TrimSpace(v)
			if _, err := ParseResourceLimits(map[string]string{a: out[a]}); err != nil {
				return nil, fmt.Errorf("parameter %s: %w", p, err)
			}
		}
	}
	return out, nil
}

// EngineLimits are the limits of a volume's engine process (CPU and memory).
func EngineLimits(l cgroup.Limits) cgroup.Limits {
	return cgroup.Limits{CPUMillis: l.CPUMillis, MemoryBytes: l.MemoryBytes}
}

// ReplicaLimits are the limits of a replica process whose data is in dataDir.
func ReplicaLimits(l cgroup.Limits, dataDir string) cgroup.Limits {
	if l.HasIO() {
		l.IOPath = dataDir
	}
	return l
}

package webhook

import (
	"strings"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func TestValidateResourceLimits(t *testing.T) {
	cases := []struct {
		name string
		ann  map[string]string
		v2   bool
		want string // "" = accepted; else a part of the message
	}{
		{"none", nil, false, ""},
		{"all v1 limits", map[string]string{types.AnnotationInstanceCPULimit: "500m", types.AnnotationInstanceMemoryLimit: "256Mi",
			types.AnnotationReplicaReadBandwidthLimit: "20Mi", types.AnnotationReplicaReadIOPSLimit: "500"}, false, ""},
		{"cpu not a quantity", map[string]string{types.AnnotationInstanceCPULimit: "half"}, false, `annotation longhorn.io/instance-cpu-limit: "half" is not a quantity of CPU`},
		{"cpu too small", map[string]string{types.AnnotationInstanceCPULimit: "1m"}, false, "below the smallest limit 10m"},
		{"memory too small", map[string]string{types.AnnotationInstanceMemoryLimit: "1Mi"}, false, "longhorn.io/instance-memory-limit"},
		{"fractional iops", map[string]string{types.AnnotationReplicaReadIOPSLimit: "10.5"}, false, "not a whole number of operations/s"},
		{"typo", map[string]string{"longhorn.io/replica-read-bandwith-limit": "20Mi"}, false, "unknown resource limit"},
		{"v2 volume", map[string]string{types.AnnotationInstanceCPULimit: "1"}, true, "dataEngine v1 volumes only"},
		{"other annotation", map[string]string{"longhorn.io/last-applied-tolerations": "x"}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := validVolume()
			v.Annotations = tc.ann
			if tc.v2 {
				v.Spec.DataEngine = longhorn.DataEngineTypeV2
			}
			err := validateResourceLimits(v)
			if tc.want == "" {
				checkField(t, err, "")
				return
			}
			checkField(t, err, "metadata.annotations")
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}

func TestWriteLimitsRefusedOnCgroupV1(t *testing.T) {
	if hostCgroupVersion() != 1 {
		t.Skipf("host cgroup version %d", hostCgroupVersion())
	}
	v := validVolume()
	v.Annotations = map[string]string{types.AnnotationReplicaWriteBandwidthLimit: "10Mi"}
	err := validateVolume(v)
	checkField(t, err, "metadata.annotations")
	if !strings.Contains(err.Error(), "this node runs cgroup v1") {
		t.Fatal(err)
	}
}

func TestLimitChangeRefusedWhileAttached(t *testing.T) {
	old := validVolume()
	old.Status.State = longhorn.VolumeStateAttached
	v := old.DeepCopy()
	v.Annotations = map[string]string{types.AnnotationInstanceCPULimit: "500m"}
	err := validateVolumeUpdate(old, v)
	checkField(t, err, "metadata.annotations")
	if !strings.Contains(err.Error(), "cannot change while the volume is attached: detach it first") {
		t.Fatal(err)
	}
	old.Status.State = longhorn.VolumeStateDetached
	checkField(t, validateVolumeUpdate(old, v), "")
}

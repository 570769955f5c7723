package controller

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// A replica of a volume with resource limits runs with
// --disable-direct-read: an engine reading its files itself would escape
// the replica's cgroup limits. Without limits it offers direct reads.
func TestReplicaWithLimitsDisablesDirectReads(t *testing.T) {
	for _, c := range []struct {
		ann  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{types.AnnotationReplicaReadBandwidthLimit: "8Mi"}, true},
		{map[string]string{types.AnnotationInstanceCPULimit: "500m"}, true},
	} {
		vol := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "vol", Namespace: testNS, Annotations: c.ann}}
		f := newFixture(t, append(readyNode("n1"), vol)...)
		f.settle()
		r := testReplica("r-1", longhorn.InstanceStateRunning)
		im := &longhorn.InstanceManager{Status: longhorn.InstanceManagerStatus{IP: "10.0.0.1"}}
		spec, err := fixtureController[*ReplicaController](f).processSpec(r, im)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(spec.Args, "--disable-direct-read"); got != c.want {
			t.Fatalf("annotations %v: args %v, want --disable-direct-read %v", c.ann, spec.Args, c.want)
		}
	}
}

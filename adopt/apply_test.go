package adopt

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
)

// TestApply: the Volume ends with its replica count and without the
// annotation, its Replicas owned by it; a second run over the same
// directories creates nothing.
func TestApply(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset()
	tgt := Target{Namespace: "ns", Node: "n1", DiskPath: "/var/lib/longhorn", DiskUUID: "u1", Now: "2026-12-01T00:00:00Z"}
	found := []Found{{Dir: "v-0000000a", Volume: "v", Size: 1 << 20}, {Dir: "v-0000000b", Volume: "v", Size: 1 << 20}}
	for run := 0; run < 2; run++ {
		c, err := Load(ctx, cs, "ns")
		if err != nil {
			t.Fatal(err)
		}
		p := MakePlan(found, c, tgt)
		if run == 1 && (len(p.Volumes) != 0 || len(p.Skipped) != 2) {
			t.Fatalf("second run plans %+v", p)
		}
		if err := Apply(ctx, cs, p, tgt); err != nil {
			t.Fatal(err)
		}
	}
	v, err := cs.LonghornV1beta2().Volumes("ns").Get(ctx, "v", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Annotations[Annotation]; ok || v.Spec.NumberOfReplicas != 2 || v.Spec.Size != 1<<20 {
		t.Fatalf("volume %+v", v)
	}
	rl, err := cs.LonghornV1beta2().Replicas("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(rl.Items) != 2 {
		t.Fatalf("replicas %v %v", rl, err)
	}
	for _, r := range rl.Items {
		if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].Name != "v" || r.Spec.DataEngine != longhorn.DataEngineTypeV1 {
			t.Fatalf("replica %s: %+v", r.Name, r.ObjectMeta)
		}
	}
}

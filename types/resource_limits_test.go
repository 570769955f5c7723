package types

import (
	"strings"
	"testing"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
)

func TestParseResourceLimits(t *testing.T) {
	l, err := ParseResourceLimits(map[string]string{
		AnnotationInstanceCPULimit: "1.5", AnnotationInstanceMemoryLimit: "256Mi",
		AnnotationReplicaReadBandwidthLimit: "20Mi", AnnotationReplicaWriteBandwidthLimit: "10M",
		AnnotationReplicaReadIOPSLimit: "500", AnnotationReplicaWriteIOPSLimit: "1k", "unrelated": "x",
	})
	want := cgroup.Limits{CPUMillis: 1500, MemoryBytes: 256 << 20, ReadBPS: 20 << 20, WriteBPS: 10_000_000, ReadIOPS: 500, WriteIOPS: 1000}
	if err != nil || l != want {
		t.Fatalf("= %+v, %v; want %+v", l, err, want)
	}
	if e := EngineLimits(l); e != (cgroup.Limits{CPUMillis: 1500, MemoryBytes: 256 << 20}) {
		t.Fatalf("engine limits %+v", e)
	}
	if r := ReplicaLimits(l, "/d"); r.IOPath != "/d" || r.ReadBPS != 20<<20 {
		t.Fatalf("replica limits %+v", r)
	}
	if r := ReplicaLimits(cgroup.Limits{CPUMillis: 100}, "/d"); r.IOPath != "" {
		t.Fatalf("no I/O limit, IOPath %q", r.IOPath)
	}
	for ann, want := range map[string]string{
		AnnotationInstanceCPULimit + "=5m":              "below the smallest limit 10m",
		AnnotationReplicaReadBandwidthLimit + "=fast":   `"fast" is not a quantity of bytes/s`,
		AnnotationReplicaReadIOPSLimit + "=1.5":         "not a whole number",
		"longhorn.io/instance-cpus-limit=1":             "unknown resource limit; known: longhorn.io/instance-cpu-limit",
		AnnotationInstanceMemoryLimit + "=1000":         "below the smallest limit 16777216 bytes",
		AnnotationReplicaWriteBandwidthLimit + "=-10Mi": "below the smallest limit",
	} {
		k, v, _ := strings.Cut(ann, "=")
		if _, err := ParseResourceLimits(map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), k) {
			t.Errorf("%s: %v, want %q naming the annotation", ann, err, want)
		}
	}
	a, err := ResourceLimitAnnotations(map[string]string{"replicaReadBandwidthLimit": " 8Mi ", "numberOfReplicas": "1"})
	if err != nil || len(a) != 1 || a[AnnotationReplicaReadBandwidthLimit] != "8Mi" {
		t.Fatalf("annotations %v, %v", a, err)
	}
	if _, err := ResourceLimitAnnotations(map[string]string{"instanceCPULimit": "0.001"}); err == nil || !strings.HasPrefix(err.Error(), "parameter instanceCPULimit: ") {
		t.Fatalf("bad parameter: %v", err)
	}
}

// FuzzParseResourceLimits: annotation values come from any API client; a
// value is refused or within its bound, never a panic.
func FuzzParseResourceLimits(f *testing.F) {
	for _, s := range []string{"500m", "1", "256Mi", "1e3", "-1", "0.5", "9Ei", "", "1.5Gi", "10k"} {
		f.Add(AnnotationInstanceCPULimit, s)
		f.Add(AnnotationReplicaReadIOPSLimit, s)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		l, err := ParseResourceLimits(map[string]string{key: value})
		if err != nil {
			return
		}
		if err := l.Validate(); err != nil && !strings.Contains(err.Error(), "io_path") {
			t.Fatalf("%s=%q accepted as %+v, which Validate refuses: %v", key, value, l, err)
		}
	})
}

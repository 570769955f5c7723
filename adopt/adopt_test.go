package adopt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engine/replica"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func makeReplica(t *testing.T, root, dir string, size int64) {
	t.Helper()
	st, err := replica.Create(filepath.Join(root, ReplicasDir, dir), size, replica.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Snapshot("s1", true, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestScan(t *testing.T) {
	root := t.TempDir()
	makeReplica(t, root, "pvc-1-0a1b2c3d", 1<<20)
	makeReplica(t, root, "db-ffffffff", 2<<20)
	if err := os.MkdirAll(filepath.Join(root, ReplicasDir, "not-a-replica"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, ReplicasDir, "vol-12345678"), 0o755); err != nil {
		t.Fatal(err)
	}
	found, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 4 {
		t.Fatalf("found %+v", found)
	}
	byDir := map[string]Found{}
	for _, f := range found {
		byDir[f.Dir] = f
	}
	if f := byDir["pvc-1-0a1b2c3d"]; f.Problem != "" || f.Volume != "pvc-1" || f.Size != 1<<20 || len(f.Snapshots) != 1 {
		t.Fatalf("pvc-1: %+v", f)
	}
	if f := byDir["not-a-replica"]; !strings.Contains(f.Problem, "not <volume>-<8 hex digits>") {
		t.Fatalf("not-a-replica: %+v", f)
	}
	if f := byDir["vol-12345678"]; !strings.Contains(f.Problem, "volume.meta") {
		t.Fatalf("empty directory: %+v", f)
	}
	if none, err := Scan(t.TempDir()); err != nil || none != nil {
		t.Fatalf("disk without replicas/: %v %v", none, err)
	}
}

func TestMakePlan(t *testing.T) {
	tgt := Target{Namespace: "longhorn-system", Node: "n1", DiskPath: "/var/lib/longhorn", DiskUUID: "u1",
		Frontend: longhorn.VolumeFrontendBlockDev, Now: "2026-12-01T00:00:00Z"}
	ok := func(dir, vol string, size int64) Found {
		return Found{Dir: dir, Volume: vol, Size: size, Head: "volume-head-001.img"}
	}
	existing := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: longhorn.VolumeSpec{Size: 1 << 20}}
	existing.Status.State = longhorn.VolumeStateDetached
	attached := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "busy"}, Spec: longhorn.VolumeSpec{Size: 1 << 20}}
	attached.Status.State = longhorn.VolumeStateAttached
	used := &longhorn.Replica{Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "old", NodeID: "n1"},
		DataDirectoryName: "old-00000001"}}
	c := Cluster{Volumes: map[string]*longhorn.Volume{"old": existing, "busy": attached}, Replicas: []*longhorn.Replica{used}}
	found := []Found{
		ok("new-aaaaaaaa", "new", 4<<20), ok("new-bbbbbbbb", "new", 4<<20), ok("new-cccccccc", "new", 8<<20),
		ok("old-00000001", "old", 1<<20), ok("old-00000002", "old", 1<<20), ok("old-00000003", "old", 2<<20),
		ok("busy-00000001", "busy", 1<<20), {Dir: "bad", Problem: "broken"},
	}
	p := MakePlan(found, c, tgt)
	if len(p.Volumes) != 2 || p.Volumes[0].Name != "new" || p.Volumes[1].Name != "old" {
		t.Fatalf("volumes %+v", p.Volumes)
	}
	nv, ov := p.Volumes[0], p.Volumes[1]
	if !nv.Create || nv.Size != 4<<20 || len(nv.Replicas) != 2 || nv.NumberOfReplicas != 2 {
		t.Fatalf("new: %+v", nv)
	}
	if ov.Create || len(ov.Replicas) != 1 || ov.NumberOfReplicas != 2 || ov.Replicas[0].Spec.DataDirectoryName != "old-00000002" {
		t.Fatalf("old: %+v", ov)
	}
	r := nv.Replicas[0]
	if r.Name != "new-r-aaaaaaaa" || r.Spec.NodeID != "n1" || r.Spec.DiskID != "u1" || r.Spec.DiskPath != "/var/lib/longhorn" ||
		r.Spec.HealthyAt == "" || r.Spec.VolumeSize != 4<<20 || r.Spec.EngineName != "new-e-0" || r.Labels["longhornvolume"] != "new" {
		t.Fatalf("replica %+v", r)
	}
	skipped := map[string]string{}
	for _, s := range p.Skipped {
		skipped[s.Dir] = s.Reason
	}
	for dir, want := range map[string]string{"new-cccccccc": "differs from the other directories", "old-00000001": "already used",
		"old-00000003": "differs from volume old", "busy-00000001": "adopt into detached volumes only", "bad": "broken"} {
		if !strings.Contains(skipped[dir], want) {
			t.Errorf("%s: skipped %q, want %q", dir, skipped[dir], want)
		}
	}
	v := NewVolume(nv, tgt)
	if v.Annotations[Annotation] != "true" || v.Spec.Size != 4<<20 || v.Spec.NumberOfReplicas != 2 {
		t.Fatalf("volume %+v", v)
	}
	if only := MakePlan(found, c, Target{Node: "n1", Only: map[string]bool{"old": true}}); len(only.Volumes) != 1 {
		t.Fatalf("--volume old: %+v", only.Volumes)
	}
}

package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func TestRebuildUnderLimit(t *testing.T) {
	engine := func(modes map[string]longhorn.ReplicaMode) *longhorn.Engine {
		return &longhorn.Engine{Status: longhorn.EngineStatus{ReplicaModeMap: modes}}
	}
	// Two volumes, each with a replica rebuilding on n1, one rebuilding on n2.
	engines := []*longhorn.Engine{
		engine(map[string]longhorn.ReplicaMode{"a-r1": longhorn.ReplicaModeRW, "a-r2": longhorn.ReplicaModeWO, "a-r3": longhorn.ReplicaModeWO}),
		engine(map[string]longhorn.ReplicaMode{"b-r1": longhorn.ReplicaModeWO, "b-r2": longhorn.ReplicaModeERR}),
	}
	nodes := map[string]string{"a-r1": "n1", "a-r2": "n1", "a-r3": "n2", "b-r1": "n1", "b-r2": "n1"}
	nodeOf := func(r string) string { return nodes[r] }
	cases := []struct {
		name  string
		node  string
		limit int64
		want  bool
	}{
		{"limit 0 disables rebuilding", "n3", 0, false},
		{"negative limit disables rebuilding", "n3", -1, false},
		{"idle node, limit 1", "n3", 1, true},
		{"n1 has 2 rebuilding, limit 2", "n1", 2, false},
		{"n1 has 2 rebuilding, limit 3", "n1", 3, true},
		{"n2 has 1 rebuilding, limit 1", "n2", 1, false},
		{"n2 has 1 rebuilding, default limit 5", "n2", 5, true},
		{"RW and ERR replicas do not count", "n1", 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rebuildUnderLimit(engines, nodeOf, tc.node, tc.limit); got != tc.want {
				t.Fatalf("rebuildUnderLimit(%s, %d) = %v, want %v", tc.node, tc.limit, got, tc.want)
			}
		})
	}
}

// The rebuild bandwidth limit follows Longhorn's resolution table: the
// volume's replicaRebuildingBandwidthLimit when above 0, else the setting
// (its "v1" entry or a plain value for a v1 volume; a "v2"-only value
// leaves v1 volumes unlimited, as in Longhorn).
func TestRebuildBandwidthLimitResolution(t *testing.T) {
	vol := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: testNS},
		Spec: longhorn.VolumeSpec{DataEngine: longhorn.DataEngineTypeV1}}
	f := newFixture(t, vol)
	ec := fixtureController[*EngineController](f)
	e := &longhorn.Engine{Spec: longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "v", DataEngine: longhorn.DataEngineTypeV1}}}
	cases := []struct {
		global string
		volume int64
		want   int64
	}{
		{"", 0, 0},
		{`{"v1":"0","v2":"0"}`, 0, 0},
		{`{"v1":"100","v2":"0"}`, 0, 100},
		{"100", 0, 100},
		{`{"v2":"100"}`, 0, 0},
		{`{"v1":"0"}`, 200, 200},
		{`{"v1":"100"}`, 200, 200},
		{"-5", 0, 0},
	}
	for _, tc := range cases {
		if tc.global != "" {
			f.setSetting(types.SettingNameReplicaRebuildingBandwidthLimit, tc.global)
		}
		v := f.volume("v")
		v.Spec.ReplicaRebuildingBandwidthLimit = tc.volume
		f.updateVolume(v)
		f.settle()
		req := ec.replicaAddRequest(f.ctx, e, "v-r-1", "10.0.0.1:10000")
		if req.BandwidthLimit != tc.want {
			t.Errorf("setting %q, volume %d: limit %d MB/s, want %d", tc.global, tc.volume, req.BandwidthLimit, tc.want)
		}
	}
}

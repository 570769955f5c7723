package controller

import (
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
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

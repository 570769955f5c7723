package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func newReplica() Replica { return Replica{Name: "new", VolumeSize: 10 * gib} }

func TestScheduleEviction(t *testing.T) {
	// One node with two disks. The only replica is evicting from d1: the node
	// is "unused after eviction", so even hard node anti-affinity lets the new
	// replica land on d2 of the same node.
	nodes := []Node{node("n1", "", disk("d1", 100), disk("d2", 100))}
	nodes[0].Disks[0].EvictionRequested = true
	ev := placed("r0", "n1", "d1")
	ev.EvictionRequested = true
	s := defaultSettings()
	d, ok, rs := Schedule(Input{Volume: vol(), Nodes: nodes, Replicas: []Replica{ev}, Settings: s, Now: now, Replica: newReplica()})
	if !ok || d.DiskUUID != "n1/d2" {
		t.Fatalf("got %+v ok=%v, want n1/d2 (reasons %v)", d, ok, rs)
	}
	// Same with zone hard: the zone only holds an evicting replica.
	s.ZoneSoftAntiAffinity = false
	if d, ok, rs := Schedule(Input{Volume: vol(), Nodes: nodes, Replicas: []Replica{ev}, Settings: s, Now: now, Replica: newReplica()}); !ok || d.DiskUUID != "n1/d2" {
		t.Fatalf("zone hard: got %+v ok=%v (reasons %v)", d, ok, rs)
	}
	// A non-evicting replica on the same node makes it used again.
	other := placed("r1", "n1", "d2")
	if _, ok, _ := Schedule(Input{Volume: vol(), Nodes: nodes, Replicas: []Replica{ev, other}, Settings: defaultSettings(), Now: now, Replica: newReplica()}); ok {
		t.Fatal("node with a non-evicting replica must count as used under hard node anti-affinity")
	}
	// An unused node is preferred over the evicting one.
	nodes = append(nodes, node("n2", "", disk("d1", 100)))
	if d, ok, _ := Schedule(Input{Volume: vol(), Nodes: nodes, Replicas: []Replica{ev}, Settings: defaultSettings(), Now: now, Replica: newReplica()}); !ok || d.NodeID != "n2" {
		t.Fatalf("got %+v, want n2", d)
	}
}

func TestScheduleHardNodeAffinityAndTopology(t *testing.T) {
	r := newReplica()
	r.HardNodeAffinity = "n2"
	d, ok, _ := Schedule(Input{Volume: vol(), Nodes: threeNodes(), Settings: defaultSettings(), Now: now, Replica: r})
	if !ok || d.NodeID != "n2" {
		t.Fatalf("hard affinity: got %+v", d)
	}
	r.HardNodeAffinity = "gone"
	_, ok, rs := Schedule(Input{Volume: vol(), Nodes: threeNodes(), Settings: defaultSettings(), Now: now, Replica: r})
	if ok || !slices.Contains(rs.Codes(), ReasonHardNodeAffinity) {
		t.Fatalf("missing affinity node: ok=%v codes %v", ok, rs.Codes())
	}

	nodes := []Node{node("n1", "a", disk("d1", 100)), node("n2", "b", disk("d1", 100))}
	nodes[1].Region = "r1"
	v := vol()
	v.TopologyRequirement = []TopologyTerm{{Zone: "b", Region: "r1"}}
	d, ok, _ = Schedule(Input{Volume: v, Nodes: nodes, Settings: defaultSettings(), Now: now, Replica: newReplica()})
	if !ok || d.NodeID != "n2" {
		t.Fatalf("topology: got %+v", d)
	}
	v.TopologyRequirement = []TopologyTerm{{Zone: "c"}}
	_, ok, rs = Schedule(Input{Volume: v, Nodes: nodes, Settings: defaultSettings(), Now: now, Replica: newReplica()})
	if ok || !slices.Contains(rs.Codes(), ReasonTopologyNotSatisfied) {
		t.Fatalf("no node in zone c: ok=%v codes %v", ok, rs.Codes())
	}
}

func TestScheduleDataLocalityAndBalance(t *testing.T) {
	// n1 has the most free space, so balance picks it; best-effort locality
	// with the volume attached to n3 picks n3 instead.
	nodes := []Node{node("n1", "", disk("d1", 300)), node("n2", "", disk("d1", 100)), node("n3", "", disk("d1", 100))}
	d, _, _ := Schedule(Input{Volume: vol(), Nodes: nodes, Settings: defaultSettings(), Now: now, Replica: newReplica()})
	if d.NodeID != "n1" {
		t.Fatalf("balance: got %s, want n1 (most free)", d.NodeID)
	}
	v := vol()
	v.DataLocality, v.NodeID = DataLocalityBestEffort, "n3"
	d, _, _ = Schedule(Input{Volume: v, Nodes: nodes, Settings: defaultSettings(), Now: now, Replica: newReplica()})
	if d.NodeID != "n3" {
		t.Fatalf("locality: got %s, want n3", d.NodeID)
	}
	// A healthy replica already local: back to balance.
	d, _, _ = Schedule(Input{Volume: v, Nodes: nodes, Replicas: []Replica{placed("r0", "n3", "d1")}, Settings: defaultSettings(), Now: now, Replica: newReplica()})
	if d.NodeID != "n1" {
		t.Fatalf("locality satisfied: got %s, want n1", d.NodeID)
	}
	// Within a node the disk that keeps disks balanced wins.
	multi := []Node{node("n1", "", disk("d1", 100), disk("d2", 200))}
	d, _, _ = Schedule(Input{Volume: vol(), Nodes: multi, Settings: defaultSettings(), Now: now, Replica: newReplica()})
	if d.DiskUUID != "n1/d2" || d.DiskPath != "/data/d2" || d.DiskName != "d2" {
		t.Fatalf("disk balance: got %+v, want n1/d2", d)
	}
}

func TestScheduleCountsReplicasOfThisCycle(t *testing.T) {
	// A 30 GiB disk with 100 % over-provisioning takes 3 x 10 GiB. Replicas
	// placed in this cycle are not in scheduledReplica yet but still count.
	s := defaultSettings()
	s.NodeSoftAntiAffinity = true
	s.MinimalAvailablePercentage = 0
	got, rs := placeN(Input{Volume: vol(), Nodes: []Node{node("n1", "", disk("d1", 30))}, Settings: s, Now: now}, 4)
	if !slices.Equal(got, []string{"n1", "n1", "n1", ""}) {
		t.Fatalf("got %v, want three then a failure (reasons %v)", got, rs)
	}
	if !slices.Contains(rs.Codes(), ReasonInsufficientStorage) {
		t.Fatalf("codes %v", rs.Codes())
	}
}

func TestScheduleRefusals(t *testing.T) {
	r := newReplica()
	r.NodeID = "n1"
	if _, ok, rs := Schedule(Input{Volume: vol(), Nodes: threeNodes(), Settings: defaultSettings(), Now: now, Replica: r}); ok || rs.Summary() != ReasonReplicaAlreadyScheduled {
		t.Fatalf("already scheduled: ok=%v %q", ok, rs.Summary())
	}
	r = newReplica()
	r.FailedAt = now
	if _, ok, rs := Schedule(Input{Volume: vol(), Nodes: threeNodes(), Settings: defaultSettings(), Now: now, Replica: r}); ok || rs.Summary() != ReasonUnusedFailedReplica {
		t.Fatalf("never-healthy failed replica: ok=%v %q", ok, rs.Summary())
	}
	if _, ok, rs := Schedule(Input{Volume: vol(), Settings: defaultSettings(), Now: now, Replica: newReplica()}); ok || rs.Summary() != ReasonNodeUnavailable {
		t.Fatalf("no nodes: ok=%v %q", ok, rs.Summary())
	}
	v := vol()
	v.Size = MaxExt4VolumeSize + 1
	big := []Node{node("n1", "", disk("d1", 100000))}
	if _, ok, rs := Schedule(Input{Volume: v, Nodes: big, Settings: defaultSettings(), Now: now, Replica: newReplica()}); ok || !slices.Contains(rs.Codes(), ReasonIncompatibleVolumeSize) {
		t.Fatalf("ext4 limit: ok=%v %v", ok, rs.Codes())
	}
	v = vol()
	v.DataEngine = DataEngineV2
	blk := node("n1", "", disk("d1", 100))
	blk.Disks[0].Type = DiskTypeBlock
	if _, ok, rs := Schedule(Input{Volume: v, Nodes: []Node{blk}, Settings: defaultSettings(), Now: now, Replica: newReplica()}); !ok {
		t.Fatalf("v2 on a block disk: %v", rs)
	}
}

func TestScheduleFailedReplicaOccupancy(t *testing.T) {
	// Two nodes; a failed but reusable replica sits on n1, a healthy one on n2.
	failed := placed("r0", "n1", "d1")
	failed.FailedAt = now.Add(-2 * time.Minute)
	healthy := placed("r1", "n2", "d1")
	nodes := threeNodes()[:2]
	cases := []struct {
		name     string
		mutate   func(*Replica, *Volume)
		wantNode string
	}{
		{"reusable failed replica still occupies its node", nil, ""},
		{"degraded and wait elapsed: node is free", func(r *Replica, v *Volume) {
			v.Robustness, v.LastDegradedAt = RobustnessDegraded, now.Add(-601*time.Second)
		}, "n1"},
		{"degraded, wait exactly elapsed: node is free", func(r *Replica, v *Volume) {
			v.Robustness, v.LastDegradedAt = RobustnessDegraded, now.Add(-600*time.Second)
		}, "n1"},
		{"degraded, still waiting: node occupied", func(r *Replica, v *Volume) {
			v.Robustness, v.LastDegradedAt = RobustnessDegraded, now.Add(-599*time.Second)
		}, ""},
		{"retried too often: never counts", func(r *Replica, v *Volume) { r.RebuildRetryCount = FailedReplicaMaxRetryCount }, "n1"},
		{"being deleted: never counts", func(r *Replica, v *Volume) { r.Deleting = true }, "n1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, v := failed, vol()
			if tc.mutate != nil {
				tc.mutate(&f, &v)
			}
			d, ok, rs := Schedule(Input{Volume: v, Nodes: nodes, Replicas: []Replica{f, healthy}, Settings: defaultSettings(), Now: now, Replica: newReplica()})
			if d.NodeID != tc.wantNode || ok != (tc.wantNode != "") {
				t.Fatalf("got %q ok=%v, want %q (reasons %v)", d.NodeID, ok, tc.wantNode, rs)
			}
		})
	}
}

func TestReasonsSummary(t *testing.T) {
	rs := Reasons{{Code: ReasonTagsNotFulfilled, Detail: "x"}, {Code: ReasonInsufficientStorage, Detail: "y"}, {Code: ReasonTagsNotFulfilled, Detail: "z"}}
	if got, want := rs.Summary(), "insufficient storage;tags not fulfilled"; got != want {
		t.Fatalf("Summary = %q, want %q", got, want)
	}
	if s := (Reason{Node: "n1", Disk: "d1", Code: "c", Detail: "d"}).String(); s != "n1/d1: c: d" {
		t.Fatalf("String = %q", s)
	}
	want := "insufficient storage;tags not fulfilled (tags not fulfilled: x; insufficient storage: y; tags not fulfilled: z)"
	if got := append(rs, rs[0]).Message(); got != want {
		t.Fatalf("Message = %q, want %q (duplicates dropped)", got, want)
	}
	var many Reasons
	for i := range MaxMessageDetails + 3 {
		many = append(many, Reason{Node: fmt.Sprintf("n%d", i), Code: ReasonNodeUnavailable, Detail: "down"})
	}
	if got := many.Message(); !strings.HasSuffix(got, "n5: nodes are unavailable: down; and 3 more)") {
		t.Fatalf("Message = %q", got)
	}
	if got := (Reasons{}).Message(); got != "" {
		t.Fatalf("empty Message = %q", got)
	}
}

func TestScheduleOverCommittedFallsBackToMostUsable(t *testing.T) {
	// With 300 % over-provisioning both disks accept the replica, but neither
	// has 10 GiB of usable (available - reserved - scheduled) space left, so
	// the balance score cannot choose and the disk with the most
	// available-minus-reserved space wins.
	s := defaultSettings()
	s.OverProvisioningPercentage = 300
	nodes := []Node{node("n1", "", disk("d1", 100)), node("n2", "", disk("d1", 100))}
	nodes[0].Disks[0].StorageScheduled, nodes[1].Disks[0].StorageScheduled = 95*gib, 95*gib
	nodes[1].Disks[0].StorageAvailable = 90 * gib
	d, ok, rs := Schedule(Input{Volume: vol(), Nodes: nodes, Settings: s, Now: now, Replica: newReplica()})
	if !ok || d.NodeID != "n1" {
		t.Fatalf("got %+v ok=%v, want n1 (reasons %v)", d, ok, rs)
	}
}

func TestScheduleAutoBalanceBestEffort(t *testing.T) {
	// Under replica-auto-balance best-effort a used node counts as unused, so
	// hard node anti-affinity no longer blocks a third replica on two nodes.
	s := defaultSettings()
	s.ReplicaAutoBalance = ReplicaAutoBalanceBestEffort
	got, rs := placeN(Input{Volume: vol(), Nodes: threeNodes()[:2], Settings: s, Now: now}, 3)
	if got[2] == "" {
		t.Fatalf("got %v (reasons %v)", got, rs)
	}
}

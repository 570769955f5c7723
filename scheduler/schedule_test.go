package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// disk builds an empty, schedulable filesystem disk of maxGiB GiB.
func disk(name string, maxGiB int64) Disk {
	return Disk{Name: name, Path: "/data/" + name, Type: DiskTypeFilesystem, FSType: "ext4",
		AllowScheduling: true, Ready: true, Schedulable: true,
		StorageMaximum: maxGiB * gib, StorageAvailable: maxGiB * gib}
}

// node builds a ready, schedulable node; disk UUIDs become "<node>/<disk>".
func node(name, zone string, disks ...Disk) Node {
	for i := range disks {
		if disks[i].UUID == "" {
			disks[i].UUID = name + "/" + disks[i].Name
		}
	}
	return Node{Name: name, Zone: zone, Ready: true, Schedulable: true, AllowScheduling: true,
		InstanceManagerReady: true, EngineImageReady: true, Disks: disks}
}

func defaultSettings() Settings {
	return Settings{ZoneSoftAntiAffinity: true, DiskSoftAntiAffinity: true,
		OverProvisioningPercentage: 100, MinimalAvailablePercentage: 25,
		AllowEmptyNodeSelectorVolume: true, AllowEmptyDiskSelectorVolume: true,
		ReplenishmentWaitInterval: 600 * time.Second}
}

func vol() Volume {
	return Volume{Name: "vol", Size: 10 * gib, DataEngine: DataEngineV1}
}

// placed is a healthy replica already on a disk.
func placed(name, nodeName, diskName string) Replica {
	return Replica{Name: name, NodeID: nodeName, DiskID: nodeName + "/" + diskName, VolumeSize: 10 * gib,
		HealthyAt: now.Add(-time.Hour), Active: true, InstanceManagerRunning: true}
}

func threeNodes() []Node {
	return []Node{node("n1", "", disk("d1", 100)), node("n2", "", disk("d1", 100)), node("n3", "", disk("d1", 100))}
}

// placeN schedules n new replicas one after the other, as the volume
// controller does in one cycle, and returns the chosen nodes ("" = failed)
// and the reasons of the last attempt.
func placeN(in Input, n int) ([]string, Reasons) {
	var got []string
	var last Reasons
	for i := range n {
		in.Replica = Replica{Name: fmt.Sprintf("vol-r-%d", i), VolumeSize: in.Volume.Size, Active: true}
		d, ok, rs := Schedule(in)
		last = rs
		if !ok {
			got = append(got, "")
			continue
		}
		got = append(got, d.NodeID)
		r := in.Replica
		r.NodeID, r.DiskID = d.NodeID, d.DiskUUID
		in.Replicas = append(in.Replicas, r)
	}
	return got, last
}

func TestScheduleAntiAffinity(t *testing.T) {
	twoNodes := func() []Node { return threeNodes()[:2] }
	cases := []struct {
		name      string
		nodes     []Node
		set       func(*Settings)
		want      []string
		wantCodes []string
	}{
		{"three replicas three nodes", threeNodes(), nil, []string{"n1", "n2", "n3"}, nil},
		{"hard node anti-affinity 3 replicas 2 nodes", twoNodes(), nil,
			[]string{"n1", "n2", ""}, []string{ReasonSchedulingFailed}},
		{"soft node anti-affinity 3 replicas 2 nodes", twoNodes(), func(s *Settings) { s.NodeSoftAntiAffinity = true },
			[]string{"n1", "n2", "n1"}, nil},
		{"soft node, hard disk, one disk per node", twoNodes(), func(s *Settings) {
			s.NodeSoftAntiAffinity, s.DiskSoftAntiAffinity = true, false
		}, []string{"n1", "n2", ""}, []string{ReasonSchedulingFailed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSettings()
			if tc.set != nil {
				tc.set(&s)
			}
			got, rs := placeN(Input{Volume: vol(), Nodes: tc.nodes, Settings: s, Now: now}, len(tc.want))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("placement %v, want %v (reasons %v)", got, tc.want, rs)
			}
			for _, c := range tc.wantCodes {
				if !slices.Contains(rs.Codes(), c) {
					t.Errorf("summary %q lacks %q", rs.Summary(), c)
				}
			}
		})
	}
}

func TestScheduleZones(t *testing.T) {
	// n1, n2 in zone a; n3 in zone b; n4 in zone "" (the empty zone is one zone).
	nodes := func() []Node {
		return []Node{node("n1", "a", disk("d1", 100)), node("n2", "a", disk("d1", 100)),
			node("n3", "b", disk("d1", 100)), node("n4", "", disk("d1", 100))}
	}
	cases := []struct {
		name     string
		existing []Replica
		set      func(*Settings)
		want     string
	}{
		{"unused zone preferred over unused node in used zone", []Replica{placed("r0", "n1", "d1")}, nil, "n3"},
		{"empty zone counts as a zone", []Replica{placed("r0", "n1", "d1"), placed("r1", "n3", "d1")}, nil, "n4"},
		{"zone soft: unused node in a used zone", []Replica{placed("r0", "n1", "d1"), placed("r1", "n3", "d1"), placed("r2", "n4", "d1")}, nil, "n2"},
		{"zone hard: no zone left", []Replica{placed("r0", "n1", "d1"), placed("r1", "n3", "d1"), placed("r2", "n4", "d1")},
			func(s *Settings) { s.ZoneSoftAntiAffinity = false }, ""},
		{"zone hard overrides node soft", []Replica{placed("r0", "n1", "d1"), placed("r1", "n3", "d1"), placed("r2", "n4", "d1")},
			func(s *Settings) { s.ZoneSoftAntiAffinity, s.NodeSoftAntiAffinity = false, true }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSettings()
			if tc.set != nil {
				tc.set(&s)
			}
			in := Input{Volume: vol(), Nodes: nodes(), Replicas: tc.existing, Settings: s, Now: now,
				Replica: Replica{Name: "new", VolumeSize: 10 * gib}}
			d, ok, rs := Schedule(in)
			if d.NodeID != tc.want || ok != (tc.want != "") {
				t.Fatalf("got %q ok=%v, want %q (reasons %v)", d.NodeID, ok, tc.want, rs)
			}
			if !ok && !strings.Contains(rs.Summary(), ReasonSchedulingFailed) {
				t.Errorf("summary %q does not name the anti-affinity failure", rs.Summary())
			}
			if !ok && !strings.Contains(fmt.Sprint(rs), "zone anti-affinity is hard") {
				t.Errorf("reasons %v do not explain the zone rule", rs)
			}
		})
	}
}

func TestScheduleDiskAntiAffinity(t *testing.T) {
	two := func() []Node { return []Node{node("n1", "", disk("d1", 100), disk("d2", 100))} }
	existing := []Replica{placed("r0", "n1", "d1")}
	cases := []struct {
		name          string
		nodes         []Node
		diskSoft      bool
		want          string
		wantDisk      string
		wantNodeFails bool
	}{
		{"second disk of the same node under soft node anti-affinity", two(), false, "n1", "n1/d2", false},
		{"hard disk anti-affinity, one disk", []Node{node("n1", "", disk("d1", 100))}, false, "", "", true},
		{"soft disk anti-affinity, one disk", []Node{node("n1", "", disk("d1", 100))}, true, "n1", "n1/d1", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSettings()
			s.NodeSoftAntiAffinity, s.DiskSoftAntiAffinity = true, tc.diskSoft
			d, ok, rs := Schedule(Input{Volume: vol(), Nodes: tc.nodes, Replicas: existing, Settings: s, Now: now,
				Replica: Replica{Name: "new", VolumeSize: 10 * gib}})
			if d.NodeID != tc.want || d.DiskUUID != tc.wantDisk {
				t.Fatalf("got %+v ok=%v, want %s %s (reasons %v)", d, ok, tc.want, tc.wantDisk, rs)
			}
			if tc.wantNodeFails && !strings.Contains(fmt.Sprint(rs), "disk anti-affinity is hard") {
				t.Errorf("reasons %v do not explain the disk rule", rs)
			}
		})
	}
}

func TestScheduleNodeFilters(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(*Node)
		wantCode string
	}{
		{"scheduling disabled", func(n *Node) { n.AllowScheduling = false }, ReasonNodeUnavailable},
		{"cordoned", func(n *Node) { n.Schedulable = false }, ReasonNodeUnavailable},
		{"not ready", func(n *Node) { n.Ready = false }, ReasonNodeUnavailable},
		{"deleting", func(n *Node) { n.Deleting = true }, ReasonNodeUnavailable},
		{"instance manager down", func(n *Node) { n.InstanceManagerReady = false }, ReasonEngineImageNotReady},
		{"engine image not ready", func(n *Node) { n.EngineImageReady = false }, ReasonEngineImageNotReady},
		{"node evicting", func(n *Node) { n.EvictionRequested = true }, ReasonDiskUnavailable},
		{"disk scheduling disabled", func(n *Node) { n.Disks[0].AllowScheduling = false }, ReasonDiskUnavailable},
		{"disk evicting", func(n *Node) { n.Disks[0].EvictionRequested = true }, ReasonDiskUnavailable},
		{"disk pressure", func(n *Node) { n.Disks[0].Schedulable, n.Disks[0].SchedulableReason = false, "DiskPressure" }, ReasonDiskUnavailable},
		{"no disks", func(n *Node) { n.Disks = nil }, ReasonDiskUnavailable},
		{"block disk for v1", func(n *Node) { n.Disks[0].Type = DiskTypeBlock }, ReasonDiskUnavailable},
		{"disk too small", func(n *Node) { n.Disks[0].StorageMaximum, n.Disks[0].StorageAvailable = 5*gib, 5*gib }, ReasonInsufficientStorage},
		{"disk nearly full", func(n *Node) { n.Disks[0].StorageAvailable = 25 * gib }, ReasonInsufficientStorage},
		{"disk tag missing", func(n *Node) { n.Disks[0].Tags = []string{"hdd"} }, ReasonTagsNotFulfilled},
		{"node tag missing", func(n *Node) { n.Tags = []string{"edge"} }, ReasonTagsNotFulfilled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := node("n1", "", disk("d1", 100))
			tc.mutate(&n)
			v := vol()
			if strings.Contains(tc.name, "tag") {
				v.DiskSelector, v.NodeSelector = []string{"ssd"}, nil
				if strings.HasPrefix(tc.name, "node") {
					v.DiskSelector, v.NodeSelector = nil, []string{"fast"}
				}
			}
			_, ok, rs := Schedule(Input{Volume: v, Nodes: []Node{n}, Settings: defaultSettings(), Now: now,
				Replica: Replica{Name: "new", VolumeSize: v.Size}})
			if ok {
				t.Fatal("scheduled onto a rejected candidate")
			}
			if !slices.Contains(rs.Codes(), tc.wantCode) {
				t.Fatalf("codes %v lack %q; reasons %v", rs.Codes(), tc.wantCode, rs)
			}
			for _, r := range rs {
				if r.Detail == "" {
					t.Errorf("reason without detail: %+v", r)
				}
			}
		})
	}
}

func TestScheduleSelectorsAccept(t *testing.T) {
	cases := []struct {
		name        string
		nodeTags    []string
		diskTags    []string
		nodeSel     []string
		diskSel     []string
		allowEmpty  bool
		wantSuccess bool
	}{
		{"matching node and disk tags", []string{"fast", "zone1"}, []string{"ssd"}, []string{"fast"}, []string{"ssd"}, true, true},
		{"empty selectors, tagged, allowed", []string{"fast"}, []string{"ssd"}, nil, nil, true, true},
		{"empty selectors, tagged node, not allowed", []string{"fast"}, nil, nil, nil, false, false},
		{"empty selectors, tagged disk, not allowed", nil, []string{"ssd"}, nil, nil, false, false},
		{"empty selectors, untagged, not allowed", nil, nil, nil, nil, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := node("n1", "", disk("d1", 100))
			n.Tags, n.Disks[0].Tags = tc.nodeTags, tc.diskTags
			v := vol()
			v.NodeSelector, v.DiskSelector = tc.nodeSel, tc.diskSel
			s := defaultSettings()
			s.AllowEmptyNodeSelectorVolume, s.AllowEmptyDiskSelectorVolume = tc.allowEmpty, tc.allowEmpty
			_, ok, rs := Schedule(Input{Volume: v, Nodes: []Node{n}, Settings: s, Now: now, Replica: Replica{Name: "new", VolumeSize: v.Size}})
			if ok != tc.wantSuccess {
				t.Fatalf("ok=%v want %v (reasons %v)", ok, tc.wantSuccess, rs)
			}
			if !ok && !slices.Contains(rs.Codes(), ReasonTagsNotFulfilled) {
				t.Fatalf("codes %v lack tags not fulfilled", rs.Codes())
			}
		})
	}
}

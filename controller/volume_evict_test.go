package controller

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// setEviction sets spec.evictionRequested of node name (disk "" = the
// node, else that disk) and waits for the cache.
func (f *fixture) setEviction(name, disk string, on bool) {
	f.t.Helper()
	f.updateNodeSpec(name, func(spec *longhorn.NodeSpec) {
		if disk == "" {
			spec.EvictionRequested = on
			return
		}
		d := spec.Disks[disk]
		d.EvictionRequested = on
		spec.Disks[disk] = d
	})
}

// updateNodeSpec applies edit to node name's spec, updates it and waits until
// the informer cache holds the new spec (5 s, then the test fails).
func (f *fixture) updateNodeSpec(name string, edit func(*longhorn.NodeSpec)) {
	f.t.Helper()
	n, err := f.lh.LonghornV1beta2().Nodes(testNS).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	edit(&n.Spec)
	if _, err := f.lh.LonghornV1beta2().Nodes(testNS).Update(f.ctx, n, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := f.ds.GetNodeRO(f.ctx, name)
		if err == nil && reflect.DeepEqual(c.Spec, n.Spec) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatal("node cache did not catch up")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// replicaOn returns the volume's replica on node, or nil.
func (f *fixture) replicaOn(volume, node string) *longhorn.Replica {
	for _, r := range f.replicas(volume) {
		if r.Spec.NodeID == node {
			return r
		}
	}
	return nil
}

// Eviction of a node (and of a disk): the replica there is marked, a new
// replica is placed on the node without one, and the evicted replica is
// removed only once three healthy replicas run elsewhere; the volume never
// has fewer than three healthy replicas on the way.
func TestVolumeEvictionRebuildsElsewhereThenRemoves(t *testing.T) {
	for _, byDisk := range []bool{false, true} {
		f, modes := attachedHealthy(t, readyNode("n4")...)
		disk := ""
		if byDisk {
			disk = "disk"
		}
		f.setEviction("n2", disk, true)
		f.syncVolume("vol")
		old := f.replicaOn("vol", "n2")
		if old == nil || !old.Spec.EvictionRequested {
			t.Fatalf("byDisk=%v: replica on n2 not marked for eviction: %+v", byDisk, old)
		}
		f.syncVolume("vol")
		fresh := f.replicaOn("vol", "n4")
		if fresh == nil || len(f.replicas("vol")) != 4 {
			t.Fatalf("byDisk=%v: no replacement on n4 (%d replicas)", byDisk, len(f.replicas("vol")))
		}
		// Rebuilding: the evicted replica stays.
		f.runReplicas("vol")
		modes[fresh.Name] = longhorn.ReplicaModeWO
		f.runEngine("vol-e-0", modes)
		for range 3 {
			f.syncVolume("vol")
			if f.replicaOn("vol", "n2") == nil {
				t.Fatalf("byDisk=%v: evicted replica removed while its replacement rebuilds", byDisk)
			}
		}
		modes[fresh.Name] = longhorn.ReplicaModeRW
		f.runEngine("vol-e-0", modes)
		f.syncVolume("vol")
		f.syncVolume("vol")
		if r := f.replicaOn("vol", "n2"); r != nil && r.DeletionTimestamp == nil {
			t.Fatalf("byDisk=%v: evicted replica still there once three healthy replicas run elsewhere", byDisk)
		}
		if n := len(f.replicas("vol")); n != 3 {
			t.Fatalf("byDisk=%v: %d replicas after eviction, want 3", byDisk, n)
		}
		events := strings.Join(f.events(), "\n")
		for _, want := range []string{"EvictionRequested", "Evicting", "EvictedReplica"} {
			if !strings.Contains(events, want) {
				t.Errorf("byDisk=%v: no %s event in\n%s", byDisk, want, events)
			}
		}
	}
}

// With no node to move to, the evicted replica stays (the volume keeps its
// count) and no replica is removed.
func TestVolumeEvictionWaitsWithoutSpace(t *testing.T) {
	f, _ := attachedHealthy(t)
	f.setEviction("n2", "", true)
	var names []string
	for i := range 5 {
		f.syncVolume("vol")
		var now []string
		for _, r := range f.replicas("vol") {
			now = append(now, r.Name)
		}
		if i >= 2 && !reflect.DeepEqual(now, names) {
			t.Fatalf("replicas churn while waiting: %v then %v", names, now)
		}
		names = now
	}
	t.Logf("waiting with replicas %v", names)
	if r := f.replicaOn("vol", "n2"); r == nil || !r.Spec.EvictionRequested {
		t.Fatalf("evicted replica gone or unmarked with nowhere to go: %+v", r)
	}
	healthy := 0
	for _, r := range f.replicas("vol") {
		if r.Spec.NodeID != "" && r.DeletionTimestamp == nil {
			healthy++
		}
	}
	if healthy != 3 {
		t.Fatalf("%d placed replicas, want the 3", healthy)
	}
	// Cancelling the eviction clears the mark.
	f.setEviction("n2", "", false)
	f.syncVolume("vol")
	if r := f.replicaOn("vol", "n2"); r == nil || r.Spec.EvictionRequested {
		t.Fatalf("eviction cancelled, replica %+v", r)
	}
}

// A detached volume with a replica to evict gets a volume-eviction-controller
// attachment ticket (owner's node, frontend disabled), dropped once no
// replica is evicting.
func TestVolumeEvictionAttachesDetachedVolume(t *testing.T) {
	f := newFixture(t, threeNodeObjects(newVolume("vol", 3))...)
	for range 3 {
		f.syncVolume("vol")
	}
	id := longhorn.GetAttachmentTicketID(longhorn.AttacherTypeVolumeEvictionController, "vol")
	ticket := func() *longhorn.AttachmentTicket {
		va, err := f.lh.LonghornV1beta2().VolumeAttachments(testNS).Get(f.ctx, "vol", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return va.Spec.AttachmentTickets[id]
	}
	if ticket() != nil {
		t.Fatal("eviction ticket without eviction")
	}
	f.setEviction("n2", "", true)
	f.syncVolume("vol")
	tk := ticket()
	if tk == nil || tk.NodeID != f.volume("vol").Status.OwnerID || tk.Parameters[longhorn.AttachmentParameterDisableFrontend] != longhorn.TrueValue {
		t.Fatalf("eviction ticket %+v", tk)
	}
	f.setEviction("n2", "", false)
	waitFor(t, func() bool { return ticket() != nil })
	f.syncVolume("vol")
	if ticket() != nil {
		t.Fatal("eviction ticket kept after the eviction was cancelled")
	}
}

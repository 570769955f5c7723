package controller

import (
	"sort"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// doubledVolume creates a 2-replica volume while only n1 and n2 (soft
// anti-affinity on) or only n1 takes replicas, so one node holds two, then
// attaches it healthy on n1. closed names the nodes refusing scheduling at
// creation.
func doubledVolume(t *testing.T, balance string, closed ...string) (*fixture, map[string]longhorn.ReplicaMode) {
	t.Helper()
	objs := threeNodeObjects(newVolume("vol", 2), setting(types.SettingNameReplicaSoftAntiAffinity, "true"),
		setting(types.SettingNameReplicaAutoBalance, balance))
	for _, o := range objs {
		if n, ok := o.(*longhorn.Node); ok {
			for _, c := range closed {
				if n.Name == c {
					n.Spec.AllowScheduling = false
				}
			}
		}
	}
	f := newFixture(t, objs...)
	for range 3 {
		f.syncVolume("vol")
	}
	if k := f.nodeCounts()["n1"]; k != 2 {
		t.Fatalf("setup: replicas %v, want both on n1", f.replicaNodes("vol"))
	}
	return f, f.attachOn(t, "n1")
}

func (f *fixture) nodeCounts() map[string]int {
	out := map[string]int{}
	for _, n := range f.replicaNodes("vol") {
		out[n]++
	}
	return out
}

func sortedNodes(m map[string]int) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Replica auto-balance least-effort and best-effort: after a node joins
// (allows scheduling), a volume with two replicas on one node gets one on
// the new node, and once it is RW one of the doubled replicas goes.
func TestVolumeAutoBalanceAfterNodeJoins(t *testing.T) {
	for _, mode := range []string{"least-effort", "best-effort"} {
		t.Run(mode, func(t *testing.T) {
			f, modes := doubledVolume(t, mode, "n2", "n3")
			f.syncVolume("vol")
			if n := len(f.replicas("vol")); n != 2 {
				t.Fatalf("no node to balance to: %d replicas %v, want 2", n, f.replicaNodes("vol"))
			}
			f.setAllowScheduling("n2", true)
			f.syncVolume("vol")
			counts := f.nodeCounts()
			if len(f.replicas("vol")) != 3 || counts["n2"] != 1 {
				t.Fatalf("after n2 joins: replicas %v, want a third one on n2", f.replicaNodes("vol"))
			}
			f.rebuildBalanceReplica(t, modes)
			if got := sortedNodes(f.nodeCounts()); len(f.replicas("vol")) != 2 || len(got) != 2 || got[0] != "n1" || got[1] != "n2" {
				t.Fatalf("balanced: replicas %v, want one on n1 and one on n2", f.replicaNodes("vol"))
			}
		})
	}
}

// Balance never adds a replica to a node that already holds one (Longhorn
// bug #11189: best-effort balance broke node soft anti-affinity), and
// disabled never balances.
func TestVolumeAutoBalanceKeepsSoftAntiAffinity(t *testing.T) {
	for _, mode := range []string{"best-effort", "disabled"} {
		t.Run(mode, func(t *testing.T) {
			f, _ := doubledVolume(t, mode, "n2", "n3")
			f.setAllowScheduling("n2", mode == "disabled")
			f.syncVolume("vol")
			f.syncVolume("vol")
			if n := len(f.replicas("vol")); n != 2 {
				t.Fatalf("%d replicas %v, want 2 (nothing to gain)", n, f.replicaNodes("vol"))
			}
		})
	}
}

// zonedVolume is a 2-replica volume on n1 and n2 (zone-a) while n3
// (zone-b) refuses scheduling, attached healthy on n1; then n3 opens.
func zonedVolume(t *testing.T, balance string) (*fixture, map[string]longhorn.ReplicaMode) {
	t.Helper()
	objs := threeNodeObjects(newVolume("vol", 2), setting(types.SettingNameReplicaAutoBalance, balance))
	for _, o := range objs {
		if n, ok := o.(*longhorn.Node); ok {
			n.Status.Zone = map[string]string{"n1": "zone-a", "n2": "zone-a", "n3": "zone-b"}[n.Name]
			n.Spec.AllowScheduling = n.Name != "n3"
		}
	}
	f := newFixture(t, objs...)
	for range 3 {
		f.syncVolume("vol")
	}
	if c := f.nodeCounts(); c["n1"] != 1 || c["n2"] != 1 {
		t.Fatalf("setup: replicas %v, want one on n1 and one on n2", f.replicaNodes("vol"))
	}
	modes := f.attachOn(t, "n1")
	f.setAllowScheduling("n3", true)
	f.syncVolume("vol")
	return f, modes
}

// Best-effort balances over zones: with zone-b open, a volume whose two
// replicas are both in zone-a gets one on n3 (zone-b), then one of zone-a's
// goes: one replica per zone.
func TestVolumeAutoBalanceBestEffortZones(t *testing.T) {
	f, modes := zonedVolume(t, "best-effort")
	if c := f.nodeCounts(); len(f.replicas("vol")) != 3 || c["n3"] != 1 {
		t.Fatalf("after zone-b opens: replicas %v, want a third one on n3", f.replicaNodes("vol"))
	}
	f.rebuildBalanceReplica(t, modes)
	if c := f.nodeCounts(); len(f.replicas("vol")) != 2 || c["n3"] != 1 {
		t.Fatalf("balanced: replicas %v, want one in zone-a and the one on n3", f.replicaNodes("vol"))
	}
}

// Least-effort leaves replicas on distinct nodes alone even when they share
// a zone another zone could take.
func TestVolumeAutoBalanceLeastEffortIgnoresZones(t *testing.T) {
	f, _ := zonedVolume(t, "least-effort")
	f.syncVolume("vol")
	if n := len(f.replicas("vol")); n != 2 {
		t.Fatalf("%d replicas %v, want 2", n, f.replicaNodes("vol"))
	}
}

// rebuildBalanceReplica plays the replica and engine controllers until the
// replica that auto-balance added is RW in the engine (3 replicas), then
// waits for the volume controller to remove one of the two extra ones.
func (f *fixture) rebuildBalanceReplica(t *testing.T, modes map[string]longhorn.ReplicaMode) {
	t.Helper()
	f.runReplicas("vol")
	f.syncVolume("vol")
	f.syncVolume("vol")
	f.runReplicas("vol")
	f.syncVolume("vol")
	for name := range f.engine("vol-e-0").Spec.ReplicaAddressMap {
		modes[name] = longhorn.ReplicaModeRW
	}
	if len(modes) != 3 {
		t.Fatalf("engine replicas %v, want 3", f.engine("vol-e-0").Spec.ReplicaAddressMap)
	}
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	waitFor(t, func() bool { return len(f.replicas("vol")) == 2 })
	f.syncVolume("vol")
}

package scheduler

import (
	"sort"
	"time"
)

// Input is one request to place a replica.
type Input struct {
	Volume Volume
	// Replica is the replica to place; its NodeID must be empty.
	Replica Replica
	// Replicas are all replicas of the volume (Replica itself may be among
	// them), including ones placed earlier in the same cycle.
	Replicas []Replica
	Nodes    []Node
	Settings Settings
	Now      time.Time
}

// Schedule places in.Replica (Longhorn's ScheduleReplica). It returns the
// decision and true when a disk was found, and in every case the reasons each
// rejected node or disk was rejected. When nothing fits, Reasons.Summary() is
// the Scheduled=False condition message. The caller names the data directory
// (`<volume>-<8 hex>`); the scheduler only picks node and disk.
//
// Steps: schedulable nodes; hard node affinity, topology, instance manager
// and engine image readiness; usable disks; anti-affinity groups with the
// disk filters (type, size limit, capacity, tags); data locality best-effort;
// the balance-score choice.
func Schedule(in Input) (Decision, bool, Reasons) {
	rc := &collector{}
	if in.Replica.NodeID != "" {
		rc.add(in.Replica.NodeID, "", ReasonReplicaAlreadyScheduled, "replica %s is already on node %s", in.Replica.Name, in.Replica.NodeID)
		return Decision{}, false, rc.list
	}
	if in.Replica.HealthyAt.IsZero() && in.Replica.Failed() {
		rc.add("", "", ReasonUnusedFailedReplica, "replica %s failed before it was ever healthy", in.Replica.Name)
		return Decision{}, false, rc.list
	}
	cands := findDiskCandidates(in, rc)
	if len(cands) == 0 {
		return Decision{}, false, rc.list
	}
	if local := localDisks(in, cands); len(local) > 0 {
		cands = local
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].NodeID != cands[j].NodeID {
			return cands[i].NodeID < cands[j].NodeID
		}
		return cands[i].Name < cands[j].Name
	})
	d := selectBestDisk(cands, in.Replica.VolumeSize)
	return Decision{NodeID: d.NodeID, DiskName: d.Name, DiskUUID: d.UUID, DiskPath: d.Path}, true, rc.list
}

// findDiskCandidates is Longhorn's FindDiskCandidates: every disk the replica
// may legally go to, restricted to the most preferred anti-affinity group.
func findDiskCandidates(in Input, rc *collector) []candidateDisk {
	nodes := schedulableNodes(in.Nodes, rc)
	nodes = nodeCandidates(nodes, in.Replica, in.Volume, rc)
	if len(nodes) == 0 {
		return nil
	}
	req := diskRequest{
		volume:        in.Volume,
		replicas:      in.Replicas,
		settings:      in.Settings,
		checkCapacity: true,
	}
	return diskCandidates(nodes, usableDisks(nodes, rc), req, in.Now, rc)
}

// localDisks applies data locality best-effort: when the volume is attached
// and no healthy (not failed) replica is on the attached node yet, only the
// candidates on that node, if any, are kept.
func localDisks(in Input, cands []candidateDisk) []candidateDisk {
	local := in.Volume.NodeID
	if in.Volume.DataLocality != DataLocalityBestEffort || local == "" {
		return nil
	}
	for _, r := range in.Replicas {
		if r.NodeID == local && !r.Failed() {
			return nil
		}
	}
	var out []candidateDisk
	for _, d := range cands {
		if d.NodeID == local {
			out = append(out, d)
		}
	}
	return out
}

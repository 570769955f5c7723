package scheduler

import "time"

// IsPotentiallyReusable reports whether a failed replica might be reused by a
// delta rebuild later (Longhorn's IsPotentiallyReusableReplica): it failed,
// it has a node and a disk, it has been retried fewer than
// FailedReplicaMaxRetryCount times, and no eviction is requested.
func IsPotentiallyReusable(r Replica) bool {
	return r.Failed() && r.NodeID != "" && r.DiskID != "" &&
		r.RebuildRetryCount < FailedReplicaMaxRetryCount && !r.EvictionRequested
}

// ReuseInput asks which failed replica, if any, to rebuild in place.
type ReuseInput struct {
	Volume   Volume
	Replicas []Replica
	Nodes    []Node
	Settings Settings
	// HardNodeAffinity restricts reuse to replicas on that node (data
	// locality); empty means any node.
	HardNodeAffinity string
	// FastReplicaRebuild is fast-replica-rebuild-enabled for the volume's
	// data engine; v2 volumes reuse failed replicas only when it is on.
	FastReplicaRebuild bool
	Now                time.Time
}

// FindReusableReplica picks the failed replica to reuse (Longhorn's
// CheckAndReuseFailedReplica): among active replicas that are reusable now
// (see IsFailedReplicaReusable) and whose disk survives the anti-affinity
// groups, the one that failed last. It returns the replica's name and true, or
// "" and false with the reasons the candidates were rejected.
func FindReusableReplica(in ReuseInput) (string, bool, Reasons) {
	rc := &collector{}
	if in.Volume.DataEngine == DataEngineV2 && !in.FastReplicaRebuild {
		rc.add("", "", ReasonSchedulingFailed, "v2 volumes reuse failed replicas only with fast-replica-rebuild-enabled")
		return "", false, rc.list
	}
	var active []Replica
	for _, r := range in.Replicas {
		if r.Active {
			active = append(active, r)
		}
	}
	nodes := schedulableNodes(in.Nodes, &collector{})
	reusable := map[string][]Replica{} // node -> reusable replicas
	availNodes := map[string]Node{}
	availDisks := map[string]map[string]bool{}
	for _, r := range active {
		if ok, why := IsFailedReplicaReusable(r, in.Volume, nodes, in.Settings, in.HardNodeAffinity); !ok {
			if r.Failed() {
				rc.add(r.NodeID, r.DiskID, ReasonSchedulingFailed, "failed replica %s is not reusable: %s", r.Name, why)
			}
			continue
		}
		availNodes[r.NodeID] = nodes[r.NodeID]
		if availDisks[r.NodeID] == nil {
			availDisks[r.NodeID] = map[string]bool{}
		}
		availDisks[r.NodeID][r.DiskID] = true
		reusable[r.NodeID] = append(reusable[r.NodeID], r)
	}
	if len(availNodes) == 0 {
		return "", false, rc.list
	}
	req := diskRequest{volume: in.Volume, replicas: active, settings: in.Settings, ignoreFailed: true}
	var best *Replica
	for _, d := range diskCandidates(availNodes, availDisks, req, in.Now, rc) {
		for _, r := range reusable[d.NodeID] {
			if r.DiskID == d.UUID && (best == nil || r.FailedAt.After(best.FailedAt)) {
				best = &r
			}
		}
	}
	if best == nil {
		return "", false, rc.list
	}
	return best.Name, true, rc.list
}

// IsFailedReplicaReusable reports whether a failed replica can be rebuilt in
// place now (Longhorn's isFailedReplicaReusable): potentially reusable; on
// the hard-affinity node if one is given; its node schedulable with the engine
// image ready; its disk present by UUID, Ready, Schedulable (or unschedulable
// only for DiskPressure while not full), scheduling allowed, not evicting,
// tags matching the disk selector; and its instance manager running. The
// string says what failed.
func IsFailedReplicaReusable(r Replica, v Volume, schedulable map[string]Node, s Settings, hardNodeAffinity string) (bool, string) {
	if !IsPotentiallyReusable(r) {
		return false, "not potentially reusable (not failed, unplaced, retried too often or evicting)"
	}
	if hardNodeAffinity != "" && r.NodeID != hardNodeAffinity {
		return false, "not on the hard-affinity node " + hardNodeAffinity
	}
	n, ok := schedulable[r.NodeID]
	if !ok {
		return false, "node " + r.NodeID + " is not schedulable"
	}
	if !n.EngineImageReady {
		return false, "engine image not ready on node " + r.NodeID
	}
	d, ok := findDisk(n, r.DiskID)
	if !ok {
		return false, "disk " + r.DiskID + " not found on node " + r.NodeID
	}
	if !d.Ready {
		return false, "disk " + d.Name + " is not ready"
	}
	if !d.Schedulable && (d.SchedulableReason != "DiskPressure" || !IsDiskNotFull(capacityOf(d, s))) {
		return false, "disk " + d.Name + " is not schedulable"
	}
	if !d.AllowScheduling || d.EvictionRequested {
		return false, "disk " + d.Name + " does not allow scheduling or is evicting"
	}
	if !IsSelectorsInTags(d.Tags, v.DiskSelector, s.AllowEmptyDiskSelectorVolume) {
		return false, "disk " + d.Name + " tags do not match the disk selector"
	}
	if !r.InstanceManagerRunning {
		return false, "instance manager on node " + r.NodeID + " is not running"
	}
	return true, ""
}

func findDisk(n Node, uuid string) (Disk, bool) {
	for _, d := range n.Disks {
		if d.UUID == uuid {
			return d, true
		}
	}
	return Disk{}, false
}

// RequireNewReplica says when a new replica must be created after no failed
// replica was found reusable (Longhorn's RequireNewReplica). It returns 0 when
// a new replica is needed now: the volume is not degraded, a hard node
// affinity is requested, no failed replica is potentially reusable, a v2
// volume has fast rebuild off, or replica-replenishment-wait-interval has
// passed since lastDegradedAt. Otherwise it returns how long to wait before
// checking again, with one second added against clock skew.
func RequireNewReplica(in ReuseInput) time.Duration {
	if in.Volume.Robustness != RobustnessDegraded || in.HardNodeAffinity != "" {
		return 0
	}
	potential := false
	for _, r := range in.Replicas {
		if IsPotentiallyReusable(r) {
			potential = true
			break
		}
	}
	if !potential || (in.Volume.DataEngine == DataEngineV2 && !in.FastReplicaRebuild) {
		return 0
	}
	wait := timeToReplacement(in.Volume, in.Settings, in.Now)
	if wait > 0 {
		wait += time.Second
	}
	return wait
}

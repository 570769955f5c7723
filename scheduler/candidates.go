package scheduler

import (
	"fmt"
	"sort"
	"time"
)

// candidateDisk is a disk that passed every filter, with its node.
type candidateDisk struct {
	Disk
	NodeID string
}

// collector gathers rejection reasons without duplicates.
type collector struct {
	list Reasons
	seen map[Reason]bool
}

func (c *collector) add(node, disk, code, format string, args ...any) {
	r := Reason{Node: node, Disk: disk, Code: code, Detail: fmt.Sprintf(format, args...)}
	if c.seen == nil {
		c.seen = map[Reason]bool{}
	}
	if c.seen[r] {
		return
	}
	c.seen[r] = true
	c.list = append(c.list, r)
}

// schedulableNodes keeps the nodes a replica may go to at all (Longhorn's
// ListSchedulableNodes): not being deleted, Ready, Schedulable (False when
// cordoned and disable-scheduling-on-cordoned-node is on) and
// spec.allowScheduling.
func schedulableNodes(nodes []Node, rc *collector) map[string]Node {
	out := map[string]Node{}
	for _, n := range nodes {
		switch {
		case n.Deleting:
			rc.add(n.Name, "", ReasonNodeUnavailable, "node is being deleted")
		case !n.Ready:
			rc.add(n.Name, "", ReasonNodeUnavailable, "node is not ready")
		case !n.Schedulable:
			rc.add(n.Name, "", ReasonNodeUnavailable, "node condition Schedulable is not true (cordoned)")
		case !n.AllowScheduling:
			rc.add(n.Name, "", ReasonNodeUnavailable, "scheduling is disabled on the node (spec.allowScheduling=false)")
		default:
			out[n.Name] = n
		}
	}
	return out
}

// nodeCandidates applies the replica's hard node affinity, the volume's
// topology requirement and the readiness of the node's instance manager and
// engine image (Longhorn's getNodeCandidates).
func nodeCandidates(nodes map[string]Node, r Replica, v Volume, rc *collector) map[string]Node {
	if r.HardNodeAffinity != "" {
		n, ok := nodes[r.HardNodeAffinity]
		if !ok {
			rc.add(r.HardNodeAffinity, "", ReasonHardNodeAffinity, "replica must run on node %s, which is not schedulable", r.HardNodeAffinity)
			return nil
		}
		for name := range nodes {
			if name != n.Name {
				rc.add(name, "", ReasonHardNodeAffinity, "replica has hard node affinity to %s", n.Name)
			}
		}
		nodes = map[string]Node{n.Name: n}
	}
	if len(nodes) == 0 {
		rc.add("", "", ReasonNodeUnavailable, "no schedulable node for replica %s", r.Name)
		return nil
	}
	out := map[string]Node{}
	for _, name := range sortedKeys(nodes) {
		n := nodes[name]
		switch {
		case !matchesTopology(n, v.TopologyRequirement):
			rc.add(n.Name, "", ReasonTopologyNotSatisfied, "zone %q region %q match no topology term of the volume", n.Zone, n.Region)
		case !n.InstanceManagerReady:
			rc.add(n.Name, "", ReasonEngineImageNotReady, "instance manager on the node is not running")
		case !n.EngineImageReady:
			rc.add(n.Name, "", ReasonEngineImageNotReady, "engine image is not ready on the node")
		default:
			out[name] = n
		}
	}
	return out
}

// matchesTopology reports whether a node matches at least one term; an empty
// requirement matches every node.
func matchesTopology(n Node, terms []TopologyTerm) bool {
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		if (t.Zone == "" || t.Zone == n.Zone) && (t.Region == "" || t.Region == n.Region) {
			return true
		}
	}
	return false
}

// usableDisks returns, per node, the UUIDs of disks open to new replicas:
// scheduling allowed, no eviction requested on the disk or the node, and
// condition Schedulable true.
func usableDisks(nodes map[string]Node, rc *collector) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for name, n := range nodes {
		disks := map[string]bool{}
		for _, d := range n.Disks {
			switch {
			case !d.AllowScheduling:
				rc.add(n.Name, d.Name, ReasonDiskUnavailable, "scheduling is disabled on the disk")
			case d.EvictionRequested || n.EvictionRequested:
				rc.add(n.Name, d.Name, ReasonDiskUnavailable, "eviction is requested")
			case !d.Schedulable:
				rc.add(n.Name, d.Name, ReasonDiskUnavailable, "disk condition Schedulable is not true (%s)", d.SchedulableReason)
			default:
				disks[d.UUID] = true
			}
		}
		out[name] = disks
	}
	return out
}

// replenishingNow reports whether a degraded volume has waited
// replica-replenishment-wait-interval since lastDegradedAt, so that failed
// replicas that might come back are being replaced anyway.
func replenishingNow(v Volume, s Settings, now time.Time) bool {
	return v.Robustness == RobustnessDegraded && timeToReplacement(v, s, now) == 0
}

// timeToReplacement returns how long until a new replica should replace a
// potentially reusable failed one: lastDegradedAt + wait interval - now, or 0
// once that time has passed.
func timeToReplacement(v Volume, s Settings, now time.Time) time.Duration {
	next := v.LastDegradedAt.Add(s.ReplenishmentWaitInterval)
	if !now.Before(next) {
		return 0
	}
	return next.Sub(now)
}

// placement is where the volume's replicas already are.
type placement struct {
	usedNodes         map[string]bool
	usedZones         map[string]bool
	onlyEvictingNodes map[string]bool
	onlyEvictingZones map[string]bool
}

// currentPlacement finds the nodes and zones holding a replica of the volume
// (Longhorn's getCurrentNodesAndZones). Replicas being deleted never count;
// failed replicas count only when they may be reused, are not being replaced
// right now, and ignoreFailed is off. A node (zone) whose only replicas are
// evicting is "only evicting". Only nodes in `nodes` are considered; the
// empty zone is one zone.
func currentPlacement(replicas []Replica, nodes map[string]Node, ignoreFailed, replenishing bool) placement {
	p := placement{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}}
	for _, r := range replicas {
		if r.NodeID == "" || r.Deleting {
			continue
		}
		if r.Failed() && (ignoreFailed || !IsPotentiallyReusable(r) || replenishing) {
			continue
		}
		n, ok := nodes[r.NodeID]
		if !ok {
			continue
		}
		if r.EvictionRequested {
			if !p.usedNodes[n.Name] {
				p.onlyEvictingNodes[n.Name] = true
			}
			if !p.usedZones[n.Zone] {
				p.onlyEvictingZones[n.Zone] = true
			}
		} else {
			p.onlyEvictingNodes[n.Name] = false
			p.onlyEvictingZones[n.Zone] = false
		}
		p.usedNodes[n.Name] = true
		p.usedZones[n.Zone] = true
	}
	return p
}

// diskRequest carries what disk filtering needs besides the node.
type diskRequest struct {
	volume        Volume
	replicas      []Replica
	settings      Settings
	checkCapacity bool // false when reusing a failed replica
	ignoreFailed  bool
}

// filterNodeDisks checks each usable disk of a node against the data engine,
// the filesystem's size limit, capacity (counting replicas of this volume that
// sit on the disk but are not yet in its scheduledReplica) and the disk
// selector (Longhorn's filterNodeDisksForReplica).
func filterNodeDisks(n Node, uuids map[string]bool, req diskRequest, rc *collector) []candidateDisk {
	if len(uuids) == 0 {
		rc.add(n.Name, "", ReasonDiskUnavailable, "no schedulable disk on the node")
		return nil
	}
	var out []candidateDisk
	for _, d := range n.Disks {
		if !uuids[d.UUID] {
			continue
		}
		wantType := DiskTypeFilesystem
		if req.volume.DataEngine == DataEngineV2 {
			wantType = DiskTypeBlock
		}
		if d.Type != wantType {
			rc.add(n.Name, d.Name, ReasonDiskUnavailable, "disk type %s cannot hold a %s replica (needs %s)", d.Type, engineOrV1(req.volume.DataEngine), wantType)
			continue
		}
		if !IsSupportedVolumeSize(req.volume.DataEngine, d.FSType, req.volume.Size) {
			rc.add(n.Name, d.Name, ReasonIncompatibleVolumeSize, "volume size %d exceeds the %s limit %d", req.volume.Size, d.FSType, MaxExt4VolumeSize)
			continue
		}
		if req.checkCapacity {
			c := capacityOf(d, req.settings)
			c.StorageScheduled += pendingOnDisk(d, req.replicas)
			if ok, why := IsSchedulableToDisk(req.volume.Size, req.volume.ActualSize, c); !ok {
				rc.add(n.Name, d.Name, ReasonInsufficientStorage, "%s", why)
				continue
			}
		}
		if !IsSelectorsInTags(d.Tags, req.volume.DiskSelector, req.settings.AllowEmptyDiskSelectorVolume) {
			rc.add(n.Name, d.Name, ReasonTagsNotFulfilled, "disk tags %v do not match the disk selector %v", d.Tags, req.volume.DiskSelector)
			continue
		}
		out = append(out, candidateDisk{Disk: d, NodeID: n.Name})
	}
	return out
}

func engineOrV1(e DataEngine) DataEngine {
	if e == "" {
		return DataEngineV1
	}
	return e
}

// pendingOnDisk sums the sizes of the volume's replicas placed on the disk that
// its scheduledReplica does not list yet (placed earlier in the same cycle).
func pendingOnDisk(d Disk, replicas []Replica) int64 {
	var sum int64
	for _, r := range replicas {
		if r.DiskID != d.UUID || r.NodeID == "" {
			continue
		}
		if _, counted := d.ScheduledReplicas[r.Name]; !counted {
			sum += r.VolumeSize
		}
	}
	return sum
}

// preferEmptyDisks applies disk anti-affinity (Longhorn's
// filterDisksWithMatchingReplicas): disks holding no replica of the volume
// win; when every candidate holds one, soft anti-affinity keeps them all and
// hard anti-affinity keeps none.
func preferEmptyDisks(disks []candidateDisk, req diskRequest, rc *collector) []candidateDisk {
	count := map[string]int{}
	for _, r := range req.replicas {
		if r.Failed() && (req.ignoreFailed || !IsPotentiallyReusable(r)) {
			continue
		}
		count[r.DiskID]++
	}
	var empty []candidateDisk
	for _, d := range disks {
		if count[d.UUID] == 0 {
			empty = append(empty, d)
		}
	}
	if len(empty) > 0 || req.settings.DiskSoftAntiAffinity {
		if len(empty) > 0 {
			return empty
		}
		return disks
	}
	for _, d := range disks {
		rc.add(d.NodeID, d.Name, ReasonSchedulingFailed, "disk already holds a replica of the volume and disk anti-affinity is hard")
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package scheduler

import "math"

// usableBytes is what a disk can still take: StorageAvailable -
// StorageReserved - StorageScheduled, at least 0.
func usableBytes(d Disk) int64 {
	return max(0, d.StorageAvailable-d.StorageReserved-d.StorageScheduled)
}

// BalanceScore is (max - min) / mean of the usable bytes in the map: 0 when
// perfectly even, larger when less even. An empty map or a zero mean (all full)
// scores +Inf (math.MaxFloat64), the worst. This is Longhorn's absolute
// balance score (enhancement 20251001-replica-balance-scheduling, alpha 1.0).
func BalanceScore(usable map[string]int64) float64 {
	if len(usable) == 0 {
		return math.MaxFloat64
	}
	var sum int64
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, u := range usable {
		sum += u
		lo = min(lo, u)
		hi = max(hi, u)
	}
	mean := float64(sum) / float64(len(usable))
	if mean == 0 {
		return math.MaxFloat64
	}
	return float64(hi-lo) / mean
}

// selectBestDisk picks the disk whose use leaves storage most balanced: first
// the node (simulating the replica on each node that has room for it, over
// the per-node sums), then the disk within that node. Ties go to the first
// name in sorted order. When no node has room it falls back to the disk with
// the most available-minus-reserved space.
func selectBestDisk(cands []candidateDisk, replicaSize int64) candidateDisk {
	if len(cands) == 1 {
		return cands[0]
	}
	nodeUsable := map[string]int64{}
	diskUsable := map[string]int64{}
	for _, d := range cands {
		u := usableBytes(d.Disk)
		nodeUsable[d.NodeID] += u
		diskUsable[d.UUID] = u
	}
	bestNode, ok := argminAfterPlacing(nodeUsable, sortedKeys(nodeUsable), replicaSize, true)
	if !ok {
		return mostUsable(cands)
	}
	var onNode []string
	byUUID := map[string]candidateDisk{}
	for _, d := range cands {
		if d.NodeID == bestNode {
			onNode = append(onNode, d.UUID)
			byUUID[d.UUID] = d
		}
	}
	best, ok := argminAfterPlacing(diskUsable, onNode, replicaSize, false)
	if !ok {
		return mostUsable(cands)
	}
	return byUUID[best]
}

// argminAfterPlacing returns the key among `keys` whose usable value, reduced
// by size, gives the lowest BalanceScore over the whole map. With needRoom a
// key whose usable value is below size is skipped.
func argminAfterPlacing(usable map[string]int64, keys []string, size int64, needRoom bool) (string, bool) {
	best, bestScore := "", math.MaxFloat64
	for _, k := range keys {
		orig := usable[k]
		if needRoom && orig < size {
			continue
		}
		usable[k] = orig - size
		score := BalanceScore(usable)
		usable[k] = orig
		if score < bestScore {
			best, bestScore = k, score
		}
	}
	return best, best != ""
}

// mostUsable returns the candidate with the most StorageAvailable -
// StorageReserved (Longhorn's getDiskWithMostUsableStorage fallback).
func mostUsable(cands []candidateDisk) candidateDisk {
	best := cands[0]
	for _, d := range cands[1:] {
		if d.StorageAvailable-d.StorageReserved > best.StorageAvailable-best.StorageReserved {
			best = d
		}
	}
	return best
}

package main

import (
	"errors"
	"fmt"
	"sort"
)

// diskSpace is one disk as its node reports it (lhn status.diskStatus).
type diskSpace struct {
	Node, Disk         string
	Available, Maximum int64 // bytes
}

// errDiskFull is returned when no percentage >= 0 lets the disks take the
// demo's replicas.
var errDiskFull = errors.New("disk too full for the demo volumes")

// spaceMargin is how many percentage points the chosen value stays below
// the tightest disk, so files other programs write meanwhile do not make
// the disks unschedulable again.
const spaceMargin = 2

// minimalAvailableFor decides the storage-minimal-available-percentage
// setting. Longhorn schedules a replica of size `need` on a disk only when
// available - need > maximum * percentage / 100 (its DiskPressure check).
// It returns current when every disk already passes (change=false);
// otherwise the largest value, spaceMargin points below the tightest disk,
// that lets every disk pass, and a reason naming that disk.
func minimalAvailableFor(disks []diskSpace, need int64, current int) (pct int, change bool, why string, err error) {
	if len(disks) == 0 {
		return current, false, "", errors.New("no disks reported by the nodes")
	}
	sorted := append([]diskSpace(nil), disks...)
	sort.Slice(sorted, func(i, j int) bool { return headroom(sorted[i], need) < headroom(sorted[j], need) })
	tight := sorted[0]
	if tight.Maximum <= 0 {
		return current, false, "", fmt.Errorf("node %s disk %s reports maximum %d bytes", tight.Node, tight.Disk, tight.Maximum)
	}
	free := tight.Available - need
	if free*100 > tight.Maximum*int64(current) {
		return current, false, "", nil
	}
	// Largest p with free*100 > maximum*p, minus the margin.
	p := int((free*100-1)/tight.Maximum) - spaceMargin
	if free <= 0 || p < 0 {
		return current, false, "", fmt.Errorf("%w: node %s disk %s has %d bytes available of %d, needs %d for the replicas",
			errDiskFull, tight.Node, tight.Disk, tight.Available, tight.Maximum, need)
	}
	why = fmt.Sprintf("%s's disk has %.1f%% available (%s of %s); at %d%% Longhorn would refuse to place replicas there",
		tight.Node, 100*float64(tight.Available)/float64(tight.Maximum), gib(tight.Available), gib(tight.Maximum), current)
	return p, true, why, nil
}

func headroom(d diskSpace, need int64) float64 {
	if d.Maximum <= 0 {
		return -1
	}
	return float64(d.Available-need) / float64(d.Maximum)
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

package engineapi

import (
	"context"
	"sort"
)

// HeadName is the volume head's entry in SnapshotList.
const HeadName = "volume-head"

// SystemSnapshots returns the names, sorted, of the snapshots the system
// took (for a rebuild, an expansion, ...): not user-created, not removed,
// not the head.
func SystemSnapshots(snaps map[string]*Snapshot) []string {
	var out []string
	for name, s := range snaps {
		if name == HeadName || s == nil || s.UserCreated || s.Removed {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// CleanupSystemSnapshots is Longhorn's auto-cleanup-system-generated-
// snapshot: it marks every system snapshot removed and starts a purge
// (skipped when one runs), which coalesces and prunes removed snapshots on
// every replica. It returns the names it marked; the purge goes on in the
// engine (SnapshotPurgeStatus follows it). Errors are the engine's: a
// rebuild in progress refuses the purge (FailedPrecondition).
func CleanupSystemSnapshots(ctx context.Context, c EngineClient) ([]string, error) {
	snaps, err := c.SnapshotList(ctx)
	if err != nil {
		return nil, err
	}
	names := SystemSnapshots(snaps)
	if len(names) > 0 {
		if err := c.SnapshotRemove(ctx, names...); err != nil {
			return nil, err
		}
	}
	removed := len(names) > 0
	for name, s := range snaps {
		removed = removed || (name != HeadName && s != nil && s.Removed)
	}
	if !removed {
		return nil, nil
	}
	return names, c.SnapshotPurge(ctx, true)
}

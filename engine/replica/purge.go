package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

// Purge actions (Longhorn's PrepareRemoveAction.Action values).
const (
	// ActionRemove deletes a removed snapshot that has no children.
	ActionRemove = "remove"
	// ActionCoalesce folds the only child (not the head) into the removed
	// snapshot; ActionReplace then renames the result to the child's name.
	ActionCoalesce = "coalesce"
	ActionReplace  = "replace"
	// ActionPrune punches out of a removed snapshot whose only child is the
	// head the ranges the head has overwritten.
	ActionPrune = "prune"
)

// PrepareRemoveAction is one step of purging a disk (Longhorn's
// replica.PrepareRemoveAction, same JSON keys).
type PrepareRemoveAction struct {
	Action string `json:"action"`
	Source string `json:"source"`
	Target string `json:"target"`
}

// PrepareRemoveDisk returns the steps a purge of name (snapshot name or file
// name) would take, as Longhorn's PrepareRemoveDisk: none for an unknown
// disk or one with more than one child (it is skipped), [remove] for a leaf,
// [coalesce, replace] for one child that is not the head, [prune] when the
// only child is the head. Errors: ErrIsHead, ErrNotRemoved, ErrClosed.
func (s *Store) PrepareRemoveDisk(name string) ([]PrepareRemoveAction, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errf("prepare-remove", "", ErrClosed, "")
	}
	disk, ok := s.st.resolve(name)
	if !ok {
		return nil, nil
	}
	if err := s.checkPurgeable(disk); err != nil {
		return nil, err
	}
	return s.planLocked(disk), nil
}

func (s *Store) checkPurgeable(disk string) error {
	if disk == s.st.meta.Head {
		return errf("purge", "name", ErrIsHead, "%s", disk)
	}
	if !s.st.disks[disk].Removed {
		return errf("purge", "name", ErrNotRemoved, "%s", disk)
	}
	return nil
}

func (s *Store) planLocked(disk string) []PrepareRemoveAction {
	kids := s.st.children[disk]
	switch {
	case len(kids) == 0:
		return []PrepareRemoveAction{{Action: ActionRemove, Source: disk}}
	case len(kids) > 1:
		return nil
	}
	var child string
	for child = range kids {
	}
	if child == s.st.meta.Head {
		return []PrepareRemoveAction{{Action: ActionPrune, Source: disk, Target: child}}
	}
	return []PrepareRemoveAction{
		{Action: ActionCoalesce, Source: disk, Target: child},
		{Action: ActionReplace, Source: disk, Target: child},
	}
}

// PurgeSnapshot purges one snapshot marked removed (snapshot name or file
// name) and returns the action taken ("" when skipped: unknown, or more than
// one child). Remove is immediate. Coalesce copies the child's data into the
// removed snapshot's file without holding the store lock, so client I/O goes
// on; only the final rename and metadata swap take the exclusive lock.
// Prune punches chunk by chunk under the shared lock. progress (may be nil)
// gets bytes done/total. Purges run one at a time; Revert, Reload,
// RemoveDiffDisk and Close wait for them. Cancelled by ctx: a cancelled
// coalesce or prune leaves the replica consistent (the data views do not
// change). Errors: ErrIsHead, ErrNotRemoved, ErrClosed, ctx.Err(), I/O errors.
func (s *Store) PurgeSnapshot(ctx context.Context, name string, progress sparse.Progress) (string, error) {
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	return s.purgeOne(ctx, name, progress)
}

func (s *Store) purgeOne(ctx context.Context, name string, progress sparse.Progress) (string, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return "", errf("purge", "", ErrClosed, "")
	}
	disk, ok := s.st.resolve(name)
	if !ok {
		s.mu.RUnlock()
		return "", nil
	}
	if err := s.checkPurgeable(disk); err != nil {
		s.mu.RUnlock()
		return "", err
	}
	// A layer of the wrong size (truncated under us) must fail the purge,
	// not be folded into the chain as if it held the data.
	if err := s.st.checkLayerSizes(); err != nil {
		s.mu.RUnlock()
		return "", err
	}
	plan := s.planLocked(disk)
	s.mu.RUnlock()
	if len(plan) == 0 {
		return "", nil
	}
	switch plan[0].Action {
	case ActionRemove:
		return ActionRemove, s.removeLeaf(disk)
	case ActionPrune:
		return ActionPrune, s.prune(ctx, disk, progress)
	default:
		return ActionCoalesce, s.coalesce(ctx, disk, plan[0].Target, progress)
	}
}

// Purge purges every snapshot marked removed, repeating until nothing more
// can be done (coalescing can make another removed snapshot purgeable), as
// Longhorn's snapshot purge. Each snapshot is pruned at most once per call.
// progress (may be nil) gets the disk being purged and its bytes done/total.
func (s *Store) Purge(ctx context.Context, progress func(disk string, done, total int64)) error {
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	pruned := map[string]bool{}
	for {
		changed := false
		for _, disk := range s.removedDisks() {
			if pruned[disk] {
				continue
			}
			var p sparse.Progress
			if progress != nil {
				d := disk
				p = func(done, total int64) { progress(d, done, total) }
			}
			action, err := s.purgeOne(ctx, disk, p)
			if err != nil {
				return err
			}
			switch action {
			case ActionPrune:
				pruned[disk] = true
			case ActionRemove, ActionCoalesce:
				changed = true
			}
		}
		if !changed {
			return nil
		}
	}
}

// removedDisks lists the disks marked removed, live chain oldest first.
func (s *Store) removedDisks() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for name, d := range s.st.disks {
		if d.Removed && name != s.st.meta.Head {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := s.st.layerIndex(out[i]), s.st.layerIndex(out[j])
		if a != b {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}

func (s *Store) removeLeaf(disk string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	if len(st.children[disk]) != 0 || st.layerIndex(disk) != 0 {
		return nil // changed meanwhile; a later purge decides again
	}
	if err := hook("remove:data"); err != nil {
		return err
	}
	if err := removeFiles(s.dir, disk, disk+checksumSuffix); err != nil {
		return err
	}
	// The .meta goes last: a crash before this is finished on open.
	if err := hook("remove:meta"); err != nil {
		return err
	}
	if err := removeFiles(s.dir, MetaFileName(disk)); err != nil {
		return err
	}
	parent := st.disks[disk].Parent
	delete(st.disks, disk)
	if parent != "" {
		delete(st.children[parent], disk)
		if len(st.children[parent]) == 0 {
			delete(st.children, parent)
		}
	}
	return syncDir(s.dir)
}

// coalesce folds child into the removed disk parent, then renames the
// result over child. The copy needs no lock: parent and child are read-only
// layers, and the child's data lands in parent only where the child (or a
// newer layer) holds the sector, so no reader of parent sees it change.
// Meanwhile UnmapAt leaves both alone (see folding): punching them under the
// copy could let old data land in parent after the punch.
func (s *Store) coalesce(ctx context.Context, parent, child string, progress sparse.Progress) error {
	s.mu.Lock()
	s.folding = map[string]bool{parent: true, child: true}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.folding = nil
		s.mu.Unlock()
	}()
	pf, err := os.OpenFile(filepath.Join(s.dir, parent), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer pf.Close()
	cf, err := os.Open(filepath.Join(s.dir, child))
	if err != nil {
		return err
	}
	defer cf.Close()
	if err := sparse.FoldFile(ctx, cf, pf, progress); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	if s.closed || st.disks[parent] == nil || !st.disks[parent].Removed || len(st.children[parent]) != 1 ||
		!st.children[parent][child] || child == st.meta.Head {
		return nil // cannot happen while purgeMu is held; leave the views intact
	}
	return s.replaceLocked(parent, child)
}

// replaceLocked commits a coalesce: rename parent's file over child's, point
// child's .meta at parent's parent, drop parent's .meta. A crash after the
// rename leaves parent's .meta without data, finished on open.
func (s *Store) replaceLocked(parent, child string) error {
	st := s.st
	if err := hook("coalesce:rename"); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(s.dir, parent), filepath.Join(s.dir, child)); err != nil {
		return err
	}
	cm := *st.disks[child]
	cm.Parent = st.disks[parent].Parent
	err := s.step("coalesce:child-meta", func() error { return writeJSONAtomic(s.dir, MetaFileName(child), &cm) })
	if err == nil {
		err = hook("coalesce:committed")
	}
	if err == nil {
		err = removeFiles(s.dir, MetaFileName(parent), parent+checksumSuffix, child+checksumSuffix)
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		// The files are committed; let the open-time repair rebuild memory.
		return errors.Join(err, s.reloadLocked())
	}
	grand := cm.Parent
	delete(st.disks, parent)
	st.disks[child] = &cm
	delete(st.children, parent)
	if grand != "" {
		delete(st.children[grand], parent)
		st.children[grand][child] = true
	}
	if i := st.layerIndex(parent); i > 0 {
		s.dropLayerLocked(i)
	}
	return nil
}

// dropLayerLocked merges layer i+1 into layer i after a coalesce: layer i
// keeps its open file (the renamed, merged inode) and takes the child's
// name; index entries shift down.
func (s *Store) dropLayerLocked(i int) {
	st := s.st
	st.layers[i+1].f.Close()
	st.layers[i].name = st.layers[i+1].name
	st.layers = append(st.layers[:i+1], st.layers[i+2:]...)
	var table [256]uint8
	for v := range table {
		switch {
		case v <= i:
			table[v] = uint8(v)
		default:
			table[v] = uint8(v - 1)
		}
	}
	st.loc.remap(&table)
}

// pruneChunk is how many sectors (64 MiB) prune examines per shared-lock hold.
const pruneChunk = 16384

// prune punches out of disk (removed, in the live chain) every sector a
// newer layer holds. It holds the shared lock chunk by chunk; purgeMu keeps
// the layers above disk from being discarded meanwhile (no revert).
func (s *Store) prune(ctx context.Context, disk string, progress sparse.Progress) error {
	s.mu.RLock()
	i := s.st.layerIndex(disk)
	s.mu.RUnlock()
	if i == 0 {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(s.dir, disk), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for sec := int64(0); ; sec += pruneChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		done, total, err := s.pruneRange(f, uint8(i), sec)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(min(done, total), total)
		}
		if done >= total {
			break
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	return removeFiles(s.dir, disk+checksumSuffix)
}

// pruneRange punches, in sectors [sec, sec+pruneChunk), the runs whose
// layer is newer than i. It returns the bytes covered so far and the volume
// size.
func (s *Store) pruneRange(f *os.File, i uint8, sec int64) (int64, int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	loc := s.st.loc
	end := min(sec+pruneChunk, loc.sectors)
	for a := sec; a < end; {
		l, b := loc.run(a, end)
		if l > i {
			if err := sparse.PunchHole(f, a*SectorSize, (b-a)*SectorSize); err != nil {
				return 0, 0, err
			}
		}
		a = b
	}
	return end * SectorSize, loc.sectors * SectorSize, nil
}

// ReplaceDisk is Longhorn's DiskReplace, the second half of a coalesce that
// a Longhorn-style purge driver runs step by step: source's file (the parent,
// into which target's data was folded) takes target's name, target's .meta
// points at source's parent, and source's .meta and checksums go. target
// must be source's only child and not the head (the head is pruned, never
// replaced). Errors: ErrNotFound, ErrIsHead, ErrHasChildren, ErrInvalidName
// (target is not source's child), ErrClosed.
func (s *Store) ReplaceDisk(target, source string) error {
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("replace-disk", "", ErrClosed, "")
	}
	st := s.st
	src, ok := st.resolve(source)
	if !ok {
		return errf("replace-disk", "source", ErrNotFound, "%s", source)
	}
	dst, ok := st.resolve(target)
	switch {
	case !ok:
		return errf("replace-disk", "target", ErrNotFound, "%s", target)
	case dst == st.meta.Head || src == st.meta.Head:
		return errf("replace-disk", "target", ErrIsHead, "%s", dst)
	case st.disks[dst].Parent != src:
		return errf("replace-disk", "target", ErrInvalidName, "%s is not a child of %s", dst, src)
	case len(st.children[src]) != 1:
		return errf("replace-disk", "source", ErrHasChildren, "%s has %d children", src, len(st.children[src]))
	}
	return s.replaceLocked(src, dst)
}

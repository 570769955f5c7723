package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Snapshot turns the head into snapshot volume-snap-NAME.img and starts a
// new head volume-head-<N+1>.img whose Parent is the snapshot (Longhorn's
// createDisk). created is stored as is (Longhorn passes RFC 3339; "" means
// now); labels may be nil (stored as null). The steps: sync the head; create
// the new head and its .meta; hard-link the head to the snapshot name; write
// the snapshot .meta; write volume.meta (the commit point); remove the old
// head's names. A failure before the commit removes what was created and
// leaves the replica as it was. Errors: ErrInvalidName (also for names that
// read as the head or a disk file name), ErrSnapshotExists,
// ErrSnapshotCountLimit, ErrSnapshotSizeLimit, ErrChainTooLong, ErrClosed.
func (s *Store) Snapshot(name string, userCreated bool, created string, labels map[string]string) error {
	if err := validateNewSnapshotName(name); err != nil {
		return err
	}
	s.presync()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("snapshot", "", ErrClosed, "")
	}
	if err := s.checkSizeLimitLocked(); err != nil {
		return err
	}
	return s.snapshotLocked("snapshot", name, userCreated, created, labels, s.st.meta.Size)
}

// presync writes the head's dirty data back before the exclusive lock is
// taken, so the fdatasync under the lock (which stalls client I/O) only
// covers what was written in between. Errors are left to that second sync.
func (s *Store) presync() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		_ = unix.Fdatasync(int(s.st.head().f.Fd()))
	}
}

// checkSizeLimitLocked applies snapshot-max-size as Longhorn's
// canDoSnapshot: the head's allocated bytes must fit in what the limit
// leaves after the existing snapshots.
func (s *Store) checkSizeLimitLocked() error {
	limit := s.opts.SnapshotMaxSize
	if limit == 0 {
		return nil
	}
	used := s.sizeUsageLocked()
	head := allocated(filepath.Join(s.dir, s.st.meta.Head))
	if head > limit-used {
		return errf("snapshot", "size", ErrSnapshotSizeLimit,
			"head holds %d bytes, snapshots use %d of snapshot-max-size %d", head, used, limit)
	}
	return nil
}

func (s *Store) checkSnapshotLocked(op, snapFile string) error {
	st := s.st
	if _, ok := st.disks[snapFile]; ok {
		return errf(op, "name", ErrSnapshotExists, "%s", snapFile)
	}
	if _, err := os.Lstat(filepath.Join(s.dir, snapFile)); !errors.Is(err, fs.ErrNotExist) {
		return errf(op, "name", ErrSnapshotExists, "file %s is in the way", snapFile)
	}
	if used, limit := s.countUsageLocked(), s.opts.maxCount(); used >= limit {
		return errf(op, "count", ErrSnapshotCountLimit, "%d snapshots, snapshot-max-count %d", used, limit)
	}
	if n := len(st.layers) - 1 - st.backing; n >= MaxChainLength {
		return errf(op, "chain", ErrChainTooLong, "live chain has %d disks, limit %d", n, MaxChainLength)
	}
	return nil
}

// snapshotLocked implements Snapshot and Expand (size = new head size).
func (s *Store) snapshotLocked(op, name string, userCreated bool, created string, labels map[string]string, size int64) (err error) {
	st := s.st
	snapFile := SnapshotFileName(name)
	if err := s.checkSnapshotLocked(op, snapFile); err != nil {
		return err
	}
	if created == "" {
		created = s.opts.now()
	}
	oldHead := st.meta.Head
	num, ok := headNumber(oldHead)
	if !ok {
		return fmt.Errorf("%w: head %q is not volume-head-NNN.img", ErrCorrupt, oldHead)
	}
	newHead := HeadFileName(num + 1)
	// Data written to the old head must be durable as the snapshot's.
	if err := unix.Fdatasync(int(st.head().f.Fd())); err != nil {
		return &os.PathError{Op: "fdatasync", Path: oldHead, Err: err}
	}
	var undo []string // files to remove on failure, in creation order
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				_ = os.Remove(filepath.Join(s.dir, undo[i]))
			}
		}
	}()
	f, err := s.createHead(newHead, size)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	undo = append(undo, newHead, MetaFileName(newHead))
	headMeta := DiskMeta{Name: newHead, Parent: snapFile, Created: created}
	if err = s.step(op+":head-meta", func() error { return writeJSONAtomic(s.dir, MetaFileName(newHead), &headMeta) }); err != nil {
		return err
	}
	undo = append(undo, snapFile, MetaFileName(snapFile))
	if err = s.step(op+":link", func() error {
		return os.Link(filepath.Join(s.dir, oldHead), filepath.Join(s.dir, snapFile))
	}); err != nil {
		return err
	}
	// As Longhorn, the snapshot's .meta is the old head's with the snapshot
	// fields set (its Name stays the old head's file name).
	snapMeta := *st.disks[oldHead]
	snapMeta.UserCreated, snapMeta.Created, snapMeta.Labels = userCreated, created, maps.Clone(labels)
	if err = s.step(op+":snap-meta", func() error { return writeJSONAtomic(s.dir, MetaFileName(snapFile), &snapMeta) }); err != nil {
		return err
	}
	if err = s.writeMeta(func(m *VolumeMeta) {
		m.Head, m.Parent, m.Size, m.Dirty = newHead, snapFile, size, true
	}); err != nil {
		// The rename may have happened before the failure: put the old
		// volume.meta back before the new files go.
		_ = writeJSONAtomic(s.dir, VolumeMetaFile, &st.meta)
		return err
	}
	// Committed. A failure to remove the old names is repaired on open.
	if err := hook(op + ":committed"); err != nil {
		return err
	}
	_ = removeFiles(s.dir, oldHead, MetaFileName(oldHead)) // no dir fsync needed: see repair
	s.adoptSnapshot(oldHead, snapFile, newHead, &snapMeta, &headMeta, f, size)
	return nil
}

func (s *Store) step(point string, fn func() error) error {
	if err := hook(point); err != nil {
		return err
	}
	return fn()
}

func (s *Store) createHead(name string, size int64) (*os.File, error) {
	if err := hook("create-head"); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// adoptSnapshot updates the in-memory state after a committed snapshot.
func (s *Store) adoptSnapshot(oldHead, snapFile, newHead string, snapMeta, headMeta *DiskMeta, f *os.File, size int64) {
	st := s.st
	parent := st.disks[oldHead].Parent
	delete(st.disks, oldHead)
	snapMeta.Name = snapFile // later rewrites carry the file name, as Longhorn's
	st.disks[snapFile], st.disks[newHead] = snapMeta, headMeta
	if parent != "" {
		delete(st.children[parent], oldHead)
		st.children[parent][snapFile] = true
	}
	st.children[snapFile] = map[string]bool{newHead: true}
	st.head().name = snapFile // same inode, same open file
	st.layers = append(st.layers, &layer{name: newHead, f: f})
	if sectors := size / SectorSize; sectors > st.loc.sectors {
		st.loc = st.loc.grown(sectors)
	}
}

// Expand grows the volume to size bytes (Longhorn's Replica.Expand): a
// snapshot named expand-<size> (expand-<size>-<volume> with
// Options.VolumeName), labelled replica-expansion=<size>, and a new head of
// the new size. The same size is a no-op. Errors: ErrInvalidSize (not a
// positive multiple of SectorSize, or above MaxVolumeSize), ErrShrink, and those of Snapshot except
// the size limit.
func (s *Store) Expand(size int64) error {
	if err := checkSize("expand", size); err != nil {
		return err
	}
	s.presync()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("expand", "", ErrClosed, "")
	}
	cur := s.st.meta.Size
	if size < cur {
		return errf("expand", "size", ErrShrink, "%d is smaller than the current size %d", size, cur)
	}
	if size == cur {
		return nil
	}
	name := "expand-" + strconv.FormatInt(size, 10)
	if s.opts.VolumeName != "" {
		name += "-" + s.opts.VolumeName
	}
	labels := map[string]string{ExpansionLabel: strconv.FormatInt(size, 10)}
	return s.snapshotLocked("expand", name, false, "", labels, size)
}

// Revert makes a new, empty head whose Parent is the snapshot name (a
// snapshot name or file name) and discards the current head (Longhorn's
// revertDisk); created stamps the new head ("" means now). The engine runs
// it with the frontend down. It waits for a running purge. Errors:
// ErrNotFound, ErrIsHead, ErrRemoved, ErrClosed.
func (s *Store) Revert(name, created string) error {
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("revert", "", ErrClosed, "")
	}
	st := s.st
	target, ok := st.resolve(name)
	switch {
	case !ok:
		return errf("revert", "name", ErrNotFound, "%s", name)
	case target == st.meta.Head:
		return errf("revert", "name", ErrIsHead, "%s", target)
	case st.disks[target].Removed:
		return errf("revert", "name", ErrRemoved, "%s", target)
	}
	if created == "" {
		created = s.opts.now()
	}
	oldHead := st.meta.Head
	num, _ := headNumber(oldHead)
	newHead := HeadFileName(num + 1)
	f, err := s.createHead(newHead, st.meta.Size)
	if err != nil {
		return err
	}
	f.Close()
	err = s.step("revert:head-meta", func() error {
		return writeJSONAtomic(s.dir, MetaFileName(newHead), &DiskMeta{Name: newHead, Parent: target, Created: created})
	})
	if err == nil {
		err = s.writeMeta(func(m *VolumeMeta) { m.Head, m.Parent, m.Dirty = newHead, target, true })
	}
	if err != nil {
		_ = writeJSONAtomic(s.dir, VolumeMetaFile, &st.meta)
		_ = removeFiles(s.dir, newHead, MetaFileName(newHead))
		return err
	}
	if err := hook("revert:committed"); err != nil {
		return err
	}
	_ = removeDiskFiles(s.dir, oldHead)
	return s.reloadLocked()
}

// MarkDiskAsRemoved sets Removed in the .meta of a snapshot (by snapshot name
// or file name), the first step of deleting it; the data stays until a
// purge. Like Longhorn, an unknown name is not an error (it may already be
// purged). Errors: ErrIsHead, ErrClosed.
func (s *Store) MarkDiskAsRemoved(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("mark-removed", "", ErrClosed, "")
	}
	disk, ok := s.st.resolve(name)
	if !ok {
		return nil
	}
	if disk == s.st.meta.Head {
		return errf("mark-removed", "name", ErrIsHead, "%s", disk)
	}
	return s.markRemovedLocked(disk)
}

func (s *Store) markRemovedLocked(disk string) error {
	d := s.st.disks[disk]
	if d.Removed {
		return nil
	}
	m := *d
	m.Removed = true
	if err := writeJSONAtomic(s.dir, MetaFileName(disk), &m); err != nil {
		return err
	}
	s.st.disks[disk] = &m
	return nil
}

// RemoveDiffDisk deletes a disk that is not the head, whatever its data
// (Longhorn's RemoveDiffDisk, used by rebuild to drop disks the source does
// not have): its children are re-parented to its parent. A disk with more
// than one child needs force. When the disk was in the live chain the
// chain and index are reloaded. Errors: ErrNotFound, ErrIsHead,
// ErrHasChildren, ErrClosed.
func (s *Store) RemoveDiffDisk(name string, force bool) error {
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("remove-disk", "", ErrClosed, "")
	}
	st := s.st
	disk, ok := st.resolve(name)
	switch {
	case !ok:
		return errf("remove-disk", "name", ErrNotFound, "%s", name)
	case disk == st.meta.Head:
		return errf("remove-disk", "name", ErrIsHead, "%s", disk)
	case len(st.children[disk]) > 1 && !force:
		return errf("remove-disk", "name", ErrHasChildren, "%s has %d children", disk, len(st.children[disk]))
	}
	parent := st.disks[disk].Parent
	for child := range st.children[disk] {
		m := *st.disks[child]
		m.Parent = parent
		if err := writeJSONAtomic(s.dir, MetaFileName(child), &m); err != nil {
			return err
		}
		st.disks[child] = &m
	}
	if err := removeDiskFiles(s.dir, disk); err != nil {
		return err
	}
	inChain := st.layerIndex(disk) > 0
	delete(st.disks, disk)
	st.rebuildChildren()
	if inChain {
		return s.reloadLocked()
	}
	return nil
}

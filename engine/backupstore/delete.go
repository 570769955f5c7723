package backupstore

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"
)

// DeleteResult says what a backup deletion did.
type DeleteResult struct {
	// BlocksRemoved counts the block files no remaining backup referenced.
	BlocksRemoved int
	// BlocksRetained counts the block files still referenced.
	BlocksRetained int
	// GCSkipped is set when block removal was skipped because it was not
	// safe: another backup was in progress, a backup could not be read, or
	// the list of backups changed meanwhile (Longhorn skips it then too).
	GCSkipped string
}

// DeleteBackup removes a backup's .cfg file and then every block of the
// volume that no remaining backup references (Longhorn's
// DeleteDeltaBlockBackup, the fix of Longhorn bug #1431), under a deletion
// lock. If the backup was the volume's last one, volume.cfg names the newest
// remaining backup instead. Deleting a missing backup is not an error.
func (s *Store) DeleteBackup(ctx context.Context, volume, backup string) (DeleteResult, error) {
	if err := ValidateName("volume", volume); err != nil {
		return DeleteResult{}, err
	}
	if err := ValidateName("backup", backup); err != nil {
		return DeleteResult{}, err
	}
	lock := s.newLock(volume, LockTypeDeletion, opDelete)
	if err := lock.Acquire(ctx); err != nil {
		return DeleteResult{}, err
	}
	defer func() { _ = lock.Release() }()
	if err := s.d.Remove(ctx, BackupConfigPath(volume, backup)); err != nil {
		return DeleteResult{}, fmt.Errorf("remove backup %s: %w", backup, err)
	}
	vol, err := s.LoadVolume(ctx, volume)
	if errors.Is(err, ErrNotFound) {
		return DeleteResult{GCSkipped: "volume.cfg is missing"}, nil
	}
	if err != nil {
		return DeleteResult{}, err
	}
	return s.collectGarbage(ctx, vol, backup)
}

// collectGarbage counts references to every block and removes the
// unreferenced ones when that is safe.
func (s *Store) collectGarbage(ctx context.Context, vol *Volume, deleted string) (DeleteResult, error) {
	names, err := s.ListBackupNames(ctx, vol.Name)
	if err != nil {
		return DeleteResult{}, err
	}
	refs := map[string]int{}
	skip := ""
	var latest *Backup
	for _, n := range names {
		b, err := s.LoadBackup(ctx, vol.Name, n)
		if err != nil {
			skip = fmt.Sprintf("backup %s cannot be read: %v", n, err)
			break
		}
		if b.InProgress() {
			skip = fmt.Sprintf("backup %s is in progress", n)
			break
		}
		for _, blk := range b.Blocks {
			refs[blk.BlockChecksum]++
		}
		if newerBackup(b, latest) {
			latest = b
		}
	}
	if vol.LastBackupName == deleted && skip == "" {
		vol.LastBackupName, vol.LastBackupAt = "", ""
		if latest != nil {
			vol.LastBackupName, vol.LastBackupAt = latest.Name, latest.SnapshotCreatedAt
		}
		if err := s.saveVolume(ctx, vol); err != nil {
			return DeleteResult{}, err
		}
	}
	if skip == "" {
		if again, err := s.ListBackupNames(ctx, vol.Name); err != nil || !sameSet(names, again) {
			skip = "the list of backups changed during the deletion"
		}
	}
	if skip != "" {
		return DeleteResult{GCSkipped: skip}, nil
	}
	return s.removeUnreferenced(ctx, vol, refs)
}

func newerBackup(b, than *Backup) bool {
	if than == nil {
		return true
	}
	bt, err1 := time.Parse(time.RFC3339, b.SnapshotCreatedAt)
	tt, err2 := time.Parse(time.RFC3339, than.SnapshotCreatedAt)
	if err1 != nil || err2 != nil {
		return b.CreatedTime > than.CreatedTime
	}
	return bt.After(tt)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func (s *Store) removeUnreferenced(ctx context.Context, vol *Volume, refs map[string]int) (DeleteResult, error) {
	blocks, err := s.ListBlocks(ctx, vol.Name)
	if err != nil {
		return DeleteResult{}, err
	}
	var res DeleteResult
	var failed []string
	for _, c := range blocks {
		if refs[c] > 0 {
			res.BlocksRetained++
			continue
		}
		if err := s.d.Remove(ctx, BlockPath(vol.Name, c)); err != nil {
			failed = append(failed, c)
			continue
		}
		res.BlocksRemoved++
	}
	if len(failed) > 0 {
		return res, fmt.Errorf("remove %d unreferenced blocks of volume %s (first %s)", len(failed), vol.Name, failed[0])
	}
	v, err := s.LoadVolume(ctx, vol.Name)
	if err != nil {
		return res, err
	}
	v.BlockCount = int64(res.BlocksRetained)
	return res, s.saveVolume(ctx, v)
}

// ListBlocks returns the checksums of every block file of a volume.
func (s *Store) ListBlocks(ctx context.Context, volume string) ([]string, error) {
	base := BlocksPath(volume)
	l1, err := s.d.List(ctx, base)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range l1 {
		l2, err := s.d.List(ctx, path.Join(base, a))
		if err != nil {
			return nil, err
		}
		for _, b := range l2 {
			files, err := s.d.List(ctx, path.Join(base, a, b))
			if err != nil {
				return nil, err
			}
			for _, n := range extractNames(files, "", blkSuffix) {
				if IsChecksum(n) {
					out = append(out, n)
				}
			}
		}
	}
	return out, nil
}

// DeleteVolume removes a whole backup volume (its backups, blocks, locks and
// volume.cfg) under a deletion lock (Longhorn's DeleteBackupVolume).
func (s *Store) DeleteVolume(ctx context.Context, volume string) error {
	if err := ValidateName("volume", volume); err != nil {
		return err
	}
	entries, err := s.d.List(ctx, VolumePath(volume))
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	lock := s.newLock(volume, LockTypeDeletion, opDelete)
	if err := lock.Acquire(ctx); err != nil {
		return err
	}
	for _, p := range []string{BackupsPath(volume), BlocksPath(volume)} {
		if err := s.d.Remove(ctx, p); err != nil {
			_ = lock.Release()
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	_ = lock.Release()
	if err := s.d.Remove(ctx, VolumePath(volume)); err != nil {
		return fmt.Errorf("remove backup volume %s: %w", volume, err)
	}
	return nil
}

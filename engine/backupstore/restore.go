package backupstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// BlockWriter receives restored data.
type BlockWriter interface {
	// WriteAt writes a whole block at off.
	WriteAt(p []byte, off int64) (int, error)
	// ZeroRange makes [off, off+length) read as zeroes: a block the
	// previously restored backup had and this one has not.
	ZeroRange(off, length int64) error
}

// RestoreRequest names the backup to restore.
type RestoreRequest struct {
	VolumeName string
	BackupName string
	// LastBackupName, when set, is the backup the destination already holds:
	// only the blocks that differ are written (an incremental restore, as DR
	// volumes do).
	LastBackupName  string
	ConcurrentLimit int // download workers, default 2 (restore-concurrent-limit)
}

// RestoreOp is one step of a restore: write the block Checksum at Offset, or
// zero the block at Offset when Checksum is empty.
type RestoreOp struct {
	Offset   int64
	Checksum string
}

// PlanRestore returns the steps that turn a destination holding the blocks
// last into one holding cur (both sorted by offset); last nil means an empty
// destination (every block of cur is written). Longhorn's
// populateBlocksForIncrementalRestore.
func PlanRestore(last, cur []BlockMapping) []RestoreOp {
	var ops []RestoreOp
	i, k := 0, 0
	for i < len(last) || k < len(cur) {
		switch {
		case k == len(cur) || (i < len(last) && last[i].Offset < cur[k].Offset):
			ops = append(ops, RestoreOp{Offset: last[i].Offset})
			i++
		case i == len(last) || cur[k].Offset < last[i].Offset:
			ops = append(ops, RestoreOp{Offset: cur[k].Offset, Checksum: cur[k].BlockChecksum})
			k++
		default: // same offset
			if last[i].BlockChecksum != cur[k].BlockChecksum {
				ops = append(ops, RestoreOp{Offset: cur[k].Offset, Checksum: cur[k].BlockChecksum})
			}
			i++
			k++
		}
	}
	return ops
}

// RestoreJob is a prepared restore: the lock is held and the plan is known.
type RestoreJob struct {
	s         *Store
	req       RestoreRequest
	lock      *Lock
	vol       *Volume
	backup    *Backup
	blockSize int64
	method    string
	ops       []RestoreOp
}

// VolumeSize returns the size of the backed-up volume in bytes.
func (j *RestoreJob) VolumeSize() int64 { return j.vol.Size }

// Backup returns the backup being restored.
func (j *RestoreJob) Backup() *Backup { return j.backup }

// Ops returns the planned steps.
func (j *RestoreJob) Ops() []RestoreOp { return j.ops }

// Abort releases the lock of a job that will not run.
func (j *RestoreJob) Abort() { _ = j.lock.Release() }

// PrepareRestore locks the backup volume (LockTypeRestore), loads volume.cfg
// and the backup (and the last restored backup for an incremental restore)
// and plans the restore. A missing backup is ErrNotFound; an in-progress one,
// a block size change since the last restored backup or a volume size that
// is not a multiple of the block size is ErrInvalid.
func (s *Store) PrepareRestore(ctx context.Context, req RestoreRequest) (*RestoreJob, error) {
	if err := ValidateName("volume", req.VolumeName); err != nil {
		return nil, err
	}
	if err := ValidateName("backup", req.BackupName); err != nil {
		return nil, err
	}
	if req.LastBackupName != "" {
		if err := ValidateName("last restored backup", req.LastBackupName); err != nil {
			return nil, err
		}
	}
	if req.ConcurrentLimit < 0 || req.ConcurrentLimit > 64 {
		return nil, fmt.Errorf("%w: concurrent limit %d: want 1-64", ErrInvalid, req.ConcurrentLimit)
	}
	if req.ConcurrentLimit == 0 {
		req.ConcurrentLimit = 2
	}
	j := &RestoreJob{s: s, req: req, lock: s.newLock(req.VolumeName, LockTypeRestore, opRestore)}
	if err := j.lock.Acquire(ctx); err != nil {
		return nil, err
	}
	if err := j.prepare(ctx); err != nil {
		j.Abort()
		return nil, err
	}
	return j, nil
}

func (j *RestoreJob) prepare(ctx context.Context) error {
	vol, err := j.s.LoadVolume(ctx, j.req.VolumeName)
	if err != nil {
		return fmt.Errorf("backup volume %s: %w", j.req.VolumeName, err)
	}
	b, err := j.s.LoadBackup(ctx, j.req.VolumeName, j.req.BackupName)
	if err != nil {
		return fmt.Errorf("backup %s of volume %s: %w", j.req.BackupName, j.req.VolumeName, err)
	}
	if b.InProgress() {
		return fmt.Errorf("%w: backup %s of volume %s is still in progress", ErrInvalid, b.Name, vol.Name)
	}
	bs, err := b.BlockSize()
	if err != nil {
		return err
	}
	if vol.Size <= 0 || vol.Size%bs != 0 {
		return fmt.Errorf("%w: backup volume %s: size %d is not a positive multiple of the block size %d", ErrCorrupt, vol.Name, vol.Size, bs)
	}
	var lastBlocks []BlockMapping
	if j.req.LastBackupName != "" {
		last, err := j.s.LoadBackup(ctx, j.req.VolumeName, j.req.LastBackupName)
		if err != nil {
			return fmt.Errorf("last restored backup %s: %w", j.req.LastBackupName, err)
		}
		if lbs, err := last.BlockSize(); err != nil || lbs != bs {
			return fmt.Errorf("%w: backup block size changed from %d to %d since backup %s", ErrInvalid, lbs, bs, last.Name)
		}
		lastBlocks = last.Blocks
	}
	for _, blk := range b.Blocks {
		if blk.Offset+bs > vol.Size {
			return fmt.Errorf("%w: backup %s: block %s at offset %d is past the volume size %d", ErrCorrupt, b.Name, blk.BlockChecksum, blk.Offset, vol.Size)
		}
	}
	j.vol, j.backup, j.blockSize = vol, b, bs
	j.method = b.CompressionMethod
	if j.method == "" {
		j.method = effectiveMethod(string(vol.CompressionMethod))
	}
	j.ops = PlanRestore(lastBlocks, b.Blocks)
	return nil
}

// Run downloads, decompresses and verifies every planned block and writes
// it to w, then releases the lock. A missing or corrupted block fails the
// restore with an error naming it (ErrNotFound or ErrCorrupt); nothing
// unverified is written. progress (may be nil) gets 0-100.
func (j *RestoreJob) Run(ctx context.Context, w BlockWriter, progress func(int)) error {
	defer func() { _ = j.lock.Release() }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan RestoreOp)
	errc := make(chan error, j.req.ConcurrentLimit)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	report := func() {
		mu.Lock()
		done++
		pct := done * 100 / max(len(j.ops), 1)
		mu.Unlock()
		if progress != nil {
			progress(min(pct, 99))
		}
	}
	for i := 0; i < j.req.ConcurrentLimit; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := j.worker(ctx, w, work, report); err != nil {
				errc <- err
				cancel()
			}
		}()
	}
feed:
	for _, op := range j.ops {
		select {
		case work <- op:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: restore of backup %s: %v", ErrCanceled, j.req.BackupName, err)
	}
	if progress != nil {
		progress(100)
	}
	return nil
}

func (j *RestoreJob) worker(ctx context.Context, w BlockWriter, work <-chan RestoreOp, report func()) error {
	buf := make([]byte, j.blockSize)
	for op := range work {
		if err := ctx.Err(); err != nil {
			return err
		}
		if op.Checksum == "" {
			if err := w.ZeroRange(op.Offset, j.blockSize); err != nil {
				return fmt.Errorf("zero block at offset %d: %w", op.Offset, err)
			}
			report()
			continue
		}
		if err := j.s.readBlock(ctx, j.req.VolumeName, op.Checksum, j.method, buf); err != nil {
			return fmt.Errorf("restore backup %s at offset %d: %w", j.req.BackupName, op.Offset, err)
		}
		if _, err := w.WriteAt(buf, op.Offset); err != nil {
			return fmt.Errorf("write block %s at offset %d: %w", op.Checksum, op.Offset, err)
		}
		report()
	}
	return nil
}

// readBlock fetches one block into buf (len = block size) and verifies it.
func (s *Store) readBlock(ctx context.Context, volume, checksum, method string, buf []byte) error {
	p := BlockPath(volume, checksum)
	rc, err := s.d.Read(ctx, p)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w: block %s (%s)", ErrNotFound, checksum, p)
		}
		return fmt.Errorf("read block %s: %w", checksum, err)
	}
	raw, err := io.ReadAll(io.LimitReader(rc, int64(len(buf))*2+4096))
	rc.Close()
	if err != nil {
		return fmt.Errorf("read block %s: %w", checksum, err)
	}
	n, err := decompress(method, raw, buf, checksum)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("%w: block %s: %d bytes, want the block size %d", ErrCorrupt, checksum, n, len(buf))
	}
	return nil
}

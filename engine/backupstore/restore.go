package backupstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/longhorn-go/longhorn/engine/bufpool"
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

// RestoreJob is a prepared restore: its lock file is written (Run acquires
// it) and the plan is known.
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

// Abort removes the lock of a job that will not run.
func (j *RestoreJob) Abort() { _ = j.lock.Release() }

// PrepareRestore writes the restore's lock file (LockTypeRestore), loads
// volume.cfg and the backup (and the last restored backup for an incremental
// restore) and plans the restore; Run then acquires the lock while the
// blocks already move (Longhorn's LockCheckWait is 2 s), and reads the plan
// again once the lock is held. A missing backup is ErrNotFound; an
// in-progress one, a block size change since the last restored backup or a
// volume size that is not a multiple of the block size is ErrInvalid.
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
	if err := j.lock.create(ctx); err != nil {
		return nil, err
	}
	if err := j.prepare(ctx); err != nil {
		j.Abort()
		return nil, err
	}
	return j, nil
}

// prepare loads and plans the restore into j.
func (j *RestoreJob) prepare(ctx context.Context) error {
	p, err := j.s.planRestore(ctx, j.req)
	if err != nil {
		return err
	}
	j.vol, j.backup, j.blockSize, j.method, j.ops = p.vol, p.backup, p.blockSize, p.method, p.ops
	return nil
}

// restorePlan is what a restore reads from the store before it moves data.
type restorePlan struct {
	vol       *Volume
	backup    *Backup
	blockSize int64
	method    string
	ops       []RestoreOp
}

// confirm acquires the lock and reads the plan again: the blocks moved
// while the lock was awaited are right only if the backup is still the
// one planned (a deletion that held the lock before this restore may have
// removed it).
func (j *RestoreJob) confirm(ctx context.Context) error {
	if err := j.lock.wait(ctx); err != nil {
		return fmt.Errorf("restore backup %s: %w", j.req.BackupName, err)
	}
	p, err := j.s.planRestore(ctx, j.req)
	if err != nil {
		return err
	}
	if p.vol.Size != j.vol.Size || p.blockSize != j.blockSize || p.method != j.method || !slices.Equal(p.ops, j.ops) {
		return fmt.Errorf("%w: backup %s of volume %s changed while the restore waited for its lock", ErrInvalid, j.req.BackupName, j.req.VolumeName)
	}
	return nil
}

// planRestore loads what req names and plans its steps.
func (s *Store) planRestore(ctx context.Context, req RestoreRequest) (*restorePlan, error) {
	j := &restorePlan{}
	vol, err := s.LoadVolume(ctx, req.VolumeName)
	if err != nil {
		return nil, fmt.Errorf("backup volume %s: %w", req.VolumeName, err)
	}
	b, err := s.LoadBackup(ctx, req.VolumeName, req.BackupName)
	if err != nil {
		return nil, fmt.Errorf("backup %s of volume %s: %w", req.BackupName, req.VolumeName, err)
	}
	if b.InProgress() {
		return nil, fmt.Errorf("%w: backup %s of volume %s is still in progress", ErrInvalid, b.Name, vol.Name)
	}
	bs, err := b.BlockSize()
	if err != nil {
		return nil, err
	}
	if vol.Size <= 0 || vol.Size%bs != 0 {
		return nil, fmt.Errorf("%w: backup volume %s: size %d is not a positive multiple of the block size %d", ErrCorrupt, vol.Name, vol.Size, bs)
	}
	var lastBlocks []BlockMapping
	if req.LastBackupName != "" {
		last, err := s.LoadBackup(ctx, req.VolumeName, req.LastBackupName)
		if err != nil {
			return nil, fmt.Errorf("last restored backup %s: %w", req.LastBackupName, err)
		}
		if lbs, err := last.BlockSize(); err != nil || lbs != bs {
			return nil, fmt.Errorf("%w: backup block size changed from %d to %d since backup %s", ErrInvalid, lbs, bs, last.Name)
		}
		lastBlocks = last.Blocks
	}
	for _, blk := range b.Blocks {
		if blk.Offset+bs > vol.Size {
			return nil, fmt.Errorf("%w: backup %s: block %s at offset %d is past the volume size %d", ErrCorrupt, b.Name, blk.BlockChecksum, blk.Offset, vol.Size)
		}
	}
	j.vol, j.backup, j.blockSize = vol, b, bs
	j.method = b.CompressionMethod
	if j.method == "" {
		j.method = effectiveMethod(string(vol.CompressionMethod))
	}
	j.ops = PlanRestore(lastBlocks, b.Blocks)
	return j, nil
}

// Run acquires the lock and downloads, decompresses and verifies every
// planned block and writes it to w, then releases the lock. The blocks move
// while the lock is awaited, so w must be a destination that a failed
// restore discards (the sync agent writes a temporary file): Run succeeds
// only once the lock is held and the backup read again is the one planned. ConcurrentLimit fetchers download block
// files from the target (restore-concurrent-limit); as many writers decode
// and verify them and put them into w, so downloading the next blocks
// overlaps the CPU and disk work of the last ones (buffers and decoders
// are reused). A missing or corrupted block fails the restore with an
// error naming it (ErrNotFound or ErrCorrupt); nothing unverified is
// written. progress (may be nil) gets 0-100.
func (j *RestoreJob) Run(ctx context.Context, w BlockWriter, progress func(int)) error {
	defer func() { _ = j.lock.Release() }()
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	confirmed := make(chan error, 1)
	go func() {
		err := j.confirm(ctx)
		if err != nil {
			stop()
		}
		confirmed <- err
	}()
	err := j.transfer(tctx, w, progress)
	if cerr := <-confirmed; cerr != nil {
		if ctx.Err() != nil && err != nil {
			return err // canceled: ErrCanceled
		}
		return cerr // no lock, or the backup changed: the data moved does not count
	}
	if err != nil {
		return err
	}
	if progress != nil {
		progress(100)
	}
	return nil
}

// transfer moves the planned blocks into w.
func (j *RestoreJob) transfer(ctx context.Context, w BlockWriter, progress func(int)) error {
	parent := ctx
	g, ctx := errgroup.WithContext(ctx)
	n := j.req.ConcurrentLimit
	work := make(chan RestoreOp)
	full := make(chan fetched, n)
	free := make(chan []byte, 2*n)
	for range 2 * n {
		free <- bufpool.Get(int(maxBlockFile(j.blockSize)) + 1)
	}
	defer func() {
		for len(free) > 0 {
			bufpool.Put(<-free)
		}
	}()
	var done atomic.Int64
	report := func() {
		pct := int(done.Add(1) * 100 / int64(max(len(j.ops), 1)))
		if progress != nil {
			progress(min(pct, 99))
		}
	}
	g.Go(func() error {
		defer close(work)
		for _, op := range j.ops {
			select {
			case work <- op:
			case <-ctx.Done():
				return nil
			}
		}
		return nil
	})
	var fetchers sync.WaitGroup
	for range n {
		fetchers.Add(1)
		g.Go(func() error { defer fetchers.Done(); return j.fetch(ctx, work, free, full) })
	}
	go func() { fetchers.Wait(); close(full) }()
	for range n {
		g.Go(func() error { return j.write(ctx, w, full, free, report) })
	}
	err := g.Wait()
	if cerr := parent.Err(); cerr != nil {
		return fmt.Errorf("%w: restore of backup %s: %v", ErrCanceled, j.req.BackupName, cerr)
	}
	return err
}

// fetched is a downloaded block file (raw nil: a block to zero).
type fetched struct {
	op  RestoreOp
	raw []byte
}

// fetch is a download worker: it takes a free buffer, reads the op's block
// file into it and hands it to the writers.
func (j *RestoreJob) fetch(ctx context.Context, work <-chan RestoreOp, free chan []byte, full chan<- fetched) error {
	for op := range work {
		var raw []byte
		if op.Checksum != "" {
			select {
			case raw = <-free:
			case <-ctx.Done():
				return ctx.Err()
			}
			n, err := j.s.readBlockFile(ctx, j.req.VolumeName, op.Checksum, raw[:maxBlockFile(j.blockSize)+1])
			if err != nil {
				return fmt.Errorf("restore backup %s at offset %d: %w", j.req.BackupName, op.Offset, err)
			}
			raw = raw[:n]
		}
		select {
		case full <- fetched{op: op, raw: raw}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// write is a writer: it decodes and verifies fetched block files into its
// block buffer (page aligned: w may write it with O_DIRECT), gives the
// download buffer back and writes the block into w (or zeroes it).
func (j *RestoreJob) write(ctx context.Context, w BlockWriter, full <-chan fetched, free chan<- []byte, report func()) error {
	var dec decoder
	buf := bufpool.Get(int(j.blockSize))
	defer bufpool.Put(buf)
	for f := range full {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.raw == nil {
			if err := w.ZeroRange(f.op.Offset, j.blockSize); err != nil {
				return fmt.Errorf("zero block at offset %d: %w", f.op.Offset, err)
			}
			report()
			continue
		}
		err := decodeBlock(&dec, f.op.Checksum, j.method, f.raw, buf)
		free <- f.raw
		if err != nil {
			return fmt.Errorf("restore backup %s at offset %d: %w", j.req.BackupName, f.op.Offset, err)
		}
		if _, err := w.WriteAt(buf, f.op.Offset); err != nil {
			return fmt.Errorf("write block %s at offset %d: %w", f.op.Checksum, f.op.Offset, err)
		}
		report()
	}
	return nil
}

// maxBlockFile is the largest block file accepted for a block size: lz4
// and gzip store incompressible data with a few bytes per 64 KiB or 4 MiB.
func maxBlockFile(blockSize int64) int64 { return blockSize + blockSize/16 + 4096 }

// readBlockFile reads one block file into raw and returns its length; a
// file that fills raw is ErrCorrupt (larger than any block file).
func (s *Store) readBlockFile(ctx context.Context, volume, checksum string, raw []byte) (int, error) {
	p := BlockPath(volume, checksum)
	rc, err := s.d.Read(ctx, p)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return 0, fmt.Errorf("%w: block %s (%s)", ErrNotFound, checksum, p)
		}
		return 0, fmt.Errorf("read block %s: %w", checksum, err)
	}
	n, err := io.ReadFull(rc, raw)
	rc.Close()
	switch {
	case err == nil:
		return 0, fmt.Errorf("%w: block %s: the block file is larger than %d bytes", ErrCorrupt, checksum, len(raw)-1)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return n, nil
	}
	return 0, fmt.Errorf("read block %s: %w", checksum, err)
}

// decodeBlock decodes the block file raw into buf (len = block size) with
// dec and verifies it: it must be the whole block, of checksum.
func decodeBlock(dec *decoder, checksum, method string, raw, buf []byte) error {
	n, err := dec.decompress(method, raw, buf, checksum)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("%w: block %s: %d bytes, want the block size %d", ErrCorrupt, checksum, n, len(buf))
	}
	return nil
}

package backupstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// blockRecord is what a backup did with the block at one offset.
type blockRecord struct {
	sum     string
	newly   int64 // compressed bytes uploaded as a new block
	reup    int64 // compressed bytes re-uploaded over an existing block
	isNew   bool
	preLock bool // looked up (Stat) before the lock was held
}

// upload is the shared state of a running backup's workers.
type upload struct {
	mu       sync.Mutex
	seen     map[string]bool // checksums handled in this run
	records  map[int64]blockRecord
	dropped  int64 // new blocks of records a later plan dropped (they are in the store)
	early    bool  // blocks were uploaded before the lock was held
	total    int
	progress func(int)
}

// blockWork is one block for the workers; force uploads it without looking
// whether the store has it (it went missing while the lock was awaited).
type blockWork struct {
	off   int64
	force bool
}

// Run acquires the lock and uploads the blocks, then writes the backup .cfg
// and volume.cfg and releases the lock. The blocks of the plan read before
// the lock upload while the lock is awaited (Longhorn's LockCheckWait is
// 2 s; another backup of the volume may hold it longer): blocks are named by
// their content, so uploading one early is harmless. Once the lock is held
// Run plans again, writes the in-progress backup .cfg, uploads what the new
// plan adds and, when a lock of another type (a deletion, which removes
// unused blocks) was seen meanwhile, uploads again every block it found in
// the store before the lock and finds gone now. A backup whose lock file
// finds another backup of ours of the volume waits without uploading (our
// backups of one volume run one after the other). progress (may be nil) gets
// 0-100. On error or cancellation the in-progress backup .cfg is removed
// (Longhorn leaves it until the Backup is deleted, and it blocks block
// garbage collection until then); uploaded blocks stay for the next backup
// to reuse.
func (j *BackupJob) Run(ctx context.Context, progress func(int)) (_ *Backup, err error) {
	defer func() { _ = j.lock.Release() }()
	defer func() {
		switch {
		case err == nil || ctx.Err() == nil || errors.Is(err, ErrCanceled):
		case errors.Is(err, context.Canceled):
			err = fmt.Errorf("%w: backup %s was canceled", ErrCanceled, j.req.BackupName)
		default:
			err = fmt.Errorf("%w: backup %s: %v", ErrCanceled, j.req.BackupName, err)
		}
	}()
	u := &upload{seen: map[string]bool{}, records: map[int64]blockRecord{}, total: len(j.offsets), progress: progress}
	if err := j.uploadEarly(ctx, u); err != nil {
		return nil, err
	}
	rest, err := j.replan(ctx, u)
	if err != nil {
		return nil, err
	}
	if err := j.s.saveBackup(ctx, &Backup{Name: j.req.BackupName, VolumeName: j.req.VolumeName,
		CompressionMethod: j.method}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = j.s.d.Remove(cctx, BackupConfigPath(j.req.VolumeName, j.req.BackupName))
		}
	}()
	if err := j.uploadAll(ctx, u, rest); err != nil {
		return nil, err
	}
	b := j.finalBackup(u)
	if err := j.s.saveBackup(ctx, b); err != nil {
		return nil, err
	}
	count, absolute := u.newBlocks(), false
	if u.early && j.lock.sawSame {
		// another backup of ours held the lock while this one uploaded
		// early: a block both wrote counts once only in a recount
		blocks, err := j.s.ListBlocks(ctx, j.req.VolumeName)
		if err != nil {
			return nil, err
		}
		count, absolute = int64(len(blocks)), true
	}
	if err := j.updateVolume(ctx, b, count, absolute); err != nil {
		return nil, err
	}
	if progress != nil {
		progress(100)
	}
	return b, nil
}

// uploadEarly uploads the planned blocks while the lock is acquired and
// returns once both are done; a failed lock fails it, and an upload error
// stops the wait for the lock.
func (j *BackupJob) uploadEarly(ctx context.Context, u *upload) error {
	lctx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	uctx, stopUpload := context.WithCancel(ctx)
	defer stopUpload()
	locked := make(chan error, 1)
	go func() {
		err := j.lock.wait(lctx)
		if err == nil {
			j.locked.Store(true)
		} else {
			stopUpload()
		}
		locked <- err
	}()
	var work []blockWork
	if !j.lock.sawSame {
		// another backup of the volume (ours) comes first: wait for it
		// without uploading, so that no two of our backups of a volume
		// upload at once and count a block they both wrote twice
		u.early = len(j.offsets) > 0
		work = make([]blockWork, len(j.offsets))
		for i, off := range j.offsets {
			work[i] = blockWork{off: off}
		}
	}
	uerr := j.uploadAll(uctx, u, work)
	if uerr != nil && uctx.Err() == nil {
		stopWait() // a real upload error: the lock is not needed
		<-locked
		return uerr
	}
	if lerr := <-locked; lerr != nil {
		return fmt.Errorf("backup %s: %w", j.req.BackupName, lerr)
	}
	return uerr
}

// replan plans again with the lock held (creating volume.cfg for a new
// volume) and returns the blocks still to upload: those the new plan adds,
// all early uploads when the compression method changed, and the early
// looked-up blocks a deletion may have removed that are gone. Records of
// offsets the new plan drops are forgotten.
func (j *BackupJob) replan(ctx context.Context, u *upload) ([]blockWork, error) {
	method := j.method
	vol, err := j.s.ensureVolume(ctx, &j.req)
	if err != nil {
		return nil, err
	}
	if err := j.plan(ctx, vol); err != nil {
		return nil, err
	}
	var rest []blockWork
	u.mu.Lock()
	defer u.mu.Unlock()
	u.total = len(j.offsets)
	keep := make(map[int64]bool, len(j.offsets))
	for _, off := range j.offsets {
		keep[off] = true
		if _, ok := u.records[off]; !ok {
			rest = append(rest, blockWork{off: off})
		}
	}
	for off, r := range u.records {
		if !keep[off] {
			if r.isNew {
				u.dropped++
			}
			delete(u.records, off)
		}
	}
	for off, r := range u.records {
		if method != j.method && (r.newly > 0 || r.reup > 0) {
			rest = append(rest, blockWork{off: off, force: true})
		}
	}
	if method == j.method && j.lock.sawOther {
		gone, err := j.goneBlocks(ctx, u.records)
		if err != nil {
			return nil, err
		}
		rest = append(rest, gone...)
	}
	return rest, nil
}

// goneBlocks looks up again every block that was found in the store or
// uploaded before the lock was held and returns those missing now (one
// offset per block).
func (j *BackupJob) goneBlocks(ctx context.Context, records map[int64]blockRecord) ([]blockWork, error) {
	checked := map[string]bool{}
	var out []blockWork
	for off, r := range records {
		if !r.preLock || checked[r.sum] {
			continue
		}
		checked[r.sum] = true
		_, err := j.s.d.Stat(ctx, BlockPath(j.req.VolumeName, r.sum))
		if errors.Is(err, ErrNotFound) {
			out = append(out, blockWork{off: off, force: true})
		} else if err != nil {
			return nil, fmt.Errorf("check block %s: %w", r.sum, err)
		}
	}
	return out, nil
}

// uploadAll runs ConcurrentLimit workers over work.
func (j *BackupJob) uploadAll(ctx context.Context, u *upload, work []blockWork) error {
	if len(work) == 0 {
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan blockWork)
	errc := make(chan error, j.req.ConcurrentLimit)
	var wg sync.WaitGroup
	for i := 0; i < j.req.ConcurrentLimit; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := j.worker(ctx, u, ch); err != nil {
				errc <- err
				cancel()
			}
		}()
	}
feed:
	for _, w := range work {
		select {
		case ch <- w:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return ctx.Err()
}

func (j *BackupJob) worker(ctx context.Context, u *upload, work <-chan blockWork) error {
	buf := make([]byte, j.blockSize)
	var zbuf bytes.Buffer
	for w := range work {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := j.req.Source.ReadSnapshot(j.req.SnapshotName, buf, w.off); err != nil {
			return fmt.Errorf("read snapshot %s at offset %d: %w", j.req.SnapshotName, w.off, err)
		}
		if err := j.backupBlock(ctx, u, w, buf, &zbuf); err != nil {
			return err
		}
	}
	return nil
}

// backupBlock records one block and uploads it unless this run already did,
// or the store has it (and the mode is not full).
func (j *BackupJob) backupBlock(ctx context.Context, u *upload, w blockWork, data []byte, zbuf *bytes.Buffer) error {
	sum := Checksum(data)
	u.mu.Lock()
	dup := u.seen[sum] && !w.force
	u.seen[sum] = true
	u.mu.Unlock()
	r := blockRecord{sum: sum, preLock: !j.locked.Load()}
	if !dup {
		var err error
		if r.newly, r.reup, r.isNew, err = j.uploadBlock(ctx, sum, w, data, zbuf); err != nil {
			return err
		}
	}
	u.mu.Lock()
	u.records[w.off] = r // a forced upload replaces the early record
	pct := backupProgress(len(u.records), u.total)
	u.mu.Unlock()
	if u.progress != nil {
		u.progress(pct)
	}
	return nil
}

// uploadBlock uploads the block with checksum sum unless the store has it
// (and the mode is not full, and w is not forced). It returns the
// compressed bytes written as new (isNew) or re-uploaded.
func (j *BackupJob) uploadBlock(ctx context.Context, sum string, w blockWork, data []byte, zbuf *bytes.Buffer) (newly, reup int64, isNew bool, err error) {
	p := BlockPath(j.req.VolumeName, sum)
	exists := false
	if !w.force {
		_, err = j.s.d.Stat(ctx, p)
		exists = err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			return 0, 0, false, fmt.Errorf("check block %s: %w", sum, err)
		}
		if exists && !isFullMode(j.req.Parameters) {
			return 0, 0, false, nil
		}
	}
	if err := compress(j.method, data, zbuf); err != nil {
		return 0, 0, false, fmt.Errorf("compress block %s: %w", sum, err)
	}
	if err := j.s.d.Write(ctx, p, bytes.NewReader(zbuf.Bytes()), int64(zbuf.Len())); err != nil {
		return 0, 0, false, fmt.Errorf("upload block %s (offset %d): %w", sum, w.off, err)
	}
	if exists {
		return 0, int64(zbuf.Len()), false, nil
	}
	return int64(zbuf.Len()), 0, true, nil
}

// newBlocks counts the blocks this backup added to the store.
func (u *upload) newBlocks() int64 {
	n := u.dropped
	for _, r := range u.records {
		if r.isNew {
			n++
		}
	}
	return n
}

func (j *BackupJob) finalBackup(u *upload) *Backup {
	mine := make([]BlockMapping, 0, len(u.records))
	var newly, reup int64
	for off, r := range u.records {
		mine = append(mine, BlockMapping{Offset: off, BlockChecksum: r.sum})
		newly, reup = newly+r.newly, reup+r.reup
	}
	sort.Slice(mine, func(a, b int) bool { return mine[a].Offset < mine[b].Offset })
	blocks := mine
	if j.last != nil {
		blocks = MergeBlocks(j.last.Blocks, mine)
	}
	return &Backup{
		Name: j.req.BackupName, VolumeName: j.req.VolumeName, SnapshotName: j.req.SnapshotName,
		SnapshotCreatedAt: j.req.SnapshotCreatedAt, CreatedTime: formatTime(j.s.opts.Now()),
		Size: int64(len(blocks)) * j.blockSize, Labels: j.req.Labels, Parameters: j.req.Parameters,
		IsIncremental: j.last != nil, CompressionMethod: j.method,
		NewlyUploadedDataSize: newly, ReUploadedDataSize: reup, Blocks: blocks,
	}
}

package backupstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"time"
)

var snapNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Source is the snapshot being backed up, as the replica sees it.
type Source interface {
	// HasSnapshot reports whether the replica still has snapshot name (the
	// base of an incremental backup).
	HasSnapshot(name string) bool
	// ChangedBlocks returns, sorted, the offsets of the blockSize-aligned
	// blocks of snapshot snap that may differ from snapshot base; base ""
	// means every block that holds data (a full backup).
	ChangedBlocks(snap, base string, blockSize int64) ([]int64, error)
	// ReadSnapshot fills p with the content of snapshot snap at off (holes
	// read as zeroes).
	ReadSnapshot(snap string, p []byte, off int64) error
}

// BackupRequest describes one backup of a snapshot.
type BackupRequest struct {
	BackupName        string // "" = a new backup-<16 hex>
	VolumeName        string
	VolumeSize        int64 // bytes, a multiple of the block size
	SnapshotName      string
	SnapshotCreatedAt string // RFC 3339
	Labels            map[string]string
	// Parameters: ParameterBackupMode ("full" re-uploads every block) and
	// ParameterBackupBlockSize; stored in the backup .cfg.
	Parameters map[string]string
	// CompressionMethod for a new backup volume (default lz4); an existing
	// backup volume keeps the method in its volume.cfg.
	CompressionMethod    string
	ConcurrentLimit      int // upload workers, default 2 (backup-concurrent-limit)
	BackingImageName     string
	BackingImageChecksum string
	StorageClassName     string
	DataEngine           string // "v1" by default
	Source               Source
}

func (r *BackupRequest) validate() (int64, error) {
	if err := ValidateName("volume", r.VolumeName); err != nil {
		return 0, err
	}
	if r.BackupName != "" {
		if err := ValidateName("backup", r.BackupName); err != nil {
			return 0, err
		}
	}
	if !snapNameRE.MatchString(r.SnapshotName) || len(r.SnapshotName) > 253 {
		return 0, fmt.Errorf("%w: snapshot name %q: want 1-253 characters of [a-zA-Z0-9_.-] starting with a letter or digit",
			ErrInvalid, r.SnapshotName)
	}
	if r.Source == nil {
		return 0, fmt.Errorf("%w: backup of %s: no snapshot source", ErrInvalid, r.SnapshotName)
	}
	if r.CompressionMethod != "" {
		if err := ValidateCompression(r.CompressionMethod); err != nil {
			return 0, err
		}
	}
	if err := ValidateParameters(r.Parameters); err != nil {
		return 0, err
	}
	bs, _ := BlockSizeFromParameters(r.Parameters)
	if r.VolumeSize <= 0 || r.VolumeSize%bs != 0 {
		return 0, fmt.Errorf("%w: volume size %d: want a positive multiple of the backup block size %d", ErrInvalid, r.VolumeSize, bs)
	}
	if r.ConcurrentLimit < 0 || r.ConcurrentLimit > 64 {
		return 0, fmt.Errorf("%w: concurrent limit %d: want 1-64", ErrInvalid, r.ConcurrentLimit)
	}
	return bs, nil
}

// BackupJob is a prepared backup: the lock is held, the backup volume exists
// and the blocks to upload are known. Run it, or Abort it.
type BackupJob struct {
	s         *Store
	req       BackupRequest
	lock      *Lock
	vol       *Volume
	last      *Backup // base of an incremental backup, nil for a full one
	blockSize int64
	offsets   []int64
	method    string
}

// Name returns the backup name.
func (j *BackupJob) Name() string { return j.req.BackupName }

// IsIncremental reports whether only the blocks changed since the last
// backup are read (the previous backup's snapshot still exists).
func (j *BackupJob) IsIncremental() bool { return j.last != nil }

// BlockCount returns the number of blocks to read.
func (j *BackupJob) BlockCount() int { return len(j.offsets) }

// URL returns the backup URL (valid once Run succeeded).
func (j *BackupJob) URL() string {
	return EncodeBackupURL(j.req.BackupName, j.req.VolumeName, j.s.URL())
}

// Abort releases the lock of a job that will not run.
func (j *BackupJob) Abort() { _ = j.lock.Release() }

// PrepareBackup locks the backup volume (LockTypeBackup; waits behind another
// backup of the same volume), creates volume.cfg if it is new, and decides
// full or incremental the way Longhorn does: incremental against the volume's
// last backup unless the mode is full, that backup is unreadable, it was
// taken from this same snapshot, its snapshot is gone from the replica, or
// its block size differs.
func (s *Store) PrepareBackup(ctx context.Context, req BackupRequest) (*BackupJob, error) {
	bs, err := req.validate()
	if err != nil {
		return nil, err
	}
	if req.BackupName == "" {
		req.BackupName = GenerateName("backup")
	}
	if req.ConcurrentLimit == 0 {
		req.ConcurrentLimit = 2
	}
	j := &BackupJob{s: s, req: req, blockSize: bs, lock: s.newLock(req.VolumeName, LockTypeBackup, opBackup)}
	if err := j.lock.Acquire(ctx); err != nil {
		return nil, err
	}
	if err := j.prepare(ctx); err != nil {
		j.Abort()
		return nil, err
	}
	return j, nil
}

func (j *BackupJob) prepare(ctx context.Context) error {
	vol, err := j.s.ensureVolume(ctx, &j.req)
	if err != nil {
		return err
	}
	j.vol = vol
	j.method = effectiveMethod(string(vol.CompressionMethod))
	j.last = j.s.incrementalBase(ctx, vol, &j.req, j.blockSize)
	base := ""
	if j.last != nil {
		base = j.last.SnapshotName
	}
	offs, err := j.req.Source.ChangedBlocks(j.req.SnapshotName, base, j.blockSize)
	if err != nil {
		return fmt.Errorf("compare snapshot %s with %q: %w", j.req.SnapshotName, base, err)
	}
	for _, o := range offs {
		if o < 0 || o%j.blockSize != 0 || o >= j.req.VolumeSize {
			return fmt.Errorf("%w: snapshot %s: changed block offset %d outside the volume or unaligned", ErrInvalid, j.req.SnapshotName, o)
		}
	}
	j.offsets = offs
	return nil
}

func effectiveMethod(m string) string {
	if m == "" {
		return CompressionGzip // volume.cfg of a Longhorn before 1.5
	}
	return m
}

func (s *Store) ensureVolume(ctx context.Context, r *BackupRequest) (*Volume, error) {
	vol, err := s.LoadVolume(ctx, r.VolumeName)
	if err == nil {
		return vol, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	method := r.CompressionMethod
	if method == "" {
		method = CompressionLZ4
	}
	engine := r.DataEngine
	if engine == "" {
		engine = "v1"
	}
	vol = &Volume{
		Name: r.VolumeName, Size: r.VolumeSize, Labels: r.Labels, CreatedTime: formatTime(s.opts.Now()),
		BackingImageName: QuotedString(r.BackingImageName), BackingImageChecksum: QuotedString(r.BackingImageChecksum),
		CompressionMethod: QuotedString(method), StorageClassName: QuotedString(r.StorageClassName), DataEngine: QuotedString(engine),
	}
	if err := s.saveVolume(ctx, vol); err != nil {
		return nil, err
	}
	return vol, nil
}

func (s *Store) incrementalBase(ctx context.Context, vol *Volume, r *BackupRequest, bs int64) *Backup {
	if vol.LastBackupName == "" || isFullMode(r.Parameters) {
		return nil
	}
	last, err := s.LoadBackup(ctx, vol.Name, vol.LastBackupName)
	if err != nil || last.InProgress() || last.SnapshotName == r.SnapshotName || last.SnapshotName == "" {
		return nil
	}
	if lbs, err := last.BlockSize(); err != nil || lbs != bs {
		return nil
	}
	if !r.Source.HasSnapshot(last.SnapshotName) {
		return nil
	}
	return last
}

// upload is the shared state of a running backup's workers.
type upload struct {
	mu        sync.Mutex
	seen      map[string]bool // checksums handled in this run
	blocks    []BlockMapping
	newBlocks int64
	newly     int64
	reup      int64
	done      int
	progress  func(int)
}

// Run uploads the blocks and writes the backup .cfg and volume.cfg, then
// releases the lock. progress (may be nil) gets 0-100. On error or
// cancellation the in-progress backup .cfg is removed (Longhorn leaves it
// until the Backup is deleted, and it blocks block garbage collection until
// then); uploaded blocks stay for the next backup to reuse.
func (j *BackupJob) Run(ctx context.Context, progress func(int)) (_ *Backup, err error) {
	defer func() { _ = j.lock.Release() }()
	defer func() {
		if err != nil && ctx.Err() != nil && !errors.Is(err, ErrCanceled) {
			err = fmt.Errorf("%w: backup %s: %v", ErrCanceled, j.req.BackupName, err)
		}
	}()
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
	u := &upload{seen: map[string]bool{}, progress: progress}
	if err := j.uploadAll(ctx, u); err != nil {
		return nil, err
	}
	b := j.finalBackup(u)
	if err := j.s.saveBackup(ctx, b); err != nil {
		return nil, err
	}
	if err := j.updateVolume(ctx, b, u.newBlocks); err != nil {
		return nil, err
	}
	if progress != nil {
		progress(100)
	}
	return b, nil
}

func (j *BackupJob) uploadAll(ctx context.Context, u *upload) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int64)
	errc := make(chan error, j.req.ConcurrentLimit)
	var wg sync.WaitGroup
	for i := 0; i < j.req.ConcurrentLimit; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := j.worker(ctx, u, work); err != nil {
				errc <- err
				cancel()
			}
		}()
	}
feed:
	for _, off := range j.offsets {
		select {
		case work <- off:
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
	return ctx.Err()
}

func (j *BackupJob) worker(ctx context.Context, u *upload, work <-chan int64) error {
	buf := make([]byte, j.blockSize)
	var zbuf bytes.Buffer
	for off := range work {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := j.req.Source.ReadSnapshot(j.req.SnapshotName, buf, off); err != nil {
			return fmt.Errorf("read snapshot %s at offset %d: %w", j.req.SnapshotName, off, err)
		}
		if err := j.backupBlock(ctx, u, off, buf, &zbuf); err != nil {
			return err
		}
	}
	return nil
}

// backupBlock records one block and uploads it unless this run already did,
// or the store has it (and the mode is not full).
func (j *BackupJob) backupBlock(ctx context.Context, u *upload, off int64, data []byte, zbuf *bytes.Buffer) error {
	sum := Checksum(data)
	u.mu.Lock()
	dup := u.seen[sum]
	u.seen[sum] = true
	u.mu.Unlock()
	var newly, reup int64
	isNew := false
	if !dup {
		var err error
		if newly, reup, isNew, err = j.uploadBlock(ctx, sum, off, data, zbuf); err != nil {
			return err
		}
	}
	u.mu.Lock()
	u.blocks = append(u.blocks, BlockMapping{Offset: off, BlockChecksum: sum})
	u.newly += newly
	u.reup += reup
	if isNew {
		u.newBlocks++
	}
	u.done++
	pct := backupProgress(u.done, len(j.offsets))
	u.mu.Unlock()
	if u.progress != nil {
		u.progress(pct)
	}
	return nil
}

// uploadBlock uploads the block with checksum sum unless the store has it
// (and the mode is not full). It returns the compressed bytes written as new
// (isNew) or re-uploaded.
func (j *BackupJob) uploadBlock(ctx context.Context, sum string, off int64, data []byte, zbuf *bytes.Buffer) (newly, reup int64, isNew bool, err error) {
	p := BlockPath(j.req.VolumeName, sum)
	_, err = j.s.d.Stat(ctx, p)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, 0, false, fmt.Errorf("check block %s: %w", sum, err)
	}
	if exists && !isFullMode(j.req.Parameters) {
		return 0, 0, false, nil
	}
	if err := compress(j.method, data, zbuf); err != nil {
		return 0, 0, false, fmt.Errorf("compress block %s: %w", sum, err)
	}
	if err := j.s.d.Write(ctx, p, bytes.NewReader(zbuf.Bytes()), int64(zbuf.Len())); err != nil {
		return 0, 0, false, fmt.Errorf("upload block %s (offset %d): %w", sum, off, err)
	}
	if exists {
		return 0, int64(zbuf.Len()), false, nil
	}
	return int64(zbuf.Len()), 0, true, nil
}

// backupProgress maps processed blocks to 0-95 (Longhorn keeps the last 5 %
// for writing the .cfg files).
func backupProgress(done, total int) int {
	if total == 0 {
		return 95
	}
	return done * 95 / total
}

func (j *BackupJob) finalBackup(u *upload) *Backup {
	sort.Slice(u.blocks, func(a, b int) bool { return u.blocks[a].Offset < u.blocks[b].Offset })
	blocks := u.blocks
	if j.last != nil {
		blocks = MergeBlocks(j.last.Blocks, u.blocks)
	}
	if blocks == nil {
		blocks = []BlockMapping{}
	}
	return &Backup{
		Name: j.req.BackupName, VolumeName: j.req.VolumeName, SnapshotName: j.req.SnapshotName,
		SnapshotCreatedAt: j.req.SnapshotCreatedAt, CreatedTime: formatTime(j.s.opts.Now()),
		Size: int64(len(blocks)) * j.blockSize, Labels: j.req.Labels, Parameters: j.req.Parameters,
		IsIncremental: j.last != nil, CompressionMethod: j.method,
		NewlyUploadedDataSize: u.newly, ReUploadedDataSize: u.reup, Blocks: blocks,
	}
}

// MergeBlocks returns the union of two sorted block lists; at an offset in
// both, delta's block wins (Longhorn's mergeSnapshotMap).
func MergeBlocks(base, delta []BlockMapping) []BlockMapping {
	out := make([]BlockMapping, 0, max(len(base), len(delta)))
	i, k := 0, 0
	for i < len(base) && k < len(delta) {
		switch {
		case base[i].Offset == delta[k].Offset:
			out = append(out, delta[k])
			i++
			k++
		case base[i].Offset < delta[k].Offset:
			out = append(out, base[i])
			i++
		default:
			out = append(out, delta[k])
			k++
		}
	}
	out = append(out, base[i:]...)
	return append(out, delta[k:]...)
}

func (j *BackupJob) updateVolume(ctx context.Context, b *Backup, newBlocks int64) error {
	vol, err := j.s.LoadVolume(ctx, j.req.VolumeName)
	if err != nil {
		return err
	}
	r := &j.req
	vol.LastBackupName, vol.LastBackupAt = b.Name, b.SnapshotCreatedAt
	vol.BlockCount += newBlocks
	vol.Size = r.VolumeSize
	vol.Labels = r.Labels
	vol.BackingImageName, vol.BackingImageChecksum = QuotedString(r.BackingImageName), QuotedString(r.BackingImageChecksum)
	vol.StorageClassName = QuotedString(r.StorageClassName)
	if r.DataEngine != "" {
		vol.DataEngine = QuotedString(r.DataEngine)
	}
	return j.s.saveVolume(ctx, vol)
}

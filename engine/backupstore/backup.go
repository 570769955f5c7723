package backupstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"
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

// BackupJob is a prepared backup: its lock file is written (Run acquires
// it) and a plan of the blocks to upload is known, read before the lock is
// held; Run plans again once it is.
type BackupJob struct {
	s         *Store
	req       BackupRequest
	lock      *Lock
	vol       *Volume
	last      *Backup // base of an incremental backup, nil for a full one
	blockSize int64
	offsets   []int64
	method    string
	locked    atomic.Bool // the lock is held
}

// Name returns the backup name.
func (j *BackupJob) Name() string { return j.req.BackupName }

// IsIncremental reports whether only the blocks changed since the last
// backup are read (the previous backup's snapshot still exists). Before
// Run holds the lock this is the plan read without it, which a backup
// that completes meanwhile may change.
func (j *BackupJob) IsIncremental() bool { return j.last != nil }

// BlockCount returns the number of blocks to read.
func (j *BackupJob) BlockCount() int { return len(j.offsets) }

// URL returns the backup URL (valid once Run succeeded).
func (j *BackupJob) URL() string {
	return EncodeBackupURL(j.req.BackupName, j.req.VolumeName, j.s.URL())
}

// Abort removes the lock of a job that will not run.
func (j *BackupJob) Abort() { _ = j.lock.Release() }

// PrepareBackup writes the backup's lock file (LockTypeBackup) and plans the
// backup from the store as it is, the way Longhorn decides full or
// incremental: incremental against the volume's last backup unless the mode
// is full, that backup is unreadable, it was taken from this same snapshot,
// its snapshot is gone from the replica, or its block size differs. Run
// acquires the lock (it waits behind another backup of the same volume)
// while the blocks already upload, then creates volume.cfg if it is new and
// plans again.
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
	if err := j.lock.create(ctx); err != nil {
		return nil, err
	}
	vol, err := s.LoadVolume(ctx, req.VolumeName)
	if errors.Is(err, ErrNotFound) {
		vol, err = s.newVolume(&req), nil
	}
	if err == nil {
		err = j.plan(ctx, vol)
	}
	if err != nil {
		j.Abort()
		return nil, err
	}
	return j, nil
}

// plan decides the base and the blocks to read against vol.
func (j *BackupJob) plan(ctx context.Context, vol *Volume) error {
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

// newVolume is the volume.cfg of a volume's first backup.
func (s *Store) newVolume(r *BackupRequest) *Volume {
	method := r.CompressionMethod
	if method == "" {
		method = CompressionLZ4
	}
	engine := r.DataEngine
	if engine == "" {
		engine = "v1"
	}
	return &Volume{
		Name: r.VolumeName, Size: r.VolumeSize, Labels: r.Labels, CreatedTime: formatTime(s.opts.Now()),
		BackingImageName: QuotedString(r.BackingImageName), BackingImageChecksum: QuotedString(r.BackingImageChecksum),
		CompressionMethod: QuotedString(method), StorageClassName: QuotedString(r.StorageClassName), DataEngine: QuotedString(engine),
	}
}

// ensureVolume loads volume.cfg, writing it first for a new volume (the
// lock must be held).
func (s *Store) ensureVolume(ctx context.Context, r *BackupRequest) (*Volume, error) {
	vol, err := s.LoadVolume(ctx, r.VolumeName)
	if err == nil {
		return vol, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	vol = s.newVolume(r)
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

// backupProgress maps processed blocks to 0-95 (Longhorn keeps the last 5 %
// for writing the .cfg files).
func backupProgress(done, total int) int {
	if total == 0 {
		return 95
	}
	return done * 95 / total
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

// updateVolume records backup b in volume.cfg; blocks is the number of
// blocks b added (absolute: the volume's blocks, counted).
func (j *BackupJob) updateVolume(ctx context.Context, b *Backup, blocks int64, absolute bool) error {
	vol, err := j.s.LoadVolume(ctx, j.req.VolumeName)
	if err != nil {
		return err
	}
	r := &j.req
	vol.LastBackupName, vol.LastBackupAt = b.Name, b.SnapshotCreatedAt
	if absolute {
		vol.BlockCount = blocks // a recount: every block of the volume
	} else {
		vol.BlockCount += blocks
	}
	vol.Size = r.VolumeSize
	vol.Labels = r.Labels
	vol.BackingImageName, vol.BackingImageChecksum = QuotedString(r.BackingImageName), QuotedString(r.BackingImageChecksum)
	vol.StorageClassName = QuotedString(r.StorageClassName)
	if r.DataEngine != "" {
		vol.DataEngine = QuotedString(r.DataEngine)
	}
	return j.s.saveVolume(ctx, vol)
}

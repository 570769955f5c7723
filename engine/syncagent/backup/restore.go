package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// RestoreRequest is BackupRestore's input (Longhorn's BackupRestoreRequest).
type RestoreRequest struct {
	BackupURL        string
	SnapshotDiskName string // volume-snap-<name>.img
	Credential       map[string]string
	ConcurrentLimit  int
}

// RestoreStatus is RestoreStatus's answer (Longhorn's RestoreStatusResponse).
type RestoreStatus struct {
	IsRestoring            bool
	LastRestored           string // backup name
	Progress               int
	Error                  string
	DestFileName           string
	State                  string
	BackupURL              string
	CurrentRestoringBackup string
}

type restoreState struct {
	RestoreStatus
	cancel context.CancelFunc
}

// RestoreStatus returns the state of the last or running restore.
func (m *Manager) RestoreStatus() RestoreStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restore.RestoreStatus
}

// ResetRestore forgets a finished restore (the sync agent's Reset); the
// next restore is a full one. A running restore is left alone.
func (m *Manager) ResetRestore() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.restore.IsRestoring {
		m.restore = restoreState{}
	}
}

// CancelRestore stops a running restore (the previous data stays).
func (m *Manager) CancelRestore() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.restore.IsRestoring && m.restore.cancel != nil {
		m.restore.cancel()
	}
}

// Restore starts restoring a backup into the snapshot file SnapshotDiskName.
// The first restore writes the whole backup into <disk>.snap_tmp, renames it
// over the disk and makes it the replica's only snapshot (head reverted to
// it). When this replica already restored a backup into that disk, only the
// blocks that differ are fetched into volume-delta-<last>.img, then folded
// into the disk (Longhorn's incremental restore of DR volumes). A failed or
// canceled restore leaves the disk as it was. The target is opened, the
// backup loaded and the lock file written before Restore returns; the lock
// is acquired while the first blocks already move into the temporary file.
func (m *Manager) Restore(ctx context.Context, req RestoreRequest) error {
	snap, ok := replica.SnapshotName(req.SnapshotDiskName)
	if !ok {
		return fmt.Errorf("%w: snapshot disk name %q: want volume-snap-<name>.img", backupstore.ErrInvalid, req.SnapshotDiskName)
	}
	disk, err := m.r.FilePath(req.SnapshotDiskName)
	if err != nil {
		return fmt.Errorf("%w: snapshot disk name %q: %v", backupstore.ErrInvalid, req.SnapshotDiskName, err)
	}
	backupName, volume, target, err := backupstore.DecodeBackupURL(req.BackupURL)
	if err != nil {
		return err
	}
	if backupName == "" {
		return fmt.Errorf("%w: backup URL %q names no backup", backupstore.ErrInvalid, req.BackupURL)
	}
	m.mu.Lock()
	prev := m.restore.RestoreStatus
	if prev.IsRestoring {
		m.mu.Unlock()
		return fmt.Errorf("%w: restore of %s in progress", ErrBusy, prev.CurrentRestoringBackup)
	}
	last := ""
	if prev.LastRestored != "" && prev.DestFileName == req.SnapshotDiskName && m.r.HasDisk(req.SnapshotDiskName) {
		last = prev.LastRestored
	}
	if last == backupName {
		m.mu.Unlock()
		return nil // already holds this backup
	}
	m.restore.RestoreStatus = RestoreStatus{IsRestoring: true, LastRestored: prev.LastRestored, DestFileName: req.SnapshotDiskName,
		State: StateInProgress, BackupURL: req.BackupURL, CurrentRestoringBackup: backupName}
	m.mu.Unlock()
	job, store, err := m.prepareRestore(ctx, req, volume, backupName, target, last)
	if err != nil {
		m.finishRestore("", err)
		return err
	}
	runCtx, cancel := context.WithCancel(m.ctx)
	m.mu.Lock()
	m.restore.cancel = cancel
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		defer store.Close()
		err := m.runRestore(runCtx, job, disk, snap, last)
		done := ""
		if err == nil {
			done = backupName
		}
		m.finishRestore(done, err)
	}()
	return nil
}

func (m *Manager) prepareRestore(ctx context.Context, req RestoreRequest, volume, backupName, target, last string) (*backupstore.RestoreJob, *backupstore.Store, error) {
	store, err := m.open(ctx, target, req.Credential)
	if err != nil {
		return nil, nil, err
	}
	job, err := store.PrepareRestore(ctx, backupstore.RestoreRequest{VolumeName: volume, BackupName: backupName,
		LastBackupName: last, ConcurrentLimit: req.ConcurrentLimit})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	if size := m.r.VolumeSize(); job.VolumeSize() > size {
		job.Abort()
		store.Close()
		return nil, nil, fmt.Errorf("%w: backup volume %s is %d bytes, larger than this replica (%d bytes)",
			backupstore.ErrInvalid, volume, job.VolumeSize(), size)
	}
	return job, store, nil
}

func (m *Manager) finishRestore(restored string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := &m.restore.RestoreStatus
	st.IsRestoring = false
	m.restore.cancel = nil
	if err != nil {
		st.State, st.Error = StateError, err.Error()
		m.opts.Log.WithError(err).WithField("backup", st.CurrentRestoringBackup).Error("restore failed")
		return
	}
	st.State, st.Error, st.Progress, st.LastRestored = StateComplete, "", 100, restored
}

func (m *Manager) progress(p int) {
	m.mu.Lock()
	m.restore.Progress = p
	m.mu.Unlock()
}

func (m *Manager) runRestore(ctx context.Context, job *backupstore.RestoreJob, disk, snap, last string) error {
	if last == "" {
		return m.fullRestore(ctx, job, disk, snap)
	}
	return m.incrementalRestore(ctx, job, disk, last)
}

// fileWriter writes restored blocks into a sparse file: through an
// O_DIRECT descriptor when the file system takes it and the block is
// aligned (restores write whole blocks at block offsets from page-aligned
// buffers), so that a restore neither fills the page cache with the
// volume's bytes nor waits on its writeback; else buffered.
type fileWriter struct {
	f       *os.File
	df      *os.File // O_DIRECT, or nil
	mu      sync.Mutex
	written []int64 // offsets of blocks written
	zeroed  []int64 // offsets of blocks to zero
	record  bool
}

// createRestoreFile creates (truncates) path with size bytes and opens its
// writer.
func createRestoreFile(path string, size int64, record bool) (*fileWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, err
	}
	w := &fileWriter{f: f, record: record}
	if df, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0); err == nil {
		w.df = df
	}
	return w, nil
}

func (w *fileWriter) WriteAt(p []byte, off int64) (int, error) {
	n, err := w.writeAt(p, off)
	if err == nil && w.record {
		w.mu.Lock()
		w.written = append(w.written, off)
		w.mu.Unlock()
	}
	return n, err
}

func (w *fileWriter) writeAt(p []byte, off int64) (int, error) {
	if w.df != nil && off%directIOAlign == 0 && len(p)%directIOAlign == 0 && bufpool.Aligned(p) {
		if n, err := w.df.WriteAt(p, off); err == nil {
			return n, nil
		}
	}
	return w.f.WriteAt(p, off)
}

func (w *fileWriter) ZeroRange(off, n int64) error {
	if w.record {
		w.mu.Lock()
		w.zeroed = append(w.zeroed, off)
		w.mu.Unlock()
		return nil
	}
	return sparse.PunchHole(w.f, off, n)
}

// close syncs the file when sync is set, then closes it.
func (w *fileWriter) close(sync bool) error {
	var err error
	for _, f := range []*os.File{w.df, w.f} {
		if f == nil {
			continue
		}
		if sync && err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// directIOAlign is the alignment O_DIRECT writes need.
const directIOAlign = 4096

func (m *Manager) fullRestore(ctx context.Context, job *backupstore.RestoreJob, disk, snap string) error {
	tmp := disk + ".snap_tmp"
	defer os.Remove(tmp) // a no-op after the rename
	w, err := createRestoreFile(tmp, m.r.VolumeSize(), false)
	if err != nil {
		job.Abort()
		return err
	}
	err = job.Run(ctx, w, m.progress)
	if cerr := w.close(err == nil); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, disk); err != nil {
		return err
	}
	return m.r.FinishClone(snap)
}

func (m *Manager) incrementalRestore(ctx context.Context, job *backupstore.RestoreJob, disk, last string) error {
	delta := filepath.Join(filepath.Dir(disk), "volume-delta-"+last+".img")
	defer os.Remove(delta)
	w, err := createRestoreFile(delta, m.r.VolumeSize(), true)
	if err != nil {
		job.Abort()
		return err
	}
	defer w.close(false)
	blockSize, _ := job.Backup().BlockSize()
	if err := job.Run(ctx, w, m.progress); err != nil {
		return err
	}
	if err := fold(w.f, disk, w.written, w.zeroed, blockSize); err != nil {
		return fmt.Errorf("fold %s into %s: %w", filepath.Base(delta), filepath.Base(disk), err)
	}
	return m.r.ReloadStore()
}

// fold copies the written blocks of the delta into the disk and punches the
// zeroed ones, then syncs the disk.
func fold(delta *os.File, disk string, written, zeroed []int64, bs int64) (err error) {
	d, err := os.OpenFile(disk, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}()
	sort.Slice(written, func(i, j int) bool { return written[i] < written[j] })
	for _, off := range written {
		if err := sparse.CopyRange(d, delta, off, bs); err != nil {
			return err
		}
	}
	for _, off := range zeroed {
		if err := sparse.PunchHole(d, off, bs); err != nil && !errors.Is(err, os.ErrInvalid) {
			return err
		}
	}
	return d.Sync()
}

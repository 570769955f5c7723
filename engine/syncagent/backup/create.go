package backup

import (
	"context"
	"fmt"

	"github.com/longhorn-go/longhorn/engine/backupstore"
)

// CreateRequest is BackupCreate's input (Longhorn's BackupCreateRequest).
type CreateRequest struct {
	SnapshotName         string // bare snapshot name
	BackupTarget         string
	VolumeName           string
	BackupName           string // "" = generated
	Labels               map[string]string
	Credential           map[string]string
	BackingImageName     string
	BackingImageChecksum string
	CompressionMethod    string
	ConcurrentLimit      int
	StorageClassName     string
	Parameters           map[string]string
}

// CreateResult is BackupCreate's answer.
type CreateResult struct {
	BackupName    string
	IsIncremental bool
}

// BackupStatus is BackupStatus's answer.
type BackupStatus struct {
	Progress     int
	BackupURL    string
	Error        string
	SnapshotName string
	State        string
}

type backupTask struct {
	status BackupStatus
	cancel context.CancelFunc
}

// Create starts a backup of a snapshot: it opens the target, writes the
// backup volume's lock file and decides full or incremental before it
// returns (so a bad target or a missing snapshot fail here), then acquires
// the lock and uploads in the background, the first blocks while the lock
// is awaited; Status reports progress, and a lock held by a deletion past
// Longhorn's 30 s fails the backup there.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (CreateResult, error) {
	if err := backupstore.ValidateName("volume", req.VolumeName); err != nil {
		return CreateResult{}, err
	}
	file := snapFile(req.SnapshotName)
	if _, err := m.r.FilePath(file); err != nil {
		return CreateResult{}, fmt.Errorf("%w: snapshot name %q: %v", backupstore.ErrInvalid, req.SnapshotName, err)
	}
	if !m.r.HasDisk(file) {
		return CreateResult{}, fmt.Errorf("%w: snapshot %s is not in this replica", backupstore.ErrNotFound, req.SnapshotName)
	}
	if req.BackupName == "" {
		req.BackupName = backupstore.GenerateName("backup")
	}
	// The name is taken before the lock is waited for, so a second call for
	// the same backup (a retried RPC) is refused at once instead of taking a
	// second lock and running the backup again.
	prepCtx, prepCancel := context.WithCancel(ctx)
	defer prepCancel()
	m.mu.Lock()
	if t, ok := m.backups[req.BackupName]; ok && t.status.State == StateInProgress {
		m.mu.Unlock()
		return CreateResult{}, fmt.Errorf("%w: backup %s is already in progress", ErrBusy, req.BackupName)
	}
	prep := &backupTask{cancel: prepCancel, status: BackupStatus{State: StateInProgress, SnapshotName: req.SnapshotName}}
	m.backups[req.BackupName] = prep
	m.mu.Unlock()
	job, src, store, err := m.prepare(prepCtx, req)
	if err != nil {
		m.mu.Lock()
		if m.backups[req.BackupName] == prep {
			delete(m.backups, req.BackupName)
		}
		m.mu.Unlock()
		return CreateResult{}, err
	}
	runCtx, cancel := context.WithCancel(m.ctx)
	t := &backupTask{cancel: cancel, status: BackupStatus{State: StateInProgress, SnapshotName: req.SnapshotName}}
	m.mu.Lock()
	if err := prepCtx.Err(); err != nil {
		// canceled (Cancel or the caller) while it was prepared
		delete(m.backups, req.BackupName)
		m.mu.Unlock()
		cancel()
		job.Abort()
		src.Close()
		store.Close()
		return CreateResult{}, fmt.Errorf("%w: backup %s: %v", backupstore.ErrCanceled, req.BackupName, err)
	}
	m.backups[req.BackupName] = t
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		defer src.Close()
		defer store.Close()
		_, err := job.Run(runCtx, func(p int) { m.setBackup(req.BackupName, func(s *BackupStatus) { s.Progress = p }) })
		m.setBackup(req.BackupName, func(s *BackupStatus) {
			if err != nil {
				s.State, s.Error = StateError, err.Error()
				m.opts.Log.WithError(err).WithField("backup", req.BackupName).Error("backup failed")
				return
			}
			s.State, s.Progress, s.BackupURL = StateComplete, 100, job.URL()
		})
	}()
	return CreateResult{BackupName: req.BackupName, IsIncremental: job.IsIncremental()}, nil
}

func (m *Manager) prepare(ctx context.Context, req CreateRequest) (*backupstore.BackupJob, *layerSource, *backupstore.Store, error) {
	layers, size, err := m.r.SnapshotLayers(req.SnapshotName)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("snapshot %s: %w", req.SnapshotName, err)
	}
	created, err := m.r.SnapshotCreated(req.SnapshotName)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("snapshot %s: %w", req.SnapshotName, err)
	}
	src, err := openSource(req.SnapshotName, layers, size)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := m.open(ctx, req.BackupTarget, req.Credential)
	if err != nil {
		src.Close()
		return nil, nil, nil, err
	}
	job, err := store.PrepareBackup(ctx, backupstore.BackupRequest{
		BackupName: req.BackupName, VolumeName: req.VolumeName, VolumeSize: size,
		SnapshotName: req.SnapshotName, SnapshotCreatedAt: created, Labels: req.Labels, Parameters: req.Parameters,
		CompressionMethod: req.CompressionMethod, ConcurrentLimit: req.ConcurrentLimit,
		BackingImageName: req.BackingImageName, BackingImageChecksum: req.BackingImageChecksum,
		StorageClassName: req.StorageClassName, DataEngine: "v1", Source: src,
	})
	if err != nil {
		src.Close()
		store.Close()
		return nil, nil, nil, err
	}
	return job, src, store, nil
}

func (m *Manager) setBackup(name string, fn func(*BackupStatus)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.backups[name]; ok {
		fn(&t.status)
	}
}

// Status returns a backup's status; ok is false for a backup this replica
// does not know.
func (m *Manager) Status(name string) (BackupStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.backups[name]
	if !ok {
		return BackupStatus{}, false
	}
	return t.status, true
}

// Cancel stops a running backup of this replica: its upload stops, its lock
// is released and its incomplete backup .cfg removed, and its status ends in
// StateError with an error wrapping backupstore.ErrCanceled. Cancel returns
// at once (Status follows the end); a backup that already ended is left as
// it is. known is false for a backup this replica does not know.
func (m *Manager) Cancel(name string) (known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.backups[name]
	if ok && t.status.State == StateInProgress {
		t.cancel()
	}
	return ok
}

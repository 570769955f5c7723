package backup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/backupstore"
)

// Replica is what backups and restores need from the replica process.
type Replica interface {
	// FilePath returns the path of a layout file (volume-snap-X.img, ...).
	FilePath(name string) (string, error)
	// SnapshotLayers returns the chain of snapshot name, oldest first, and
	// the volume size in bytes.
	SnapshotLayers(name string) ([]string, int64, error)
	// HasDisk reports whether the replica has the disk file.
	HasDisk(file string) bool
	// SnapshotCreated returns the snapshot's creation time (RFC 3339).
	SnapshotCreated(name string) (string, error)
	// VolumeSize returns the replica's size in bytes.
	VolumeSize() int64
	// FinishClone adopts a received snapshot file as the only snapshot:
	// writes its .meta, reloads the replica and reverts the head to it.
	FinishClone(name string) error
	// ReloadStore re-reads the replica after a snapshot file changed in place.
	ReloadStore() error
}

// Process states (Longhorn's types.ProcessState*).
const (
	StateInProgress = "in_progress"
	StateComplete   = "complete"
	StateError      = "error"
)

// ErrBusy is returned when a restore (or a conflicting operation) runs.
var ErrBusy = errors.New("busy")

// Options tune a Manager.
type Options struct {
	// Store tunes the backupstore (lock timing).
	Store backupstore.Options
	// OpenTimeout bounds opening a target (default 60 s): an unreachable or
	// refusing target fails BackupCreate/BackupRestore within it.
	OpenTimeout time.Duration
	Log         logrus.FieldLogger
}

// Manager runs one replica's backups and restores.
type Manager struct {
	r    Replica
	opts Options

	mu      sync.Mutex
	backups map[string]*backupTask
	restore restoreState
	creds   map[string]backupstore.Credential // by target URL, for BackupRemove
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// New returns a Manager for r.
func New(r Replica, opts Options) *Manager {
	if opts.OpenTimeout == 0 {
		opts.OpenTimeout = time.Minute
	}
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Manager{r: r, opts: opts, backups: map[string]*backupTask{}, creds: map[string]backupstore.Credential{},
		ctx: ctx, stop: stop}
}

// Close cancels running backups and restores and waits for them.
func (m *Manager) Close() {
	m.stop()
	m.wg.Wait()
}

// Busy reports whether a backup or restore runs (a snapshot purge must wait).
func (m *Manager) Busy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.restore.IsRestoring {
		return true
	}
	for _, t := range m.backups {
		if t.status.State == StateInProgress {
			return true
		}
	}
	return false
}

func (m *Manager) open(ctx context.Context, target string, cred map[string]string) (*backupstore.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.OpenTimeout)
	defer cancel()
	s, err := backupstore.Open(ctx, target, cred, m.opts.Store)
	if err != nil {
		return nil, err
	}
	if len(cred) > 0 {
		m.mu.Lock()
		m.creds[s.URL()] = cred
		m.mu.Unlock()
	}
	return s, nil
}

// ParseLabels turns Longhorn's "k=v" label list into a map; a label without
// "=" is an error naming it.
func ParseLabels(labels []string) (map[string]string, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(labels))
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: label %q: want key=value", backupstore.ErrInvalid, l)
		}
		out[k] = v
	}
	return out, nil
}

// Remove deletes a backup from its store (the sync agent's BackupRemove);
// a backup of this replica still running is canceled first. cred may be
// nil: the credential of the last backup to the same target is used, as
// Longhorn's agent keeps it in its environment.
func (m *Manager) Remove(ctx context.Context, backupURL string, cred map[string]string) error {
	name, volume, target, err := backupstore.DecodeBackupURL(backupURL)
	if err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("%w: backup URL %q names no backup", backupstore.ErrInvalid, backupURL)
	}
	m.Cancel(name)
	if len(cred) == 0 {
		m.mu.Lock()
		for u, c := range m.creds {
			if strings.TrimSuffix(u, "/") == strings.TrimSuffix(target, "/") {
				cred = c
			}
		}
		m.mu.Unlock()
	}
	s, err := m.open(ctx, target, cred)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.DeleteBackup(ctx, volume, name)
	return err
}

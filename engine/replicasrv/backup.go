package replicasrv

import (
	"fmt"

	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/syncagent/backup"
)

// The methods below complete what the sync agent's backups and restores
// need from the replica (engine/syncagent/backup.Replica); SnapshotLayers,
// HasDisk and FinishClone are in clone.go.

// SnapshotCreated returns the creation time recorded in a snapshot's .meta.
func (r syncReplica) SnapshotCreated(name string) (string, error) {
	st := r.s.cur.Load()
	if st == nil {
		return "", errNoStore
	}
	d, ok := st.ListDisks()[replica.SnapshotFileName(name)]
	if !ok {
		return "", fmt.Errorf("%w: snapshot %s", replica.ErrNotFound, name)
	}
	return d.Created, nil
}

// VolumeSize returns the replica's size in bytes (0 while closed).
func (r syncReplica) VolumeSize() int64 {
	st := r.s.cur.Load()
	if st == nil {
		return 0
	}
	return st.Size()
}

// ReloadStore re-reads the replica directory after a restore changed a
// snapshot file in place (an incremental restore's fold).
func (r syncReplica) ReloadStore() error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	st := r.s.cur.Load()
	if st == nil {
		return errNoStore
	}
	return st.Reload()
}

// BackupReplica returns the server as the backup manager's Replica (for
// programs that run backups in-process, such as the backup benchmark).
func (s *Server) BackupReplica() backup.Replica { return syncReplica{s} }

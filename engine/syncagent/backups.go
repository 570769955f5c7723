package syncagent

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/syncagent/backup"
)

// The backup methods of SyncAgentService: thin conversions to
// engine/syncagent/backup.Manager, which does the work. A replica whose
// Replica does not implement backup.Replica answers Unimplemented.

// newBackups returns the agent's backup manager, or nil.
func newBackups(r Replica, cfg Config) *backup.Manager {
	br, ok := r.(backup.Replica)
	if !ok {
		return nil
	}
	return backup.New(br, backup.Options{Log: cfg.Log})
}

var errNoBackups = status.Error(codes.Unimplemented, "this replica cannot take backups")

// backupErr maps backupstore and manager errors to gRPC codes callers branch on.
func backupErr(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Internal
	switch {
	case errors.Is(err, backupstore.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, backupstore.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, backupstore.ErrUnavailable):
		code = codes.Unavailable
	case errors.Is(err, backupstore.ErrLocked), errors.Is(err, backup.ErrBusy):
		code = codes.FailedPrecondition
	case errors.Is(err, backupstore.ErrCorrupt):
		code = codes.DataLoss
	case errors.Is(err, backupstore.ErrCanceled), errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, err.Error())
}

// BackupCreate starts a backup of a snapshot (snapshot_file_name is the
// bare snapshot name, as Longhorn sends it).
func (a *Agent) BackupCreate(ctx context.Context, req *enginerpc.BackupCreateRequest) (*enginerpc.BackupCreateResponse, error) {
	if a.bk == nil {
		return nil, errNoBackups
	}
	if a.purgeActive() {
		return nil, status.Error(codes.FailedPrecondition, "cannot back up: the replica is purging snapshots")
	}
	labels, err := backup.ParseLabels(req.GetLabels())
	if err != nil {
		return nil, backupErr(err)
	}
	res, err := a.bk.Create(ctx, backup.CreateRequest{
		SnapshotName: req.GetSnapshotFileName(), BackupTarget: req.GetBackupTarget(), VolumeName: req.GetVolumeName(),
		BackupName: req.GetBackupName(), Labels: labels, Credential: req.GetCredential(),
		BackingImageName: req.GetBackingImageName(), BackingImageChecksum: req.GetBackingImageChecksum(),
		CompressionMethod: req.GetCompressionMethod(), ConcurrentLimit: int(req.GetConcurrentLimit()),
		StorageClassName: req.GetStorageClassName(), Parameters: req.GetParameters(),
	})
	if err != nil {
		return nil, backupErr(err)
	}
	return &enginerpc.BackupCreateResponse{Backup: res.BackupName, IsIncremental: res.IsIncremental}, nil
}

// BackupStatus reports one backup this replica runs or ran.
func (a *Agent) BackupStatus(_ context.Context, req *enginerpc.BackupStatusRequest) (*enginerpc.BackupStatusResponse, error) {
	if a.bk == nil {
		return nil, errNoBackups
	}
	st, ok := a.bk.Status(req.GetBackup())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "backup %s is not known to this replica", req.GetBackup())
	}
	return &enginerpc.BackupStatusResponse{Progress: int32(st.Progress), BackupUrl: st.BackupURL, Error: st.Error,
		SnapshotName: st.SnapshotName, State: st.State}, nil
}

// BackupRemove deletes a backup (URL) from its store, canceling it first
// when this replica is still taking it.
func (a *Agent) BackupRemove(ctx context.Context, req *enginerpc.BackupRemoveRequest) (*emptypb.Empty, error) {
	if a.bk == nil {
		return nil, errNoBackups
	}
	if err := a.bk.Remove(ctx, req.GetBackup(), nil); err != nil {
		return nil, backupErr(err)
	}
	return &emptypb.Empty{}, nil
}

// BackupRestore starts restoring a backup (URL) into a snapshot disk file.
func (a *Agent) BackupRestore(ctx context.Context, req *enginerpc.BackupRestoreRequest) (*emptypb.Empty, error) {
	if a.bk == nil {
		return nil, errNoBackups
	}
	if a.purgeActive() {
		return nil, status.Error(codes.FailedPrecondition, "cannot restore: the replica is purging snapshots")
	}
	err := a.bk.Restore(ctx, backup.RestoreRequest{BackupURL: req.GetBackup(), SnapshotDiskName: req.GetSnapshotDiskName(),
		Credential: req.GetCredential(), ConcurrentLimit: int(req.GetConcurrentLimit())})
	if err != nil {
		return nil, backupErr(err)
	}
	return &emptypb.Empty{}, nil
}

// RestoreStatus reports the replica's last or running restore. Longhorn's
// CLI asks every WO replica during a rebuild, so it answers (empty) on a
// replica that never restored.
func (a *Agent) RestoreStatus(context.Context, *emptypb.Empty) (*enginerpc.RestoreStatusResponse, error) {
	if a.bk == nil {
		return &enginerpc.RestoreStatusResponse{}, nil
	}
	st := a.bk.RestoreStatus()
	return &enginerpc.RestoreStatusResponse{IsRestoring: st.IsRestoring, LastRestored: st.LastRestored,
		Progress: int32(st.Progress), Error: st.Error, DestFileName: st.DestFileName, State: st.State,
		BackupUrl: st.BackupURL, CurrentRestoringBackup: st.CurrentRestoringBackup}, nil
}

func (a *Agent) purgeActive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.purge.active
}

// backupsBusy reports whether a backup or restore runs (a purge waits).
func (a *Agent) backupsBusy() bool { return a.bk != nil && a.bk.Busy() }

// ExtServer is the agent's lhext.SyncAgentExtService, served next to
// SyncAgentService on the sync-agent port.
type ExtServer struct {
	enginerpc.UnimplementedSyncAgentExtServiceServer
	a *Agent
}

// Ext returns the agent's extension service.
func (a *Agent) Ext() *ExtServer { return &ExtServer{a: a} }

// BackupCancel stops a backup this replica is taking (see backup.Manager.Cancel);
// an unknown backup is NotFound, one that already ended is left as it is.
func (e *ExtServer) BackupCancel(_ context.Context, req *enginerpc.BackupCancelRequest) (*emptypb.Empty, error) {
	if e.a.bk == nil {
		return nil, errNoBackups
	}
	if req.GetBackup() == "" {
		return nil, status.Error(codes.InvalidArgument, "backup (the backup name) is required")
	}
	if !e.a.bk.Cancel(req.GetBackup()) {
		return nil, status.Errorf(codes.NotFound, "backup %s is not known to this replica", req.GetBackup())
	}
	return &emptypb.Empty{}, nil
}

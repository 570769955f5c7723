package engineapi

import (
	"context"
	"time"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// BackupTarget names a backupstore and its credential (the content of the
// BackupTarget's credential Secret).
type BackupTarget struct {
	URL        string
	Credential map[string]string
}

func (t BackupTarget) rpc() *imrpc.BackupTarget {
	return &imrpc.BackupTarget{Url: t.URL, Credential: t.Credential}
}

// SnapshotBackupRequest asks an engine to back a snapshot up.
type SnapshotBackupRequest struct {
	Target               BackupTarget
	SnapshotName         string
	BackupName           string
	Labels               map[string]string
	CompressionMethod    string
	ConcurrentLimit      int
	BackingImageName     string
	BackingImageChecksum string
	StorageClassName     string
	// Parameters: "backup-mode" (full|incremental), "backup-block-size".
	Parameters map[string]string
}

// BackupStarted says which replica takes a backup.
type BackupStarted struct {
	BackupName     string
	ReplicaAddress string
	IsIncremental  bool
}

// BackupStatus is a running or finished backup as its replica reports it.
type BackupStatus struct {
	Progress       int
	BackupURL      string
	Error          string
	SnapshotName   string
	State          string // in_progress, complete, error
	ReplicaAddress string
}

// RestoreStatus is one replica's restore (Longhorn's RestoreStatus).
type RestoreStatus struct {
	IsRestoring            bool
	LastRestored           string
	CurrentRestoringBackup string
	Progress               int
	Error                  string
	State                  string
	BackupURL              string
	DestFileName           string
}

// BackupClient is an engine's backup and restore calls. The proxy's
// EngineClient implements it.
type BackupClient interface {
	// SnapshotBackup starts a backup of a snapshot on an RW replica.
	SnapshotBackup(ctx context.Context, req SnapshotBackupRequest) (*BackupStarted, error)
	// SnapshotBackupStatus reports a backup (replica "" = ask the RW replicas).
	SnapshotBackupStatus(ctx context.Context, backupName, replica string) (*BackupStatus, error)
	// SnapshotBackupCancel stops a running backup on replica ("" = the RW
	// replica that reports it); it returns at once and SnapshotBackupStatus
	// then reports state "error". IsUnimplemented: the instance manager or
	// the replica cannot cancel (Longhorn's), the backup runs to its end;
	// IsNotFound: no replica knows the backup.
	SnapshotBackupCancel(ctx context.Context, backupName, replica string) error
	// BackupRestore starts restoring a backup URL into every replica.
	BackupRestore(ctx context.Context, target BackupTarget, backupURL string, concurrentLimit int) error
	// BackupRestoreStatus reports every replica's restore by address.
	BackupRestoreStatus(ctx context.Context) (map[string]*RestoreStatus, error)
}

var _ BackupClient = (*proxyEngineClient)(nil)

// backupCallTimeout: starting a backup or restore opens the target and takes
// its lock (Longhorn waits up to 30 s for a conflicting lock).
const backupCallTimeout = 2 * time.Minute

func (p *proxyEngineClient) SnapshotBackup(ctx context.Context, req SnapshotBackupRequest) (*BackupStarted, error) {
	ctx, cancel := context.WithTimeout(ctx, backupCallTimeout)
	defer cancel()
	r, err := proxyCall(ctx, p, "SnapshotBackup", imrpc.ProxyEngineServiceClient.SnapshotBackup, &imrpc.EngineSnapshotBackupRequest{
		ProxyEngineRequest: p.req, Target: req.Target.rpc(), SnapshotName: req.SnapshotName, BackupName: req.BackupName,
		Labels: req.Labels, CompressionMethod: req.CompressionMethod, ConcurrentLimit: int32(req.ConcurrentLimit),
		BackingImageName: req.BackingImageName, BackingImageChecksum: req.BackingImageChecksum,
		StorageClassName: req.StorageClassName, Parameters: req.Parameters,
	})
	if err != nil {
		return nil, err
	}
	return &BackupStarted{BackupName: r.GetBackupId(), ReplicaAddress: r.GetReplica(), IsIncremental: r.GetIsIncremental()}, nil
}

func (p *proxyEngineClient) SnapshotBackupStatus(ctx context.Context, backupName, replica string) (*BackupStatus, error) {
	r, err := proxyCall(ctx, p, "SnapshotBackupStatus", imrpc.ProxyEngineServiceClient.SnapshotBackupStatus,
		&imrpc.EngineSnapshotBackupStatusRequest{ProxyEngineRequest: p.req, BackupName: backupName, ReplicaAddress: replica})
	if err != nil {
		return nil, err
	}
	return &BackupStatus{Progress: int(r.GetProgress()), BackupURL: r.GetBackupUrl(), Error: r.GetError(),
		SnapshotName: r.GetSnapshotName(), State: r.GetState(), ReplicaAddress: r.GetReplicaAddress()}, nil
}

func (p *proxyEngineClient) SnapshotBackupCancel(ctx context.Context, backupName, replica string) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	_, err := p.ext.SnapshotBackupCancel(ctx, &imrpc.EngineSnapshotBackupCancelRequest{ProxyEngineRequest: p.req,
		BackupName: backupName, ReplicaAddress: replica})
	if err != nil {
		p.entry.suspect(err)
		return callError(p.target, "SnapshotBackupCancel", err)
	}
	return nil
}

func (p *proxyEngineClient) BackupRestore(ctx context.Context, target BackupTarget, backupURL string, concurrentLimit int) error {
	ctx, cancel := context.WithTimeout(ctx, backupCallTimeout)
	defer cancel()
	_, err := proxyCall(ctx, p, "BackupRestore", imrpc.ProxyEngineServiceClient.BackupRestore, &imrpc.EngineBackupRestoreRequest{
		ProxyEngineRequest: p.req, Target: target.rpc(), BackupUrl: backupURL, VolumeName: p.req.GetVolumeName(),
		ConcurrentLimit: int32(concurrentLimit)})
	return err
}

func (p *proxyEngineClient) BackupRestoreStatus(ctx context.Context) (map[string]*RestoreStatus, error) {
	r, err := proxyCall(ctx, p, "BackupRestoreStatus", imrpc.ProxyEngineServiceClient.BackupRestoreStatus, p.req)
	if err != nil {
		return nil, err
	}
	out := map[string]*RestoreStatus{}
	for addr, s := range r.GetStatus() {
		out[addr] = &RestoreStatus{IsRestoring: s.GetIsRestoring(), LastRestored: s.GetLastRestored(),
			CurrentRestoringBackup: s.GetCurrentRestoringBackup(), Progress: int(s.GetProgress()), Error: s.GetError(),
			State: s.GetState(), BackupURL: s.GetBackupUrl(), DestFileName: s.GetDestFileName()}
	}
	return out, nil
}

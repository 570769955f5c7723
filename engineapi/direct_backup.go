package engineapi

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/longhorn-go/longhorn/engine/backuptask"
)

// The direct client's backups run engine/backuptask in the manager: the
// engine's replica list, then each replica's sync agent (HOST:P+2), which
// is what the proxy does inside the instance manager (and what Longhorn's
// engine binary does for an instance manager without the proxy). It needs
// the replicas' addresses to be reachable from the manager, as they are
// without a storage network (an instance manager older than the proxy
// predates the storage network).

func (d *directEngineClient) task(ctx context.Context) (context.Context, *backuptask.Task) {
	if len(d.md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, d.md...)
	}
	return ctx, &backuptask.Task{Controller: d.c}
}

func (d *directEngineClient) SnapshotBackup(ctx context.Context, req SnapshotBackupRequest) (*BackupStarted, error) {
	ctx, cancel := context.WithTimeout(ctx, backupCallTimeout)
	defer cancel()
	ctx, t := d.task(ctx)
	labels := make([]string, 0, len(req.Labels))
	for k, v := range req.Labels {
		labels = append(labels, k+"="+v)
	}
	res, err := t.CreateBackup(ctx, &backuptask.CreateRequest{
		SnapshotFileName: req.SnapshotName, BackupTarget: req.Target.URL, VolumeName: d.volume,
		Labels: labels, Credential: req.Target.Credential, BackingImageName: req.BackingImageName,
		BackingImageChecksum: req.BackingImageChecksum, BackupName: req.BackupName, CompressionMethod: req.CompressionMethod,
		ConcurrentLimit: int32(req.ConcurrentLimit), StorageClassName: req.StorageClassName, Parameters: req.Parameters,
	})
	if err != nil {
		return nil, callError(d.target, "SnapshotBackup", err)
	}
	return &BackupStarted{BackupName: res.BackupName, ReplicaAddress: res.ReplicaAddress, IsIncremental: res.IsIncremental}, nil
}

func (d *directEngineClient) SnapshotBackupStatus(ctx context.Context, backupName, replica string) (*BackupStatus, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	ctx, t := d.task(ctx)
	st, from, err := t.BackupStatus(ctx, backupName, replica)
	if err != nil {
		return nil, callError(d.target, "SnapshotBackupStatus", err)
	}
	return &BackupStatus{Progress: int(st.GetProgress()), BackupURL: st.GetBackupUrl(), Error: st.GetError(),
		SnapshotName: st.GetSnapshotName(), State: st.GetState(), ReplicaAddress: from}, nil
}

func (d *directEngineClient) SnapshotBackupCancel(ctx context.Context, backupName, replica string) error {
	ctx, cancel := callContext(ctx)
	defer cancel()
	ctx, t := d.task(ctx)
	if err := t.CancelBackup(ctx, backupName, replica); err != nil {
		return callError(d.target, "SnapshotBackupCancel", err)
	}
	return nil
}

func (d *directEngineClient) BackupRestore(ctx context.Context, target BackupTarget, backupURL string, concurrentLimit int) error {
	ctx, cancel := context.WithTimeout(ctx, backupCallTimeout)
	defer cancel()
	ctx, t := d.task(ctx)
	if err := t.RestoreBackup(ctx, backupURL, target.Credential, int32(concurrentLimit)); err != nil {
		return callError(d.target, "BackupRestore", err)
	}
	return nil
}

func (d *directEngineClient) BackupRestoreStatus(ctx context.Context) (map[string]*RestoreStatus, error) {
	ctx, cancel := callContext(ctx)
	defer cancel()
	ctx, t := d.task(ctx)
	sts, err := t.RestoreStatus(ctx)
	if err != nil {
		return nil, callError(d.target, "BackupRestoreStatus", err)
	}
	out := map[string]*RestoreStatus{}
	for addr, s := range sts {
		out[addr] = &RestoreStatus{IsRestoring: s.GetIsRestoring(), LastRestored: s.GetLastRestored(),
			CurrentRestoringBackup: s.GetCurrentRestoringBackup(), Progress: int(s.GetProgress()), Error: s.GetError(),
			State: s.GetState(), BackupURL: s.GetBackupUrl(), DestFileName: s.GetDestFileName()}
	}
	return out, nil
}

package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	"github.com/longhorn-go/longhorn/engine/backuptask"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// The proxy's backup methods. SnapshotBackup(Status) and
// BackupRestore(Status) reach the replicas' sync agents through
// engine/backuptask (the engine's ReplicaList, then each replica's P+2);
// the BackupVolume*/Backup* methods read and change the backupstore from
// the instance manager itself, as Longhorn's proxy does.

// storeOpenTimeout bounds opening a target, so an unreachable one fails
// every call in bounded time (Longhorn bug #6491).
const storeOpenTimeout = time.Minute

func (s *proxyServer) task(ctx context.Context, pr *imrpc.ProxyEngineRequest) (context.Context, *backuptask.Task, error) {
	ctx, c, err := s.engine(ctx, pr)
	if err != nil {
		return nil, nil, err
	}
	return ctx, &backuptask.Task{Controller: c}, nil
}

// storeErr maps backupstore errors to gRPC codes.
func storeErr(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && status.Code(err) != codes.Unknown {
		return err
	}
	code := codes.Internal
	switch {
	case errors.Is(err, backupstore.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, backupstore.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, backupstore.ErrUnavailable):
		code = codes.Unavailable
	case errors.Is(err, backupstore.ErrLocked):
		code = codes.FailedPrecondition
	case errors.Is(err, backupstore.ErrCorrupt):
		code = codes.DataLoss
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}

func (s *proxyServer) openStore(ctx context.Context, t *imrpc.BackupTarget) (*backupstore.Store, error) {
	if t.GetUrl() == "" {
		return nil, invalidArg("target.url is required")
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	st, err := backupstore.Open(ctx, t.GetUrl(), t.GetCredential(), backupstore.Options{})
	return st, storeErr(err)
}

func labelList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func (s *proxyServer) SnapshotBackup(ctx context.Context, req *imrpc.EngineSnapshotBackupRequest) (*imrpc.EngineSnapshotBackupProxyResponse, error) {
	pr := req.GetProxyEngineRequest()
	if req.GetSnapshotName() == "" || req.GetTarget().GetUrl() == "" || pr.GetVolumeName() == "" {
		return nil, invalidArg("snapshot_name, target.url and proxy_engine_request.volume_name are required")
	}
	ctx, t, err := s.task(ctx, pr)
	if err != nil {
		return nil, err
	}
	res, err := t.CreateBackup(ctx, &backuptask.CreateRequest{
		SnapshotFileName: req.GetSnapshotName(), BackupTarget: req.GetTarget().GetUrl(), VolumeName: pr.GetVolumeName(),
		Labels: labelList(req.GetLabels()), Credential: req.GetTarget().GetCredential(),
		BackingImageName: req.GetBackingImageName(), BackingImageChecksum: req.GetBackingImageChecksum(),
		BackupName: req.GetBackupName(), CompressionMethod: req.GetCompressionMethod(),
		ConcurrentLimit: req.GetConcurrentLimit(), StorageClassName: req.GetStorageClassName(), Parameters: req.GetParameters(),
	})
	if err != nil {
		return nil, err
	}
	return &imrpc.EngineSnapshotBackupProxyResponse{BackupId: res.BackupName, Replica: res.ReplicaAddress,
		IsIncremental: res.IsIncremental}, nil
}

func (s *proxyServer) SnapshotBackupStatus(ctx context.Context, req *imrpc.EngineSnapshotBackupStatusRequest) (*imrpc.EngineSnapshotBackupStatusProxyResponse, error) {
	if req.GetBackupName() == "" {
		return nil, invalidArg("backup_name is required")
	}
	ctx, t, err := s.task(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	st, replica, err := t.BackupStatus(ctx, req.GetBackupName(), req.GetReplicaAddress())
	if err != nil {
		return nil, err
	}
	return &imrpc.EngineSnapshotBackupStatusProxyResponse{BackupUrl: st.GetBackupUrl(), Error: st.GetError(),
		Progress: st.GetProgress(), SnapshotName: st.GetSnapshotName(), State: st.GetState(), ReplicaAddress: replica}, nil
}

func (s *proxyServer) BackupRestore(ctx context.Context, req *imrpc.EngineBackupRestoreRequest) (*imrpc.Empty, error) {
	if req.GetBackupUrl() == "" {
		return nil, invalidArg("backup_url is required")
	}
	if _, _, _, err := backupstore.DecodeBackupURL(req.GetBackupUrl()); err != nil {
		return nil, storeErr(err)
	}
	ctx, t, err := s.task(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	if err := t.RestoreBackup(ctx, req.GetBackupUrl(), req.GetTarget().GetCredential(), req.GetConcurrentLimit()); err != nil {
		return nil, err
	}
	return &imrpc.Empty{}, nil
}

func (s *proxyServer) BackupRestoreStatus(ctx context.Context, req *imrpc.ProxyEngineRequest) (*imrpc.EngineBackupRestoreStatusProxyResponse, error) {
	ctx, t, err := s.task(ctx, req)
	if err != nil {
		return nil, err
	}
	sts, err := t.RestoreStatus(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*imrpc.EngineBackupRestoreStatus{}
	for addr, st := range sts {
		out[addr] = restoreStatusFromAgent(st)
	}
	return &imrpc.EngineBackupRestoreStatusProxyResponse{Status: out}, nil
}

func restoreStatusFromAgent(st *enginerpc.RestoreStatusResponse) *imrpc.EngineBackupRestoreStatus {
	return &imrpc.EngineBackupRestoreStatus{IsRestoring: st.GetIsRestoring(), LastRestored: st.GetLastRestored(),
		CurrentRestoringBackup: st.GetCurrentRestoringBackup(), Progress: st.GetProgress(), Error: st.GetError(),
		State: st.GetState(), BackupUrl: st.GetBackupUrl(), DestFileName: st.GetDestFileName()}
}

func backupVolumeInfo(v *backupstore.VolumeInfo) *imrpc.EngineBackupVolume {
	return &imrpc.EngineBackupVolume{Name: v.Name, Size: v.Size, Labels: v.Labels, Created: v.Created,
		LastBackupName: v.LastBackupName, LastBackupAt: v.LastBackupAt, DataStored: backupstore.FormatSize(v.DataStored),
		Messages: v.Messages, BackingImageName: v.BackingImageName, BackingImageChecksum: v.BackingImageChecksum,
		StorageClassName: v.StorageClassName, CompressionMethod: v.CompressionMethod, DataEngine: v.DataEngine}
}

func backupInfo(b *backupstore.BackupInfo) *imrpc.EngineBackup {
	return &imrpc.EngineBackup{Name: b.Name, Url: b.URL, SnapshotName: b.SnapshotName, SnapshotCreated: b.SnapshotCreated,
		Created: b.Created, Size: b.Size, Labels: b.Labels, VolumeName: b.VolumeName, VolumeSize: b.VolumeSize,
		VolumeCreated: b.VolumeCreated, VolumeBackingImageName: b.VolumeBackingImage, CompressionMethod: b.CompressionMethod,
		NewlyUploadedDataSize: b.NewlyUploadedDataSize, ReUploadedDataSize: b.ReUploadedDataSize, Parameters: b.Parameters,
		IsIncremental: b.IsIncremental, BlockSize: b.BlockSize, Messages: b.Messages}
}

// volumeWithBackups returns a backup volume and its completed backups; a
// backup that cannot be read is reported in the volume's messages instead
// of failing the listing.
func volumeWithBackups(ctx context.Context, st *backupstore.Store, name string, withBackups bool) (*imrpc.EngineBackupVolume, error) {
	info, err := st.InspectVolume(ctx, name)
	if err != nil {
		return nil, err
	}
	v := backupVolumeInfo(info)
	if !withBackups {
		return v, nil
	}
	names, err := st.ListBackupNames(ctx, name)
	if err != nil {
		return nil, err
	}
	v.Backups = map[string]*imrpc.EngineBackup{}
	for _, n := range names {
		b, err := st.InspectBackup(ctx, name, n)
		if errors.Is(err, backupstore.ErrNotFound) {
			continue // in progress
		}
		if err != nil {
			if v.Messages == nil {
				v.Messages = map[string]string{}
			}
			v.Messages["error"] = fmt.Sprintf("backup %s: %v", n, err)
			continue
		}
		v.Backups[n] = backupInfo(b)
	}
	return v, nil
}

func (s *proxyServer) BackupVolumeList(ctx context.Context, req *imrpc.EngineBackupVolumeListRequest) (*imrpc.EngineBackupVolumeListProxyResponse, error) {
	st, err := s.openStore(ctx, req.GetTarget())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	names := []string{req.GetVolumeName()}
	if req.GetVolumeName() == "" {
		if names, err = st.ListVolumeNames(ctx); err != nil {
			return nil, storeErr(err)
		}
	}
	out := map[string]*imrpc.EngineBackupVolume{}
	for _, n := range names {
		if req.GetVolumeNameOnly() {
			out[n] = &imrpc.EngineBackupVolume{Name: n}
			continue
		}
		v, err := volumeWithBackups(ctx, st, n, true)
		if errors.Is(err, backupstore.ErrNotFound) || errors.Is(err, backupstore.ErrCorrupt) {
			out[n] = &imrpc.EngineBackupVolume{Name: n, Messages: map[string]string{"error": err.Error()}}
			continue
		}
		if err != nil {
			return nil, storeErr(err)
		}
		out[n] = v
	}
	return &imrpc.EngineBackupVolumeListProxyResponse{Volumes: out}, nil
}

func (s *proxyServer) BackupVolumeGet(ctx context.Context, req *imrpc.EngineBackupVolumeGetRequest) (*imrpc.EngineBackupVolumeGetProxyResponse, error) {
	if req.GetVolumeName() == "" {
		return nil, invalidArg("volume_name is required")
	}
	st, err := s.openStore(ctx, req.GetTarget())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	v, err := volumeWithBackups(ctx, st, req.GetVolumeName(), true)
	if err != nil {
		return nil, storeErr(err)
	}
	return &imrpc.EngineBackupVolumeGetProxyResponse{Volume: v}, nil
}

func (s *proxyServer) BackupGet(ctx context.Context, req *imrpc.EngineBackupGetRequest) (*imrpc.EngineBackupGetProxyResponse, error) {
	name, volume, _, err := backupstore.DecodeBackupURL(req.GetBackupUrl())
	if err != nil || name == "" {
		return nil, invalidArg("backup_url %q: want <target>?backup=<name>&volume=<volume>", req.GetBackupUrl())
	}
	st, err := s.openStore(ctx, req.GetTarget())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	b, err := st.InspectBackup(ctx, volume, name)
	if err != nil {
		return nil, storeErr(err)
	}
	return &imrpc.EngineBackupGetProxyResponse{Backup: backupInfo(b)}, nil
}

func (s *proxyServer) BackupConfigMetaGet(ctx context.Context, req *imrpc.EngineBackupConfigMetaGetRequest) (*imrpc.EngineBackupConfigMetaGetProxyResponse, error) {
	name, volume, _, err := backupstore.DecodeBackupURL(req.GetBackupUrl())
	if err != nil {
		return nil, invalidArg("backup_url %q: %v", req.GetBackupUrl(), err)
	}
	st, err := s.openStore(ctx, req.GetTarget())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var t time.Time
	if name == "" {
		t, err = st.VolumeConfigModTime(ctx, volume)
	} else {
		t, err = st.BackupConfigModTime(ctx, volume, name)
	}
	if err != nil {
		return nil, storeErr(err)
	}
	return &imrpc.EngineBackupConfigMetaGetProxyResponse{ModificationTime: t.UTC().Format(time.RFC3339)}, nil
}

// BackupRemove deletes one backup (and the blocks only it used), or the
// whole backup volume when the URL names no backup.
func (s *proxyServer) BackupRemove(ctx context.Context, req *imrpc.EngineBackupRemoveRequest) (*imrpc.Empty, error) {
	name, volume, _, err := backupstore.DecodeBackupURL(req.GetBackupUrl())
	if err != nil {
		return nil, invalidArg("backup_url %q: %v", req.GetBackupUrl(), err)
	}
	st, err := s.openStore(ctx, req.GetTarget())
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if name == "" {
		err = st.DeleteVolume(ctx, volume)
	} else {
		_, err = st.DeleteBackup(ctx, volume, name)
	}
	if err != nil {
		return nil, storeErr(err)
	}
	return &imrpc.Empty{}, nil
}

// proxyExtServer is lhext.ProxyEngineExtService, this implementation's
// additions to the proxy port; ProxyEngineService stays Longhorn's.
type proxyExtServer struct {
	imrpc.UnimplementedProxyEngineExtServiceServer
	p *proxyServer
}

// SnapshotBackupCancel stops a running backup on the replica taking it
// (lhext.SyncAgentExtService.BackupCancel); the replica's code comes back.
func (s *proxyExtServer) SnapshotBackupCancel(ctx context.Context, req *imrpc.EngineSnapshotBackupCancelRequest) (*imrpc.Empty, error) {
	if req.GetBackupName() == "" {
		return nil, invalidArg("backup_name is required")
	}
	ctx, t, err := s.p.task(ctx, req.GetProxyEngineRequest())
	if err != nil {
		return nil, err
	}
	if err := t.CancelBackup(ctx, req.GetBackupName(), req.GetReplicaAddress()); err != nil {
		return nil, err
	}
	return &imrpc.Empty{}, nil
}

package csi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// CSI snapshots of type bak (Longhorn's default VolumeSnapshotClass type,
// legacy bs): a Longhorn snapshot and a backup of it, through the volume's
// snapshotBackup action, id bak://<volume>/<backup>; ready to use once the
// backup is Completed. A volume made from one is restored from the backup
// (spec.fromBackup, the backup's URL). Needs a backup target.
const bakIDPrefix = "bak://"

// BackupRef is the part of the API's backup resource the plugin reads.
type BackupRef struct {
	Name             string `json:"name"`
	State            string `json:"state"`
	Error            string `json:"error"`
	URL              string `json:"url"`
	SnapshotName     string `json:"snapshotName"`
	VolumeName       string `json:"volumeName"`
	VolumeSize       string `json:"volumeSize"`
	BackupTargetName string `json:"backupTargetName"`
	Created          string `json:"created"`
}

// BackupVolumeRef is the part of the API's backupVolume resource the
// plugin reads.
type BackupVolumeRef struct {
	Name             string `json:"name"`
	VolumeName       string `json:"volumeName"`
	BackupTargetName string `json:"backupTargetName"`
}

// BackupID is bak://<volume>/<backup>.
func BackupID(volume, backup string) string { return bakIDPrefix + volume + "/" + backup }

// ParseBackupID splits a bak:// id; ok is false for anything else.
func ParseBackupID(id string) (volume, backup string, ok bool) { return splitID(bakIDPrefix, id) }

// ListBackups returns every backup (GET /v1/backups).
func (c *Client) ListBackups(ctx context.Context) ([]BackupRef, error) {
	var coll struct {
		Data []BackupRef `json:"data"`
	}
	if err := c.do(ctx, http.MethodGet, "/backups", nil, &coll); err != nil {
		return nil, err
	}
	return coll.Data, nil
}

// FindBackup returns backup name of volume, or the volume's backup of
// snapshot snap when name is ""; nil when there is none.
func (c *Client) FindBackup(ctx context.Context, volume, name, snap string) (*BackupRef, error) {
	bs, err := c.ListBackups(ctx)
	if err != nil {
		return nil, err
	}
	for i, b := range bs {
		if b.VolumeName == volume && ((name != "" && b.Name == name) || (name == "" && b.SnapshotName == snap)) {
			return &bs[i], nil
		}
	}
	return nil, nil
}

// DeleteBackup deletes backup b through its backup volume's backupDelete;
// a backup whose backup volume is gone is success.
func (c *Client) DeleteBackup(ctx context.Context, b *BackupRef) error {
	var coll struct {
		Data []BackupVolumeRef `json:"data"`
	}
	if err := c.do(ctx, http.MethodGet, "/backupvolumes", nil, &coll); err != nil {
		return err
	}
	for _, bv := range coll.Data {
		if bv.VolumeName == b.VolumeName && (b.BackupTargetName == "" || bv.BackupTargetName == b.BackupTargetName) {
			err := c.do(ctx, http.MethodPost, "/backupvolumes/"+url.PathEscape(bv.Name)+"?action=backupDelete",
				map[string]string{"name": b.Name}, nil)
			if IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	return nil
}

// backupSnapshot backs Longhorn snapshot name of volume v up (once; a
// repeated call finds the backup) and answers with the bak:// snapshot,
// ready to use when the backup completed within the driver's timeout (the
// snapshotter asks again otherwise).
func (s *controllerServer) backupSnapshot(ctx context.Context, v *Volume, name, mode string) (*csi.CreateSnapshotResponse, error) {
	b, err := s.d.client.FindBackup(ctx, v.Name, "", name)
	if err != nil {
		return nil, apiStatus(err, "list backups")
	}
	if b == nil {
		in := map[string]any{"name": name, "backupMode": mode}
		if err := s.d.client.VolumeAction(ctx, v.Name, "snapshotBackup", in, nil); err != nil {
			return nil, apiStatus(err, "back up snapshot "+name+" of volume "+v.Name)
		}
	}
	if b, err = s.waitBackup(ctx, v.Name, name); err != nil {
		return nil, err
	}
	size, _ := strconv.ParseInt(v.Size, 10, 64)
	created := time.Now()
	if t, err := time.Parse(time.RFC3339, b.Created); err == nil {
		created = t
	}
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: BackupID(v.Name, b.Name), SourceVolumeId: v.Name,
		SizeBytes: size, CreationTime: timestamppb.New(created), ReadyToUse: b.State == "Completed"}}, nil
}

// waitBackup waits until the backup of snapshot snap of volume vol is
// Completed and returns it; after the driver's timeout it returns it as it
// is (not ready yet), or DeadlineExceeded when there is none. An Error
// state is Internal.
func (s *controllerServer) waitBackup(ctx context.Context, vol, snap string) (*BackupRef, error) {
	wctx, cancel := context.WithTimeout(ctx, s.d.cfg.Timeout)
	defer cancel()
	var last *BackupRef
	for {
		if b, err := s.d.client.FindBackup(wctx, vol, "", snap); err == nil && b != nil {
			last = b
			switch b.State {
			case "Error":
				return nil, status.Errorf(codes.Internal, "backup %s of snapshot %s: %s", b.Name, snap, b.Error)
			case "Completed":
				return b, nil
			}
		}
		select {
		case <-wctx.Done():
			if last == nil {
				return nil, status.Errorf(codes.DeadlineExceeded, "no backup of snapshot %s of %s within %v", snap, vol, s.d.cfg.Timeout)
			}
			return last, nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// backupSource is CreateVolume's bak:// content source: the backup's URL
// (the new volume's fromBackup) and the backed-up volume's size. NotFound
// when there is no such backup, Unavailable while it is not completed.
func (s *controllerServer) backupSource(ctx context.Context, id string) (string, int64, error) {
	vol, name, _ := ParseBackupID(id)
	b, err := s.d.client.FindBackup(ctx, vol, name, "")
	if err != nil {
		return "", 0, apiStatus(err, "list backups")
	}
	if b == nil {
		return "", 0, status.Errorf(codes.NotFound, "volume_content_source: backup %s of volume %s not found", name, vol)
	}
	if b.State != "Completed" || b.URL == "" {
		return "", 0, status.Errorf(codes.Unavailable, "volume_content_source: backup %s is %s, not completed yet", name, b.State)
	}
	size, _ := strconv.ParseInt(b.VolumeSize, 10, 64)
	return b.URL, size, nil
}

// deleteBackupSnapshot deletes the backup of a bak:// id; a missing one
// is success.
func (s *controllerServer) deleteBackupSnapshot(ctx context.Context, id string) error {
	vol, name, _ := ParseBackupID(id)
	b, err := s.d.client.FindBackup(ctx, vol, name, "")
	if err != nil {
		return apiStatus(err, "list backups")
	}
	if b == nil {
		return nil
	}
	if err := s.d.client.DeleteBackup(ctx, b); err != nil {
		return apiStatus(err, "delete backup "+name)
	}
	return nil
}

package csi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// CSI snapshots as Longhorn's driver makes them. The VolumeSnapshotClass
// parameter `type` picks the kind: `snap` is a Longhorn snapshot (a
// Snapshot object through the volume's snapshotCR* actions), id
// snap://<volume>/<snapshot>, from which a new volume is cloned (dataSource
// snap://); `bak` (Longhorn's default, legacy `bs`) is a backup, id
// bak://<volume>/<backup> (backup.go); `bi` a backing image, not served yet.
const (
	snapParamType   = "type"
	snapTypeSnap    = "snap"
	snapTypeBackup  = "bak"
	snapTypeLegacy  = "bs"
	snapTypeBacking = "bi"
	snapIDPrefix    = "snap://"
)

// SnapshotCR is the part of the API's snapshotCR resource the plugin reads.
type SnapshotCR struct {
	Name         string `json:"name"`
	Volume       string `json:"volume"`
	CreationTime string `json:"creationTime"`
	ReadyToUse   bool   `json:"readyToUse"`
	RestoreSize  int64  `json:"restoreSize"`
	MarkRemoved  bool   `json:"markRemoved"`
	Error        string `json:"error"`
}

// snapshotType returns the CSI snapshot type of the class parameters, or
// an InvalidArgument naming the parameter.
func snapshotType(params map[string]string) (string, error) {
	for k := range params {
		switch k {
		case snapParamType, "backupMode", "exportType":
		default:
			if !strings.HasPrefix(k, "csi.storage.k8s.io/") {
				return "", status.Errorf(codes.InvalidArgument, "parameters: %q is not a Longhorn VolumeSnapshotClass parameter (type, backupMode, exportType)", k)
			}
		}
	}
	t := params[snapParamType]
	if t == "" {
		t = snapTypeBackup // Longhorn's default
	}
	switch t {
	case snapTypeSnap:
		if params["backupMode"] != "" || params["exportType"] != "" {
			return "", status.Error(codes.InvalidArgument, "parameters: backupMode and exportType apply to type bak and bi, not snap")
		}
		return t, nil
	case snapTypeBackup, snapTypeLegacy:
		if params["exportType"] != "" {
			return "", status.Error(codes.InvalidArgument, "parameters: exportType applies to type bi, not bak")
		}
		switch params["backupMode"] {
		case "", "full", "incremental":
		default:
			return "", status.Errorf(codes.InvalidArgument, "parameters: backupMode %q: want full or incremental", params["backupMode"])
		}
		return snapTypeBackup, nil
	case snapTypeBacking:
		return "", status.Error(codes.InvalidArgument, "parameters: type bi (backing image) is not supported yet")
	}
	return "", status.Errorf(codes.InvalidArgument, "parameters: type %q: want snap, bak, bs or bi", t)
}

// SnapshotID is snap://<volume>/<snapshot>.
func SnapshotID(volume, snapshot string) string { return snapIDPrefix + volume + "/" + snapshot }

// ParseSnapshotID splits a snap:// id; ok is false for anything else.
func ParseSnapshotID(id string) (volume, snapshot string, ok bool) { return splitID(snapIDPrefix, id) }

// splitID splits an id <prefix><volume>/<name> (snap://, bak://); ok is
// false, and both parts empty, unless each part is non-empty and name has
// no further "/".
func splitID(prefix, id string) (volume, name string, ok bool) {
	rest, found := strings.CutPrefix(id, prefix)
	if !found {
		return "", "", false
	}
	volume, name, found = strings.Cut(rest, "/")
	if !found || volume == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return volume, name, true
}

// snapshotName is the Longhorn snapshot name of a CSI snapshot name: the
// name the snapshotter gives (snapshot-<uid>) lower-cased, as volume names.
func snapshotName(csiName string) string { return volumeName(csiName) }

func (s *controllerServer) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "source_volume_id is required")
	}
	typ, err := snapshotType(req.GetParameters())
	if err != nil {
		return nil, err
	}
	vol, name := req.GetSourceVolumeId(), snapshotName(req.GetName())
	v, err := s.d.client.GetVolume(ctx, vol)
	if IsNotFound(err) {
		return nil, status.Errorf(codes.NotFound, "source volume %s not found", vol)
	}
	if err != nil {
		return nil, apiStatus(err, "get volume "+vol)
	}
	sn, err := s.d.client.GetSnapshotCR(ctx, vol, name)
	switch {
	case err == nil && sn.Volume != vol:
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists for volume %s, not %s", name, sn.Volume, vol)
	case IsNotFound(err):
		// A detached volume is attached by the manager's snapshot
		// controller for the snapshot (Longhorn's way).
		if sn, err = s.d.client.CreateSnapshotCR(ctx, vol, name); err != nil {
			if isConflict(err) {
				// Snapshot names are cluster-wide: this one belongs to
				// another volume (snapshotCRGet looks in vol's only).
				return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists for another volume than %s: %v", name, vol, err)
			}
			return nil, apiStatus(err, "create snapshot "+name)
		}
	case err != nil:
		return nil, apiStatus(err, "get snapshot "+name)
	}
	if sn, err = s.waitSnapshot(ctx, vol, name); err != nil {
		return nil, err
	}
	if typ == snapTypeBackup {
		return s.backupSnapshot(ctx, v, name, req.GetParameters()["backupMode"])
	}
	size := sn.RestoreSize
	if size == 0 {
		size, _ = strconv.ParseInt(v.Size, 10, 64)
	}
	created := time.Now()
	if t, err := time.Parse(time.RFC3339, sn.CreationTime); err == nil {
		created = t
	}
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: SnapshotID(vol, name), SourceVolumeId: vol,
		SizeBytes: size, CreationTime: timestamppb.New(created), ReadyToUse: sn.ReadyToUse}}, nil
}

// waitSnapshot waits until the snapshot is ready to use (the engine has it).
func (s *controllerServer) waitSnapshot(ctx context.Context, vol, name string) (*SnapshotCR, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d.cfg.Timeout)
	defer cancel()
	for {
		sn, err := s.d.client.GetSnapshotCR(ctx, vol, name)
		switch {
		case err == nil && sn.Error != "":
			return nil, status.Errorf(codes.Internal, "snapshot %s of %s: %s", name, vol, sn.Error)
		case err == nil && sn.ReadyToUse:
			return sn, nil
		case err != nil && !IsNotFound(err):
			return nil, apiStatus(err, "get snapshot "+name)
		}
		select {
		case <-ctx.Done():
			return nil, status.Errorf(codes.DeadlineExceeded, "snapshot %s of %s: not ready to use within %v", name, vol, s.d.cfg.Timeout)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *controllerServer) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	if _, _, ok := ParseBackupID(id); ok {
		if err := s.deleteBackupSnapshot(ctx, id); err != nil {
			return nil, err
		}
		return &csi.DeleteSnapshotResponse{}, nil
	}
	vol, name, ok := ParseSnapshotID(id)
	if !ok {
		// Not an id this driver hands out: nothing of it exists (CSI:
		// deleting a missing snapshot succeeds).
		return &csi.DeleteSnapshotResponse{}, nil
	}
	if _, err := s.d.client.GetVolume(ctx, vol); IsNotFound(err) {
		return &csi.DeleteSnapshotResponse{}, nil // the volume and its snapshots are gone
	} else if err != nil {
		return nil, apiStatus(err, "get volume "+vol)
	}
	err := s.d.client.DeleteSnapshotCR(ctx, vol, name)
	if err != nil && !IsNotFound(err) {
		return nil, apiStatus(err, "delete snapshot "+name)
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// GetSnapshotCR returns the Snapshot object name of volume (snapshotCRGet).
func (c *Client) GetSnapshotCR(ctx context.Context, volume, name string) (*SnapshotCR, error) {
	var sn SnapshotCR
	if err := c.VolumeAction(ctx, volume, "snapshotCRGet", map[string]string{"name": name}, &sn); err != nil {
		return nil, err
	}
	return &sn, nil
}

// CreateSnapshotCR takes snapshot name of volume (snapshotCRCreate).
func (c *Client) CreateSnapshotCR(ctx context.Context, volume, name string) (*SnapshotCR, error) {
	var sn SnapshotCR
	if err := c.VolumeAction(ctx, volume, "snapshotCRCreate", map[string]any{"name": name, "labels": map[string]string{}}, &sn); err != nil {
		return nil, err
	}
	return &sn, nil
}

// DeleteSnapshotCR deletes snapshot name of volume (snapshotCRDelete).
func (c *Client) DeleteSnapshotCR(ctx context.Context, volume, name string) error {
	return c.VolumeAction(ctx, volume, "snapshotCRDelete", map[string]string{"name": name}, nil)
}

// contentSource turns CreateVolume's content source into the volume's
// data source, as Longhorn's driver does: a snapshot snap://<vol>/<snap> is
// dataSource snap://<vol>/<snap>, a volume <vol> is vol://<vol>, a backup
// bak://<vol>/<backup> is fromBackup (the backup's URL). It also returns
// the source volume's size. NotFound when the source is missing.
func (s *controllerServer) contentSource(ctx context.Context, src *csi.VolumeContentSource) (ds, fromBackup string, size int64, err error) {
	var vol string
	switch {
	case src.GetSnapshot() != nil && strings.HasPrefix(src.GetSnapshot().GetSnapshotId(), bakIDPrefix):
		if _, _, ok := ParseBackupID(src.GetSnapshot().GetSnapshotId()); !ok {
			return "", "", 0, status.Errorf(codes.NotFound, "volume_content_source: snapshot %q not found", src.GetSnapshot().GetSnapshotId())
		}
		url, size, err := s.backupSource(ctx, src.GetSnapshot().GetSnapshotId())
		return "", url, size, err
	case src.GetSnapshot() != nil:
		id := src.GetSnapshot().GetSnapshotId()
		v, name, ok := ParseSnapshotID(id)
		if !ok {
			return "", "", 0, status.Errorf(codes.NotFound, "volume_content_source: snapshot %q not found (want snap://<volume>/<snapshot>)", id)
		}
		if _, err := s.d.client.GetSnapshotCR(ctx, v, name); err != nil {
			return "", "", 0, apiStatus(err, "volume_content_source: snapshot "+name+" of volume "+v)
		}
		vol, ds = v, SnapshotID(v, name)
	case src.GetVolume() != nil:
		vol = src.GetVolume().GetVolumeId()
		ds = "vol://" + vol
	default:
		return "", "", 0, status.Error(codes.InvalidArgument, "volume_content_source: want a snapshot or a volume")
	}
	v, err := s.d.client.GetVolume(ctx, vol)
	if err != nil {
		return "", "", 0, apiStatus(err, "volume_content_source: volume "+vol)
	}
	size, _ = strconv.ParseInt(v.Size, 10, 64)
	return ds, "", size, nil
}

// cloneSize is the size of a volume made from a source of srcSize bytes:
// the source's when the request requires none, else the rounded request,
// which must not be smaller (OutOfRange) or over the limit.
func cloneSize(r *csi.CapacityRange, rounded, srcSize int64) (int64, error) {
	if r.GetRequiredBytes() == 0 {
		if lim := r.GetLimitBytes(); lim > 0 && srcSize > lim {
			return 0, status.Errorf(codes.OutOfRange, "capacity_range: the source is %d bytes, over limit_bytes %d", srcSize, lim)
		}
		return srcSize, nil
	}
	if rounded < srcSize {
		return 0, status.Errorf(codes.OutOfRange, "capacity_range: %d bytes is smaller than the source (%d bytes)", rounded, srcSize)
	}
	return rounded, nil
}

// cloneDone answers Unavailable (the attacher retries) while a volume
// made from another is still being cloned, as Longhorn's driver does.
func cloneDone(v *Volume) error {
	if v.DataSource == "" || v.CloneStatus.State == "completed" {
		return nil
	}
	st := v.CloneStatus.State
	if st == "" {
		st = "not started"
	}
	return status.Errorf(codes.Unavailable, "volume %s is being cloned from %s (clone %s, %d failed attempts): retry once the clone is completed",
		v.Name, v.DataSource, st, v.CloneStatus.AttemptCount)
}

// isConflict reports whether err is the API's 409 Conflict (an object of
// that name exists).
func isConflict(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Code == "Conflict"
}

package api

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Backup volume actions (Longhorn's router).
const (
	ActionBackupList         = "backupList"
	ActionBackupListByVolume = "backupListByVolume"
	ActionBackupGet          = "backupGet"
	ActionBackupDelete       = "backupDelete"
	ActionBackupVolumeSync   = "backupVolumeSync"
)

var backupVolumeActionNames = []string{ActionBackupDelete, ActionBackupGet, ActionBackupList, ActionBackupListByVolume, ActionBackupVolumeSync}

// BackupVolume is a backup volume resource (Longhorn's api/model.go): one
// volume's backups in one backup target.
type BackupVolume struct {
	Resource
	Name                 string            `json:"name"`
	Size                 string            `json:"size"`
	Labels               map[string]string `json:"labels"`
	Created              string            `json:"created"`
	LastBackupName       string            `json:"lastBackupName"`
	LastBackupAt         string            `json:"lastBackupAt"`
	DataStored           string            `json:"dataStored"`
	Messages             map[string]string `json:"messages"`
	BackingImageName     string            `json:"backingImageName"`
	BackingImageChecksum string            `json:"backingImageChecksum"`
	StorageClassName     string            `json:"storageClassName"`
	BackupTargetName     string            `json:"backupTargetName"`
	VolumeName           string            `json:"volumeName"`
}

func (u urls) backupVolume(bv *longhorn.BackupVolume) BackupVolume {
	st := bv.Status
	return BackupVolume{Resource: u.newResource("backupVolume", "backupvolumes", bv.Name, backupVolumeActionNames...),
		Name: bv.Name, Size: st.Size, Labels: nonNilMap(st.Labels), Created: st.CreatedAt, LastBackupName: st.LastBackupName,
		LastBackupAt: st.LastBackupAt, DataStored: st.DataStored, Messages: nonNilMap(st.Messages),
		BackingImageName: st.BackingImageName, BackingImageChecksum: st.BackingImageChecksum,
		StorageClassName: st.StorageClassName, BackupTargetName: bv.Spec.BackupTargetName, VolumeName: bv.Spec.VolumeName}
}

// Backup is a backup resource (Longhorn's api/model.go Backup). The
// snapshot is the spec's (what was asked for) or else the status's; the
// volume name falls back to the longhorn.io/backup-volume label while the
// backup is not complete.
type Backup struct {
	Resource
	Name                   string               `json:"name"`
	State                  longhorn.BackupState `json:"state"`
	Progress               int                  `json:"progress"`
	Error                  string               `json:"error"`
	URL                    string               `json:"url"`
	SnapshotName           string               `json:"snapshotName"`
	SnapshotCreated        string               `json:"snapshotCreated"`
	Created                string               `json:"created"`
	Size                   string               `json:"size"`
	Labels                 map[string]string    `json:"labels"`
	Messages               map[string]string    `json:"messages"`
	VolumeName             string               `json:"volumeName"`
	VolumeSize             string               `json:"volumeSize"`
	VolumeCreated          string               `json:"volumeCreated"`
	VolumeBackingImageName string               `json:"volumeBackingImageName"`
	CompressionMethod      string               `json:"compressionMethod"`
	NewlyUploadDataSize    string               `json:"newlyUploadDataSize"`
	ReUploadedDataSize     string               `json:"reUploadedDataSize"`
	BackupTargetName       string               `json:"backupTargetName"`
	BackupMode             longhorn.BackupMode  `json:"backupMode"`
	BlockSize              string               `json:"blockSize"`
}

// backupResource shows a Backup object (no links: Longhorn's router has no
// URL per backup; backupGet reads one).
func backupResource(b *longhorn.Backup) Backup {
	st := b.Status
	out := Backup{Resource: Resource{ID: b.Name, Type: "backup", Links: map[string]string{}, Actions: map[string]string{}},
		Name: b.Name, State: st.State, Progress: st.Progress, Error: st.Error, URL: st.URL, SnapshotName: b.Spec.SnapshotName,
		SnapshotCreated: st.SnapshotCreatedAt, Created: st.BackupCreatedAt, Size: st.Size, Labels: nonNilMap(st.Labels),
		Messages: nonNilMap(st.Messages), VolumeName: st.VolumeName, VolumeSize: st.VolumeSize, VolumeCreated: st.VolumeCreated,
		VolumeBackingImageName: st.VolumeBackingImageName, CompressionMethod: string(st.CompressionMethod),
		NewlyUploadDataSize: st.NewlyUploadedDataSize, ReUploadedDataSize: st.ReUploadedDataSize,
		BackupTargetName: st.BackupTargetName, BackupMode: b.Spec.BackupMode}
	if out.SnapshotName == "" {
		out.SnapshotName = st.SnapshotName
	}
	if out.VolumeName == "" {
		out.VolumeName = b.Labels[labelBackupVolume]
	}
	if out.BackupTargetName == "" {
		out.BackupTargetName = b.Labels[labelBackupTarget]
	}
	if len(out.Labels) == 0 {
		out.Labels = nonNilMap(b.Spec.Labels)
	}
	if b.Spec.BackupBlockSize > 0 {
		out.BlockSize = strconv.FormatInt(b.Spec.BackupBlockSize, 10)
	}
	return out
}

// backupCollection is the backups sorted by name.
func (u urls) backupCollection(objs []*longhorn.Backup) Collection {
	out := make([]Backup, 0, len(objs))
	for _, b := range objs {
		out = append(out, backupResource(b))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return u.newCollection("backup", "backups", out)
}

func (s *Server) listBackupVolumes(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListBackupVolumesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("backupVolume", "backupvolumes", toResources(objs, u.backupVolume)), nil
}

func (s *Server) getBackupVolume(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	bv, err := s.ds.GetBackupVolumeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupVolume(bv), nil
}

// deleteBackupVolume deletes the BackupVolume: its controller removes the
// volume's backups from the backupstore, then the Backup objects.
func (s *Server) deleteBackupVolume(ctx context.Context, r *http.Request, _ urls) (int, any, error) {
	if err := s.ds.DeleteBackupVolume(ctx, r.PathValue("name")); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

func (s *Server) listBackups(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListBackupsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupCollection(objs), nil
}

// requestBackupVolumeSync sets a BackupVolume's spec.syncRequestedAt; its
// controller re-reads the volume's backups from the store.
func (s *Server) requestBackupVolumeSync(ctx context.Context, name string) (*longhorn.BackupVolume, error) {
	var out *longhorn.BackupVolume
	err := retry.RetryOnConflict(writeBackoff, func() error {
		bv, err := s.ds.GetBackupVolume(ctx, name)
		if err != nil {
			return err
		}
		bv.Spec.SyncRequestedAt = metav1.Now()
		out, err = s.ds.UpdateBackupVolume(ctx, bv)
		return err
	})
	return out, err
}

// syncAllBackupVolumes answers PUT /v1/backupvolumes: with
// syncAllBackupVolumes every backup volume re-reads its backups.
func (s *Server) syncAllBackupVolumes(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in SyncBackupResource
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.SyncAllBackupVolumes {
		objs, err := s.ds.ListBackupVolumesRO(ctx, nil)
		if err != nil {
			return 0, nil, err
		}
		for _, bv := range objs {
			if _, err := s.requestBackupVolumeSync(ctx, bv.Name); err != nil {
				return 0, nil, err
			}
		}
	}
	return s.listBackupVolumes(ctx, r, u)
}

// BackupInput is the body of backupGet and backupDelete.
type BackupInput struct {
	Name string `json:"name"`
}

// backupVolumeAction dispatches POST /v1/backupvolumes/{name}?action=X.
func (s *Server) backupVolumeAction(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	action := r.URL.Query().Get("action")
	if !slices.Contains(backupVolumeActionNames, action) {
		return 0, nil, unknownAction("backup volume", action, backupVolumeActionNames)
	}
	bv, err := s.ds.GetBackupVolumeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	switch action {
	case ActionBackupList:
		objs, err := s.ds.ListBackupsRO(ctx, backupsOf(bv.Spec.VolumeName, bv.Spec.BackupTargetName))
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, u.backupCollection(objs), nil
	case ActionBackupListByVolume:
		return s.backupListByVolume(ctx, r, u)
	case ActionBackupVolumeSync:
		return s.backupVolumeSync(ctx, r, u, bv)
	}
	var in BackupInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == "" {
		return 0, nil, invalidInput("name", "is required: the backup")
	}
	b, err := s.ds.GetBackupRO(ctx, in.Name)
	found := err == nil && b.Labels[labelBackupVolume] == bv.Spec.VolumeName &&
		backupTargetOf(b) == bv.Spec.BackupTargetName
	if action == ActionBackupGet {
		if !found {
			return 0, nil, newError(http.StatusNotFound, CodeNotFound, "backup volume %s has no backup %q", bv.Name, in.Name)
		}
		return http.StatusOK, backupResource(b), nil
	}
	if found { // backupDelete: the backup controller removes it from the store first
		if err := s.ds.DeleteBackup(ctx, in.Name); err != nil {
			return 0, nil, err
		}
	}
	return http.StatusOK, u.backupVolume(bv), nil
}

// backupTargetOf is a Backup's target (label, then the default).
func backupTargetOf(b *longhorn.Backup) string {
	if t := b.Labels[labelBackupTarget]; t != "" {
		return t
	}
	return longhorn.BackupTargetDefault
}

// backupsOf selects the Backup objects of a volume in a backup target.
func backupsOf(volume, target string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{labelBackupVolume: volume, labelBackupTarget: target})
}

// backupListByVolume lists the backups of the volume named in the body
// ({"name": volume}) in every backup target.
func (s *Server) backupListByVolume(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in BackupInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if errs := validation.IsDNS1123Subdomain(in.Name); len(errs) > 0 {
		return 0, nil, invalidInput("name", "%q is not a volume name", in.Name)
	}
	objs, err := s.ds.ListBackupsRO(ctx, labels.SelectorFromSet(labels.Set{labelBackupVolume: in.Name}))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupCollection(objs), nil
}

func (s *Server) backupVolumeSync(ctx context.Context, r *http.Request, u urls, bv *longhorn.BackupVolume) (int, any, error) {
	var in SyncBackupResource
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if !in.SyncBackupVolume {
		return http.StatusOK, u.backupVolume(bv), nil
	}
	out, err := s.requestBackupVolumeSync(ctx, bv.Name)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupVolume(out), nil
}

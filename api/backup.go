package api

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/labels"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Backup collections (Longhorn api/router.go: backuptargets, backupvolumes
// and their actions). Until the backup feature lands (helper "backup"),
// they list the objects that exist (the default BackupTarget comes from
// longhorn-default-resource) and read-only actions work; every write
// answers 501 "backups ... not supported yet".
const backupsMissing = "backups to a backup target (create, sync, delete and restore)"

func (s *Server) backupRoutes() {
	h := s.handle
	m := s.mux
	m.HandleFunc("GET /v1/backuptargets", h(s.listBackupTargets))
	m.HandleFunc("GET /v1/backuptargets/{name}", h(s.getBackupTarget))
	m.HandleFunc("POST /v1/backuptargets", h(refuse(backupsMissing)))
	m.HandleFunc("PUT /v1/backuptargets", h(refuse(backupsMissing)))
	m.HandleFunc("DELETE /v1/backuptargets/{name}", h(refuse(backupsMissing)))
	m.HandleFunc("POST /v1/backuptargets/{name}", h(refuse(backupsMissing)))

	m.HandleFunc("GET /v1/backupvolumes", h(s.listBackupVolumes))
	m.HandleFunc("GET /v1/backupvolumes/{name}", h(s.getBackupVolume))
	m.HandleFunc("PUT /v1/backupvolumes", h(refuse(backupsMissing)))
	m.HandleFunc("DELETE /v1/backupvolumes/{name}", h(refuse(backupsMissing)))
	m.HandleFunc("POST /v1/backupvolumes/{name}", h(s.backupVolumeAction))
}

// refuse returns a handler that answers 501 for a missing feature.
func refuse(what string) handlerFunc {
	return func(context.Context, *http.Request, urls) (int, any, error) { return 0, nil, notSupported(what) }
}

// BackupTarget is a backup target resource (Longhorn's engineapi
// BackupTarget fields).
type BackupTarget struct {
	Resource
	Name             string `json:"name"`
	BackupTargetURL  string `json:"backupTargetURL"`
	CredentialSecret string `json:"credentialSecret"`
	PollInterval     string `json:"pollInterval"`
	Available        bool   `json:"available"`
	Message          string `json:"message"`
}

func (u urls) backupTarget(bt *longhorn.BackupTarget) BackupTarget {
	return BackupTarget{Resource: u.newResource("backupTarget", "backuptargets", bt.Name),
		Name: bt.Name, BackupTargetURL: bt.Spec.BackupTargetURL, CredentialSecret: bt.Spec.CredentialSecret,
		PollInterval: bt.Spec.PollInterval.Duration.String(), Available: bt.Status.Available,
		Message: conditionMap(bt.Status.Conditions)[longhorn.BackupTargetConditionTypeUnavailable].Message}
}

func (s *Server) listBackupTargets(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListBackupTargetsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("backupTarget", "backuptargets", toResources(objs, u.backupTarget)), nil
}

func (s *Server) getBackupTarget(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	bt, err := s.ds.GetBackupTargetRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupTarget(bt), nil
}

// BackupVolume is a backup volume resource (Longhorn's api/model.go).
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

// Backup volume actions; backupList, backupListByVolume and backupGet read
// Backup objects, the others change the backup target.
var backupVolumeActions = []string{"backupList", "backupListByVolume", "backupGet", "backupDelete", "backupVolumeSync"}

func (u urls) backupVolume(bv *longhorn.BackupVolume) BackupVolume {
	st := bv.Status
	return BackupVolume{Resource: u.newResource("backupVolume", "backupvolumes", bv.Name, backupVolumeActions...),
		Name: bv.Name, Size: st.Size, Labels: nonNilMap(st.Labels), Created: st.CreatedAt, LastBackupName: st.LastBackupName,
		LastBackupAt: st.LastBackupAt, DataStored: st.DataStored, Messages: nonNilMap(st.Messages),
		BackingImageName: st.BackingImageName, BackingImageChecksum: st.BackingImageChecksum,
		StorageClassName: st.StorageClassName, BackupTargetName: bv.Spec.BackupTargetName, VolumeName: bv.Spec.VolumeName}
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

// Backup is a backup resource (Longhorn's api/model.go Backup).
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

func backupResource(b *longhorn.Backup) Backup {
	st := b.Status
	snap := b.Spec.SnapshotName
	if snap == "" {
		snap = st.SnapshotName
	}
	vol := st.VolumeName
	if vol == "" {
		vol = b.Labels[types.LonghornLabelBackupVolume]
	}
	res := Resource{ID: b.Name, Type: "backup", Links: map[string]string{}, Actions: map[string]string{}}
	out := Backup{Resource: res, Name: b.Name, State: st.State, Progress: st.Progress, Error: st.Error, URL: st.URL,
		SnapshotName: snap, SnapshotCreated: st.SnapshotCreatedAt, Created: st.BackupCreatedAt, Size: st.Size,
		Labels: nonNilMap(st.Labels), Messages: nonNilMap(st.Messages), VolumeName: vol, VolumeSize: st.VolumeSize,
		VolumeCreated: st.VolumeCreated, VolumeBackingImageName: st.VolumeBackingImageName,
		CompressionMethod: string(st.CompressionMethod), NewlyUploadDataSize: st.NewlyUploadedDataSize,
		ReUploadedDataSize: st.ReUploadedDataSize, BackupTargetName: st.BackupTargetName, BackupMode: b.Spec.BackupMode}
	if b.Spec.BackupBlockSize != 0 {
		out.BlockSize = formatInt(b.Spec.BackupBlockSize)
	}
	return out
}

// listBackups returns the Backup objects matching selector (nil: all), for
// the backups stream and the backup volume actions.
func (s *Server) listBackups(ctx context.Context, selector labels.Selector) ([]Backup, error) {
	objs, err := s.ds.ListBackupsRO(ctx, selector)
	if err != nil {
		return nil, err
	}
	return toResources(objs, backupResource), nil
}

func (s *Server) listAllBackups(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	out, err := s.listBackups(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("backup", "backups", out), nil
}

// BackupInput is the body of backupGet and backupDelete.
type BackupInput struct {
	Name string `json:"name"`
}

// backupVolumeAction serves the read-only backup volume actions from the
// Backup objects and refuses the others until backups land.
func (s *Server) backupVolumeAction(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	bv, err := s.ds.GetBackupVolumeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	sel := labels.SelectorFromSet(labels.Set{types.LonghornLabelBackupVolume: bv.Name})
	switch a := r.URL.Query().Get("action"); a {
	case "backupList", "backupListByVolume":
		out, err := s.listBackups(ctx, sel)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, u.newCollection("backup", "backups", out), nil
	case "backupGet":
		var in BackupInput
		if err := decodeBody(r, &in); err != nil {
			return 0, nil, err
		}
		b, err := s.ds.GetBackupRO(ctx, in.Name)
		if err != nil || b.Labels[types.LonghornLabelBackupVolume] != bv.Name {
			return 0, nil, newError(http.StatusNotFound, CodeNotFound, "backup volume %s has no backup %q", bv.Name, in.Name)
		}
		return http.StatusOK, backupResource(b), nil
	case "backupDelete", "backupVolumeSync":
		return 0, nil, notSupported(backupsMissing)
	default:
		return 0, nil, unknownAction("backup volume", a, backupVolumeActions)
	}
}

package api

import (
	"context"
	"net/http"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Backup collections (Longhorn api/router.go: backuptargets, backupvolumes
// and their actions). Until the backup feature lands, backuptargets lists
// the BackupTarget objects (the default one comes from
// longhorn-default-resource), backupvolumes is empty (nothing makes backup
// volumes yet) and every write answers 501 "backups ... not supported yet".
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

	m.HandleFunc("GET /v1/backupvolumes", h(emptyCollection("backupVolume", "backupvolumes")))
	m.HandleFunc("GET /v1/backupvolumes/{name}", h(missingObject("backup volume", backupsMissing)))
	m.HandleFunc("PUT /v1/backupvolumes", h(refuse(backupsMissing)))
	m.HandleFunc("DELETE /v1/backupvolumes/{name}", h(refuse(backupsMissing)))
	m.HandleFunc("POST /v1/backupvolumes/{name}", h(missingObject("backup volume", backupsMissing)))
}

// refuse returns a handler that answers 501 for a missing feature.
func refuse(what string) handlerFunc {
	return func(context.Context, *http.Request, urls) (int, any, error) { return 0, nil, notSupported(what) }
}

// emptyCollection answers the (empty) collection of a feature that cannot
// have objects yet.
func emptyCollection(typ, coll string) handlerFunc {
	return func(_ context.Context, _ *http.Request, u urls) (int, any, error) {
		return http.StatusOK, u.newCollection(typ, coll, nil), nil
	}
}

// missingObject answers 404 for an object of a feature that cannot have
// objects yet, saying why.
func missingObject(kind, what string) handlerFunc {
	return func(_ context.Context, r *http.Request, _ urls) (int, any, error) {
		return 0, nil, newError(http.StatusNotFound, CodeNotFound, "%s %q not found: %s is not supported yet", kind, r.PathValue("name"), what)
	}
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

// BackupInput is the body of backupGet and backupDelete.
type BackupInput struct {
	Name string `json:"name"`
}

package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Collections of Longhorn features this product does not have yet:
// backing images, system backup and restore, support bundles and share
// managers (RWX). Their lists hold the objects that exist (none, unless
// made by hand: nothing here creates them), so Longhorn's UI pages render;
// every write answers 501 naming the missing feature.
const (
	backingImagesMissing  = "backing images"
	systemBackupsMissing  = "system backup and restore"
	supportBundlesMissing = "support bundles"
)

func (s *Server) pendingRoutes() {
	h := s.handle
	m := s.mux
	m.HandleFunc("GET /v1/backingimages", h(s.listBackingImages))
	m.HandleFunc("GET /v1/backingimages/{name}", h(s.getBackingImage))
	m.HandleFunc("GET /v1/backingimages/{name}/download", h(refuse(backingImagesMissing)))
	m.HandleFunc("POST /v1/backingimages", h(refuse(backingImagesMissing)))
	m.HandleFunc("DELETE /v1/backingimages/{name}", h(refuse(backingImagesMissing)))
	m.HandleFunc("POST /v1/backingimages/{name}", h(refuse(backingImagesMissing)))
	m.HandleFunc("GET /v1/backupbackingimages", h(s.listBackupBackingImages))
	m.HandleFunc("GET /v1/backupbackingimages/{name}", h(s.getBackupBackingImage))
	m.HandleFunc("DELETE /v1/backupbackingimages/{name}", h(refuse(backingImagesMissing)))
	m.HandleFunc("POST /v1/backupbackingimages/{name}", h(refuse(backingImagesMissing)))

	m.HandleFunc("GET /v1/systembackups", h(s.listSystemBackups))
	m.HandleFunc("GET /v1/systembackups/{name}", h(s.getSystemBackup))
	m.HandleFunc("POST /v1/systembackups", h(refuse(systemBackupsMissing)))
	m.HandleFunc("DELETE /v1/systembackups/{name}", h(refuse(systemBackupsMissing)))
	m.HandleFunc("GET /v1/systemrestores", h(s.listSystemRestores))
	m.HandleFunc("GET /v1/systemrestores/{name}", h(s.getSystemRestore))
	m.HandleFunc("POST /v1/systemrestores", h(refuse(systemBackupsMissing)))
	m.HandleFunc("DELETE /v1/systemrestores/{name}", h(refuse(systemBackupsMissing)))

	m.HandleFunc("GET /v1/supportbundles", h(s.listSupportBundles))
	m.HandleFunc("POST /v1/supportbundles", h(refuse(supportBundlesMissing)))
	m.HandleFunc("GET /v1/supportbundles/{name}/{bundleName}", h(refuse(supportBundlesMissing)))
	m.HandleFunc("GET /v1/supportbundles/{name}/{bundleName}/download", h(refuse(supportBundlesMissing)))
	m.HandleFunc("DELETE /v1/supportbundles/{name}/{bundleName}", h(refuse(supportBundlesMissing)))

	m.HandleFunc("GET /v1/sharemanagers", h(s.listShareManagers))
	m.HandleFunc("GET /v1/sharemanagers/{name}", h(s.getShareManager))
}

// BackingImage is a backing image resource (Longhorn's api/model.go).
type BackingImage struct {
	Resource
	Name              string                                         `json:"name"`
	UUID              string                                         `json:"uuid"`
	SourceType        string                                         `json:"sourceType"`
	Parameters        map[string]string                              `json:"parameters"`
	ExpectedChecksum  string                                         `json:"expectedChecksum"`
	DiskFileStatusMap map[string]longhorn.BackingImageDiskFileStatus `json:"diskFileStatusMap"`
	Size              int64                                          `json:"size"`
	VirtualSize       int64                                          `json:"virtualSize"`
	CurrentChecksum   string                                         `json:"currentChecksum"`
	MinNumberOfCopies int                                            `json:"minNumberOfCopies"`
	DiskSelector      []string                                       `json:"diskSelector"`
	NodeSelector      []string                                       `json:"nodeSelector"`
	DataEngine        longhorn.DataEngineType                        `json:"dataEngine"`
	DeletionTimestamp string                                         `json:"deletionTimestamp"`
}

func (u urls) backingImage(bi *longhorn.BackingImage) BackingImage {
	files := map[string]longhorn.BackingImageDiskFileStatus{}
	for disk, st := range bi.Status.DiskFileStatusMap {
		if st != nil {
			files[disk] = *st
		}
	}
	out := BackingImage{Resource: u.newResource("backingImage", "backingimages", bi.Name), Name: bi.Name,
		UUID: bi.Status.UUID, SourceType: string(bi.Spec.SourceType), Parameters: nonNilMap(bi.Spec.SourceParameters),
		ExpectedChecksum: bi.Spec.Checksum, DiskFileStatusMap: files, Size: bi.Status.Size, VirtualSize: bi.Status.VirtualSize,
		CurrentChecksum: bi.Status.Checksum, MinNumberOfCopies: bi.Spec.MinNumberOfCopies,
		DiskSelector: nonNil(bi.Spec.DiskSelector), NodeSelector: nonNil(bi.Spec.NodeSelector), DataEngine: bi.Spec.DataEngine}
	if bi.DeletionTimestamp != nil {
		out.DeletionTimestamp = goTime(bi.DeletionTimestamp.Time)
	}
	return out
}

func (s *Server) listBackingImages(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListBackingImagesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("backingImage", "backingimages", toResources(objs, u.backingImage)), nil
}

func (s *Server) getBackingImage(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetBackingImageRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backingImage(o), nil
}

// BackupBackingImage is a backup of a backing image (Longhorn's api/model.go).
type BackupBackingImage struct {
	Resource
	Name              string               `json:"name"`
	BackingImageName  string               `json:"backingImageName"`
	URL               string               `json:"url"`
	State             longhorn.BackupState `json:"state"`
	Progress          int                  `json:"progress"`
	Error             string               `json:"error"`
	Size              int64                `json:"size"`
	Labels            map[string]string    `json:"labels"`
	Messages          map[string]string    `json:"messages"`
	Created           string               `json:"created"`
	CompressionMethod string               `json:"compressionMethod"`
	BackupTargetName  string               `json:"backupTargetName"`
}

func (u urls) backupBackingImage(b *longhorn.BackupBackingImage) BackupBackingImage {
	st := b.Status
	return BackupBackingImage{Resource: u.newResource("backupBackingImage", "backupbackingimages", b.Name), Name: b.Name,
		BackingImageName: b.Spec.BackingImage, URL: st.URL, State: st.State, Progress: st.Progress, Error: st.Error, Size: st.Size,
		Labels: nonNilMap(st.Labels), Messages: nonNilMap(st.Messages), Created: st.BackupCreatedAt,
		CompressionMethod: string(st.CompressionMethod), BackupTargetName: b.Spec.BackupTargetName}
}

func (s *Server) listBackupBackingImages(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListBackupBackingImagesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("backupBackingImage", "backupbackingimages", toResources(objs, u.backupBackingImage)), nil
}

func (s *Server) getBackupBackingImage(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetBackupBackingImageRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.backupBackingImage(o), nil
}

// SystemBackup is a system backup resource (Longhorn's api/model.go).
type SystemBackup struct {
	Resource
	Name               string                                        `json:"name"`
	VolumeBackupPolicy longhorn.SystemBackupCreateVolumeBackupPolicy `json:"volumeBackupPolicy"`
	Version            string                                        `json:"version"`
	ManagerImage       string                                        `json:"managerImage"`
	State              longhorn.SystemBackupState                    `json:"state"`
	CreatedAt          string                                        `json:"createdAt"`
	Error              string                                        `json:"error"`
}

// errorCondition is "reason: message" of a true Error condition ("" else).
func errorCondition(cs []longhorn.Condition) string {
	c, ok := conditionMap(cs)["Error"]
	if !ok || c.Status != longhorn.ConditionStatusTrue {
		return ""
	}
	return fmt.Sprintf("%v: %v", c.Reason, c.Message)
}

func (u urls) systemBackup(b *longhorn.SystemBackup) SystemBackup {
	return SystemBackup{Resource: u.newResource("systemBackup", "systembackups", b.Name), Name: b.Name,
		VolumeBackupPolicy: b.Spec.VolumeBackupPolicy, Version: b.Status.Version, ManagerImage: b.Status.ManagerImage,
		State: b.Status.State, CreatedAt: goTime(b.Status.CreatedAt.Time), Error: errorCondition(b.Status.Conditions)}
}

func (s *Server) listSystemBackups(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListSystemBackupsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("systemBackup", "systembackups", toResources(objs, u.systemBackup)), nil
}

func (s *Server) getSystemBackup(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetSystemBackupRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.systemBackup(o), nil
}

// SystemRestore is a system restore resource (Longhorn's api/model.go).
type SystemRestore struct {
	Resource
	Name         string                      `json:"name"`
	SystemBackup string                      `json:"systemBackup"`
	State        longhorn.SystemRestoreState `json:"state"`
	CreatedAt    string                      `json:"createdAt"`
	Error        string                      `json:"error"`
}

func (u urls) systemRestore(r *longhorn.SystemRestore) SystemRestore {
	return SystemRestore{Resource: u.newResource("systemRestore", "systemrestores", r.Name), Name: r.Name,
		SystemBackup: r.Spec.SystemBackup, State: r.Status.State, CreatedAt: goTime(r.CreationTimestamp.Time),
		Error: errorCondition(r.Status.Conditions)}
}

func (s *Server) listSystemRestores(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListSystemRestoresRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("systemRestore", "systemrestores", toResources(objs, u.systemRestore)), nil
}

func (s *Server) getSystemRestore(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetSystemRestoreRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.systemRestore(o), nil
}

// SupportBundle is a support bundle resource (Longhorn's api/model.go).
type SupportBundle struct {
	Resource
	NodeID             string                      `json:"nodeID"`
	State              longhorn.SupportBundleState `json:"state"`
	Name               string                      `json:"name"`
	ErrorMessage       string                      `json:"errorMessage"`
	ProgressPercentage int                         `json:"progressPercentage"`
}

func supportBundle(b *longhorn.SupportBundle) SupportBundle {
	res := Resource{ID: b.Name, Type: "supportBundle", Links: map[string]string{}, Actions: map[string]string{}}
	return SupportBundle{Resource: res, NodeID: b.Status.OwnerID, State: b.Status.State, Name: b.Name,
		ErrorMessage: errorCondition(b.Status.Conditions), ProgressPercentage: b.Status.Progress}
}

func (s *Server) listSupportBundles(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListSupportBundlesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("supportBundle", "supportbundles", toResources(objs, supportBundle)), nil
}

// ShareManager is a share manager resource (RWX volumes; Longhorn's model).
type ShareManager struct {
	Resource
	Name     string                     `json:"name"`
	Image    string                     `json:"image"`
	State    longhorn.ShareManagerState `json:"state"`
	Endpoint string                     `json:"endpoint"`
	OwnerID  string                     `json:"ownerID"`
}

func (u urls) shareManager(m *longhorn.ShareManager) ShareManager {
	return ShareManager{Resource: u.newResource("shareManager", "sharemanagers", m.Name), Name: m.Name,
		Image: m.Spec.Image, State: m.Status.State, Endpoint: m.Status.Endpoint, OwnerID: m.Status.OwnerID}
}

func (s *Server) listShareManagers(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListShareManagersRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("shareManager", "sharemanagers", toResources(objs, u.shareManager)), nil
}

func (s *Server) getShareManager(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	o, err := s.ds.GetShareManagerRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.shareManager(o), nil
}

// formatInt is strconv.FormatInt base 10.
func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

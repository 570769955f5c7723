package api

import (
	"strconv"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Collections of Longhorn features this product does not have yet:
// backing images, system backup and restore, support bundles, share
// managers (RWX) and orphans (orphaned replica data is not detected yet).
// Their lists are empty (nothing makes such objects), so Longhorn's UI
// pages render; an object by name answers 404 and every write 501, both
// naming the missing feature.
const (
	backingImagesMissing  = "backing images"
	systemBackupsMissing  = "system backup and restore"
	supportBundlesMissing = "support bundles"
	shareManagersMissing  = "ReadWriteMany volumes (share managers)"
	orphansMissing        = "orphaned data detection"
)

func (s *Server) pendingRoutes() {
	h := s.handle
	m := s.mux
	for _, c := range []struct{ typ, coll, kind, what string }{
		{"backingImage", "backingimages", "backing image", backingImagesMissing},
		{"backupBackingImage", "backupbackingimages", "backup backing image", backingImagesMissing},
		{"systemBackup", "systembackups", "system backup", systemBackupsMissing},
		{"systemRestore", "systemrestores", "system restore", systemBackupsMissing},
		{"supportBundle", "supportbundles", "support bundle", supportBundlesMissing},
		{"shareManager", "sharemanagers", "share manager", shareManagersMissing},
		{"orphan", "orphans", "orphan", orphansMissing},
	} {
		m.HandleFunc("GET /v1/"+c.coll, h(emptyCollection(c.typ, c.coll)))
		m.HandleFunc("GET /v1/"+c.coll+"/{name}", h(missingObject(c.kind, c.what)))
		if c.coll != "sharemanagers" {
			m.HandleFunc("DELETE /v1/"+c.coll+"/{name}", h(missingObject(c.kind, c.what)))
		}
	}
	for _, route := range []string{"POST /v1/backingimages", "POST /v1/backingimages/{name}", "GET /v1/backingimages/{name}/download",
		"POST /v1/backupbackingimages/{name}"} {
		m.HandleFunc(route, h(refuse(backingImagesMissing)))
	}
	m.HandleFunc("POST /v1/systembackups", h(refuse(systemBackupsMissing)))
	m.HandleFunc("POST /v1/systemrestores", h(refuse(systemBackupsMissing)))
	m.HandleFunc("POST /v1/supportbundles", h(refuse(supportBundlesMissing)))
	m.HandleFunc("GET /v1/supportbundles/{name}/{bundleName}", h(missingObject("support bundle", supportBundlesMissing)))
	m.HandleFunc("GET /v1/supportbundles/{name}/{bundleName}/download", h(missingObject("support bundle", supportBundlesMissing)))
	m.HandleFunc("DELETE /v1/supportbundles/{name}/{bundleName}", h(missingObject("support bundle", supportBundlesMissing)))
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

// SystemRestore is a system restore resource (Longhorn's api/model.go).
type SystemRestore struct {
	Resource
	Name         string                      `json:"name"`
	SystemBackup string                      `json:"systemBackup"`
	State        longhorn.SystemRestoreState `json:"state"`
	CreatedAt    string                      `json:"createdAt"`
	Error        string                      `json:"error"`
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

// ShareManager is a share manager resource (RWX volumes; Longhorn's model).
type ShareManager struct {
	Resource
	Name     string                     `json:"name"`
	Image    string                     `json:"image"`
	State    longhorn.ShareManagerState `json:"state"`
	Endpoint string                     `json:"endpoint"`
	OwnerID  string                     `json:"ownerID"`
}

// formatInt is strconv.FormatInt base 10.
func formatInt(n int64) string { return strconv.FormatInt(n, 10) }

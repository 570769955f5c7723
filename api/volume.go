package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/webhook"
)

// volumeResource assembles the resource of v from the caches.
func (s *Server) volumeResource(ctx context.Context, u urls, v *longhorn.Volume) (Volume, error) {
	o := volumeObjects{vol: v}
	var err error
	if o.engines, err = s.ds.ListEnginesByVolumeRO(ctx, v.Name); err != nil {
		return Volume{}, err
	}
	if o.replicas, err = s.ds.ListReplicasByVolumeRO(ctx, v.Name); err != nil {
		return Volume{}, err
	}
	sel := labels.SelectorFromSet(labels.Set{labelBackupVolume: v.Name})
	if o.backups, err = s.ds.ListBackupsRO(ctx, sel); err != nil {
		return Volume{}, err
	}
	o.va, err = s.ds.GetVolumeAttachmentRO(ctx, v.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return Volume{}, err
	}
	if apierrors.IsNotFound(err) {
		o.va = nil
	}
	o.backupBlockSize = s.defaultBackupBlockSize(ctx)
	return u.volume(o), nil
}

// defaultBackupBlockSize is the setting default-backup-block-size (MiB) in
// bytes; 2 MiB when it cannot be read.
func (s *Server) defaultBackupBlockSize(ctx context.Context) int64 {
	v, err := s.ds.GetSettingValue(ctx, types.SettingNameDefaultBackupBlockSize)
	if err != nil {
		return 2 << 20
	}
	mib, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || mib <= 0 {
		return 2 << 20
	}
	return mib << 20
}

func (s *Server) listVolumes(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	vols, err := s.ds.ListVolumesRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	out := make([]Volume, 0, len(vols))
	for _, v := range vols {
		res, err := s.volumeResource(ctx, u, v)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, res)
	}
	return http.StatusOK, u.newCollection("volume", "volumes", sortResources(out)), nil
}

func (s *Server) getVolume(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	v, err := s.ds.GetVolumeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	res, err := s.volumeResource(ctx, u, v)
	return http.StatusOK, res, err
}

// RecurringJobRef selects a recurring job or a group of them for a volume
// (Longhorn's VolumeRecurringJob: name, isGroup).
type RecurringJobRef struct {
	Name    string `json:"name"`
	IsGroup bool   `json:"isGroup"`
}

// VolumeInput is the body of POST /v1/volumes (Longhorn's Volume fields a
// client may set on create). size is bytes or a Kubernetes quantity
// ("1073741824", "1Gi").
type VolumeInput struct {
	Name                        string                                 `json:"name"`
	Size                        string                                 `json:"size"`
	NumberOfReplicas            int                                    `json:"numberOfReplicas"`
	Frontend                    longhorn.VolumeFrontend                `json:"frontend"`
	FromBackup                  string                                 `json:"fromBackup"`
	DataSource                  longhorn.VolumeDataSource              `json:"dataSource"`
	DataLocality                longhorn.DataLocality                  `json:"dataLocality"`
	AccessMode                  longhorn.AccessMode                    `json:"accessMode"`
	Migratable                  bool                                   `json:"migratable"`
	Encrypted                   bool                                   `json:"encrypted"`
	StaleReplicaTimeout         int                                    `json:"staleReplicaTimeout"`
	DiskSelector                []string                               `json:"diskSelector"`
	NodeSelector                []string                               `json:"nodeSelector"`
	RecurringJobSelector        []RecurringJobRef                      `json:"recurringJobSelector"`
	BackingImage                string                                 `json:"backingImage"`
	DataEngine                  longhorn.DataEngineType                `json:"dataEngine"`
	RevisionCounterDisabled     bool                                   `json:"revisionCounterDisabled"`
	SnapshotDataIntegrity       longhorn.SnapshotDataIntegrity         `json:"snapshotDataIntegrity"`
	SnapshotMaxCount            int                                    `json:"snapshotMaxCount"`
	SnapshotMaxSize             string                                 `json:"snapshotMaxSize"`
	BackupCompressionMethod     longhorn.BackupCompressionMethod       `json:"backupCompressionMethod"`
	BackupBlockSize             string                                 `json:"backupBlockSize"`
	ReplicaAutoBalance          longhorn.ReplicaAutoBalance            `json:"replicaAutoBalance"`
	ReplicaSoftAntiAffinity     longhorn.ReplicaSoftAntiAffinity       `json:"replicaSoftAntiAffinity"`
	ReplicaZoneSoftAntiAffinity longhorn.ReplicaZoneSoftAntiAffinity   `json:"replicaZoneSoftAntiAffinity"`
	ReplicaDiskSoftAntiAffinity longhorn.ReplicaDiskSoftAntiAffinity   `json:"replicaDiskSoftAntiAffinity"`
	UnmapMarkSnapChainRemoved   longhorn.UnmapMarkSnapChainRemoved     `json:"unmapMarkSnapChainRemoved"`
	FreezeFilesystemForSnapshot longhorn.FreezeFilesystemForSnapshot   `json:"freezeFilesystemForSnapshot"`
	RestoreVolumeRecurringJob   longhorn.RestoreVolumeRecurringJobType `json:"restoreVolumeRecurringJob"`
	BackupTargetName            string                                 `json:"backupTargetName"`
	Standby                     bool                                   `json:"standby"`
	// ResourceLimits (not in Longhorn): StorageClass-style parameter name ->
	// value (types.ResourceLimitParameters), stored as Volume annotations.
	ResourceLimits map[string]string `json:"resourceLimits,omitempty"`
}

// Volume defaults the API applies on create when a field is empty, as
// Longhorn's API and webhook do (frontend blockdev, data engine v1, access
// mode rwo, stale replica timeout 2880 minutes, replica count and data
// locality from the settings).
const defaultStaleReplicaTimeout = 2880

// ParseSize parses a volume size: decimal bytes or a Kubernetes quantity
// ("1Gi", "1.5Gi"), by the webhook's rule (webhook.ParseSize). Errors name
// the field and are 422.
func ParseSize(field, s string) (int64, error) {
	n, err := webhook.ParseSize(field, strings.TrimSpace(s))
	return n, fieldErr(err)
}

// fieldErr turns the webhook's *FieldError into a 422 naming the field.
func fieldErr(err error) error {
	var fe *webhook.FieldError
	if errors.As(err, &fe) {
		return invalidInput(fe.Field, "%s", fe.Msg)
	}
	return err
}

// volumeFromInput validates in and builds the Volume to create.
func (s *Server) volumeFromInput(ctx context.Context, in VolumeInput) (*longhorn.Volume, error) {
	// The webhook's rule and message, so REST, kubectl and the UI agree.
	if err := webhook.ValidateName("name", in.Name); err != nil {
		return nil, fieldErr(err)
	}
	if err := refuseMissingFeatures(in); err != nil {
		return nil, err
	}
	size, err := ParseSize("size", in.Size)
	if err != nil {
		return nil, err
	}
	maxSize, blockSize, err := createSizes(in)
	if err != nil {
		return nil, err
	}
	labels, err := recurringJobLabels(in.RecurringJobSelector)
	if err != nil {
		return nil, err
	}
	annotations, err := limitAnnotations(in.ResourceLimits)
	if err != nil {
		return nil, err
	}
	v := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: in.Name, Labels: labels, Annotations: annotations}, Spec: longhorn.VolumeSpec{
		Size: size, NumberOfReplicas: in.NumberOfReplicas, Frontend: in.Frontend, FromBackup: in.FromBackup,
		DataSource: in.DataSource, DataLocality: in.DataLocality, AccessMode: in.AccessMode,
		Migratable: in.Migratable, Encrypted: in.Encrypted, StaleReplicaTimeout: in.StaleReplicaTimeout,
		DiskSelector: in.DiskSelector, NodeSelector: in.NodeSelector, BackingImage: in.BackingImage,
		DataEngine: in.DataEngine, RevisionCounterDisabled: in.RevisionCounterDisabled,
		SnapshotDataIntegrity: in.SnapshotDataIntegrity, SnapshotMaxCount: in.SnapshotMaxCount, SnapshotMaxSize: maxSize,
		BackupCompressionMethod: in.BackupCompressionMethod, BackupBlockSize: blockSize,
		ReplicaAutoBalance: in.ReplicaAutoBalance, ReplicaSoftAntiAffinity: in.ReplicaSoftAntiAffinity,
		ReplicaZoneSoftAntiAffinity: in.ReplicaZoneSoftAntiAffinity, ReplicaDiskSoftAntiAffinity: in.ReplicaDiskSoftAntiAffinity,
		UnmapMarkSnapChainRemoved: in.UnmapMarkSnapChainRemoved, FreezeFilesystemForSnapshot: in.FreezeFilesystemForSnapshot,
		RestoreVolumeRecurringJob: in.RestoreVolumeRecurringJob, BackupTargetName: in.BackupTargetName, Standby: in.Standby,
	}}
	return v, s.applyVolumeDefaults(ctx, v)
}

// createSizes parses the optional snapshotMaxSize (bytes or quantity, "" or
// "0" for no limit) and backupBlockSize (2097152 or 16777216 bytes, "" or
// "0" for the setting).
func createSizes(in VolumeInput) (maxSize, blockSize int64, err error) {
	if v := strings.TrimSpace(in.SnapshotMaxSize); v != "" && v != "0" {
		if maxSize, err = ParseSize("snapshotMaxSize", v); err != nil {
			return 0, 0, err
		}
	}
	if v := strings.TrimSpace(in.BackupBlockSize); v != "" && v != "0" {
		if blockSize, err = ParseSize("backupBlockSize", v); err != nil {
			return 0, 0, err
		}
		if blockSize != longhorn.BackupBlockSize2Mi && blockSize != longhorn.BackupBlockSize16Mi {
			return 0, 0, invalidInput("backupBlockSize", "must be 2097152 (2Mi) or 16777216 (16Mi) bytes, got %d", blockSize)
		}
	}
	return maxSize, blockSize, nil
}

// refuseMissingFeatures answers 501 for create fields whose feature this
// product lacks, naming the field.
func refuseMissingFeatures(in VolumeInput) error {
	refusals := []struct {
		set   bool
		field string
		what  string
	}{
		{in.BackingImage != "", "backingImage", "backing images"},
		{in.Encrypted, "encrypted", "encrypted volumes"},
		{in.AccessMode == longhorn.AccessModeReadWriteMany || in.Migratable, "accessMode", "ReadWriteMany and migratable volumes (share manager)"},
		{in.DataEngine == longhorn.DataEngineTypeV2, "dataEngine", "the v2 data engine"},
		{in.Frontend == longhorn.VolumeFrontendNvmf || in.Frontend == longhorn.VolumeFrontendUblk, "frontend", "the nvmf and ublk frontends (v2 data engine)"},
		{in.UnmapMarkSnapChainRemoved == longhorn.UnmapMarkSnapChainRemovedEnabled, "unmapMarkSnapChainRemoved", "marking the snapshot chain removed on unmap"},
		{in.SnapshotDataIntegrity == longhorn.SnapshotDataIntegrityEnabled || in.SnapshotDataIntegrity == longhorn.SnapshotDataIntegrityFastCheck,
			"snapshotDataIntegrity", "snapshot data integrity checking"},
		{in.FreezeFilesystemForSnapshot == longhorn.FreezeFilesystemForSnapshotEnabled, "freezeFilesystemForSnapshot", "freezing the filesystem for snapshots"},
	}
	for _, r := range refusals {
		if r.set {
			return newError(http.StatusNotImplemented, CodeNotSupported, "%s: %s is not supported yet", r.field, r.what)
		}
	}
	return nil
}

// applyVolumeDefaults fills empty fields from settings and Longhorn's
// defaults, and range-checks the replica count (1..20, the range of
// default-replica-count).
func (s *Server) applyVolumeDefaults(ctx context.Context, v *longhorn.Volume) error {
	sp := &v.Spec
	if sp.DataEngine == "" {
		sp.DataEngine = longhorn.DataEngineTypeV1
	}
	if sp.Frontend == "" && !sp.Standby { // a standby volume has no frontend until activated (as the webhook)
		sp.Frontend = longhorn.VolumeFrontendBlockDev
	}
	if sp.AccessMode == "" {
		sp.AccessMode = longhorn.AccessModeReadWriteOnce
	}
	if sp.StaleReplicaTimeout == 0 {
		sp.StaleReplicaTimeout = defaultStaleReplicaTimeout
	}
	if sp.NumberOfReplicas == 0 {
		n, err := s.ds.GetSettingAsIntByDataEngine(ctx, types.SettingNameDefaultReplicaCount, sp.DataEngine)
		if err != nil {
			return err
		}
		sp.NumberOfReplicas = int(n)
	}
	if err := checkReplicaCount("numberOfReplicas", sp.NumberOfReplicas); err != nil {
		return err
	}
	if sp.DataLocality == "" {
		loc, err := s.ds.GetSettingValue(ctx, types.SettingNameDefaultDataLocality)
		if err != nil {
			return err
		}
		sp.DataLocality = longhorn.DataLocality(loc)
	}
	return nil
}

// checkReplicaCount enforces the range of default-replica-count.
func checkReplicaCount(field string, n int) error {
	def, _ := types.GetSettingDefinition(types.SettingNameDefaultReplicaCount)
	lo, hi := int64(1), int64(20)
	if r := def.Range; r != nil && r.Minimum != nil && r.Maximum != nil {
		lo, hi = *r.Minimum, *r.Maximum
	}
	if int64(n) < lo || int64(n) > hi {
		return invalidInput(field, "must be between %d and %d, got %d", lo, hi, n)
	}
	return nil
}

func (s *Server) createVolume(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in VolumeInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	v, err := s.volumeFromInput(ctx, in)
	if err != nil {
		return 0, nil, err
	}
	if t := in.BackupTargetName; t != "" {
		if _, err := s.ds.GetBackupTargetRO(ctx, t); apierrors.IsNotFound(err) {
			return 0, nil, invalidInput("backupTargetName", "backup target %q does not exist", t)
		}
	}
	if v, err = s.ds.CreateVolume(ctx, v); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.volume(volumeObjects{vol: v, backupBlockSize: s.defaultBackupBlockSize(ctx)}), nil
}

func (s *Server) deleteVolume(ctx context.Context, r *http.Request, _ urls) (int, any, error) {
	if err := s.ds.DeleteVolume(ctx, r.PathValue("name")); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// limitAnnotations turns VolumeInput.resourceLimits into the Volume's
// annotations; an unknown key or a bad value is a field error.
func limitAnnotations(in map[string]string) (map[string]string, error) {
	for k := range in {
		if _, ok := types.ResourceLimitParameters[k]; !ok {
			return nil, fieldErr(webhook.Invalid("resourceLimits."+k, "unknown resource limit"))
		}
	}
	out, err := types.ResourceLimitAnnotations(in)
	if err != nil {
		return nil, fieldErr(webhook.Invalid("resourceLimits", "%v", err))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

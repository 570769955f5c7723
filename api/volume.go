package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/webhook"
)

// volumeResource assembles the resource of v from the caches.
func (s *Server) volumeResource(ctx context.Context, u urls, v *longhorn.Volume) (Volume, error) {
	engines, err := s.ds.ListEnginesByVolumeRO(ctx, v.Name)
	if err != nil {
		return Volume{}, err
	}
	replicas, err := s.ds.ListReplicasByVolumeRO(ctx, v.Name)
	if err != nil {
		return Volume{}, err
	}
	va, err := s.ds.GetVolumeAttachmentRO(ctx, v.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return Volume{}, err
	}
	if apierrors.IsNotFound(err) {
		va = nil
	}
	return u.volume(v, engines, replicas, va), nil
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
	sortByID(out, func(v Volume) string { return v.ID })
	return http.StatusOK, u.newCollection("volume", "volumes", out), nil
}

func (s *Server) getVolume(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	v, err := s.ds.GetVolumeRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	res, err := s.volumeResource(ctx, u, v)
	return http.StatusOK, res, err
}

// VolumeInput is the body of POST /v1/volumes (Longhorn's Volume fields a
// client may set on create). size is bytes or a Kubernetes quantity
// ("1073741824", "1Gi").
type VolumeInput struct {
	Name                      string                             `json:"name"`
	Size                      string                             `json:"size"`
	NumberOfReplicas          int                                `json:"numberOfReplicas"`
	Frontend                  longhorn.VolumeFrontend            `json:"frontend"`
	FromBackup                string                             `json:"fromBackup"`
	DataSource                longhorn.VolumeDataSource          `json:"dataSource"`
	DataLocality              longhorn.DataLocality              `json:"dataLocality"`
	AccessMode                longhorn.AccessMode                `json:"accessMode"`
	Migratable                bool                               `json:"migratable"`
	Encrypted                 bool                               `json:"encrypted"`
	StaleReplicaTimeout       int                                `json:"staleReplicaTimeout"`
	DiskSelector              []string                           `json:"diskSelector"`
	NodeSelector              []string                           `json:"nodeSelector"`
	BackingImage              string                             `json:"backingImage"`
	DataEngine                longhorn.DataEngineType            `json:"dataEngine"`
	RevisionCounterDisabled   bool                               `json:"revisionCounterDisabled"`
	SnapshotDataIntegrity     longhorn.SnapshotDataIntegrity     `json:"snapshotDataIntegrity"`
	BackupCompressionMethod   longhorn.BackupCompressionMethod   `json:"backupCompressionMethod"`
	ReplicaAutoBalance        longhorn.ReplicaAutoBalance        `json:"replicaAutoBalance"`
	UnmapMarkSnapChainRemoved longhorn.UnmapMarkSnapChainRemoved `json:"unmapMarkSnapChainRemoved"`
	BackupTargetName          string                             `json:"backupTargetName"`
	Standby                   bool                               `json:"standby"`
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
	size, err := ParseSize("size", in.Size)
	if err != nil {
		return nil, err
	}
	v := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: in.Name}, Spec: longhorn.VolumeSpec{
		Size: size, NumberOfReplicas: in.NumberOfReplicas, Frontend: in.Frontend, FromBackup: in.FromBackup,
		DataSource: in.DataSource, DataLocality: in.DataLocality, AccessMode: in.AccessMode,
		Migratable: in.Migratable, Encrypted: in.Encrypted, StaleReplicaTimeout: in.StaleReplicaTimeout,
		DiskSelector: in.DiskSelector, NodeSelector: in.NodeSelector, BackingImage: in.BackingImage,
		DataEngine: in.DataEngine, RevisionCounterDisabled: in.RevisionCounterDisabled,
		SnapshotDataIntegrity: in.SnapshotDataIntegrity, BackupCompressionMethod: in.BackupCompressionMethod,
		ReplicaAutoBalance: in.ReplicaAutoBalance, UnmapMarkSnapChainRemoved: in.UnmapMarkSnapChainRemoved,
		BackupTargetName: in.BackupTargetName, Standby: in.Standby,
	}}
	return v, s.applyVolumeDefaults(ctx, v)
}

// applyVolumeDefaults fills empty fields from settings and Longhorn's
// defaults, and range-checks the replica count (1..20, the range of
// default-replica-count).
func (s *Server) applyVolumeDefaults(ctx context.Context, v *longhorn.Volume) error {
	sp := &v.Spec
	if sp.DataEngine == "" {
		sp.DataEngine = longhorn.DataEngineTypeV1
	}
	if sp.Frontend == "" {
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
	if v, err = s.ds.CreateVolume(ctx, v); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.volume(v, nil, nil, nil), nil
}

func (s *Server) deleteVolume(ctx context.Context, r *http.Request, _ urls) (int, any, error) {
	if err := s.ds.DeleteVolume(ctx, r.PathValue("name")); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

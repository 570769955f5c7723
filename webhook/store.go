package webhook

import (
	"context"
	"fmt"

	"github.com/longhorn-go/longhorn/datastore"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// dsStore adapts the datastore to the questions the admission kinds ask.
type dsStore struct {
	ds *datastore.DataStore
	// engineImage is the manager's --engine-image, used while setting
	// default-engine-image is not written yet (at first start-up).
	engineImage string
}

// NewStore wraps a datastore for the admission kinds.
func NewStore(ds *datastore.DataStore, engineImage string) interface {
	VolumeStore
	SettingStore
	RecurringJobStore
} {
	return dsStore{ds: ds, engineImage: engineImage}
}

func (s dsStore) VolumeDefaults(engine longhorn.DataEngineType) (VolumeDefaults, error) {
	ctx := context.Background()
	n, err := s.ds.GetSettingAsIntByDataEngine(ctx, types.SettingNameDefaultReplicaCount, engine)
	if err != nil {
		return VolumeDefaults{}, err
	}
	loc, err := s.ds.GetSettingValue(ctx, types.SettingNameDefaultDataLocality)
	if err != nil {
		return VolumeDefaults{}, err
	}
	img, err := s.ds.GetSettingValue(ctx, types.SettingNameDefaultEngineImage)
	if err != nil {
		return VolumeDefaults{}, err
	}
	if img == "" {
		img = s.engineImage
	}
	comp, err := s.ds.GetSettingValue(ctx, types.SettingNameBackupCompressionMethod)
	if err != nil {
		return VolumeDefaults{}, err
	}
	return VolumeDefaults{ReplicaCount: int(n), DataLocality: longhorn.DataLocality(loc), EngineImage: img,
		BackupCompression: longhorn.BackupCompressionMethod(comp)}, nil
}

func (s dsStore) DataEngineEnabled(engine longhorn.DataEngineType) (bool, error) {
	name := types.SettingNameV1DataEngine
	switch engine {
	case longhorn.DataEngineTypeV1:
	case longhorn.DataEngineTypeV2:
		name = types.SettingNameV2DataEngine
	default:
		return false, Invalid("spec.dataEngine", "%q is not one of \"v1\", \"v2\"", engine)
	}
	return s.ds.GetSettingAsBool(context.Background(), name)
}

func (s dsStore) MaxRecurringJobRetention() (int, error) {
	n, err := s.ds.GetSettingAsInt(context.Background(), types.SettingNameRecurringJobMaxRetention)
	return int(n), err
}

func (s dsStore) AnyVolumeAttached(ctx context.Context) (bool, error) {
	vols, err := s.ds.ListVolumesRO(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vols {
		if v.Status.State != "" && v.Status.State != longhorn.VolumeStateDetached {
			return true, nil
		}
	}
	return false, nil
}

// NewRegistryFor returns a registry with every kind the manager admits.
// engineImage is the manager's --engine-image.
func NewRegistryFor(ds *datastore.DataStore, engineImage string) *Registry {
	st := NewStore(ds, engineImage)
	reg := NewRegistry()
	Register(reg, VolumeKind(st))
	Register(reg, SettingKind(st))
	Register(reg, NodeKind())
	Register(reg, EngineKind())
	Register(reg, ReplicaKind())
	Register(reg, RecurringJobKind(st))
	Register(reg, VolumeAttachmentKind())
	return reg
}

package webhook

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
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
	// nads finds Multus NetworkAttachmentDefinitions; nil finds none.
	nads NADLookup
}

// NADLookup reports whether the NetworkAttachmentDefinition namespace/name
// exists; (false, nil) when it or its CRD is missing.
type NADLookup func(ctx context.Context, namespace, name string) (bool, error)

// NetworkAttachmentDefinitions is the Multus CRD's resource
// (k8s.cni.cncf.io/v1 network-attachment-definitions, namespaced).
var NetworkAttachmentDefinitions = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}

// NewNADLookup looks NetworkAttachmentDefinitions up with a GET through c
// (RBAC: get on k8s.cni.cncf.io network-attachment-definitions). A missing
// object or a cluster without the CRD is (false, nil).
func NewNADLookup(c dynamic.Interface) NADLookup {
	return func(ctx context.Context, namespace, name string) (bool, error) {
		_, err := c.Resource(NetworkAttachmentDefinitions).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		}
		return false, fmt.Errorf("get NetworkAttachmentDefinition %s/%s: %w", namespace, name, err)
	}
}

// Option tunes NewRegistryFor.
type Option func(*dsStore)

// WithNADLookup makes setting admission check storage-network against l.
func WithNADLookup(l NADLookup) Option { return func(s *dsStore) { s.nads = l } }

// NewStore wraps a datastore for the admission kinds.
func NewStore(ds *datastore.DataStore, engineImage string, opts ...Option) interface {
	VolumeStore
	SettingStore
	RecurringJobStore
	EngineImageStore
} {
	s := dsStore{ds: ds, engineImage: engineImage}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// DefaultEngineImages returns setting default-engine-image and the
// manager's --engine-image.
func (s dsStore) DefaultEngineImages(ctx context.Context) ([]string, error) {
	img, err := s.ds.GetSettingValue(ctx, types.SettingNameDefaultEngineImage)
	if err != nil {
		return nil, err
	}
	return []string{img, s.engineImage}, nil
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
	blockMiB, err := s.ds.GetSettingAsInt(ctx, types.SettingNameDefaultBackupBlockSize)
	if err != nil {
		return VolumeDefaults{}, err
	}
	return VolumeDefaults{ReplicaCount: int(n), DataLocality: longhorn.DataLocality(loc), EngineImage: img,
		BackupCompression: longhorn.BackupCompressionMethod(comp), BackupBlockSize: blockMiB << 20}, nil
}

func (s dsStore) Restoring(ctx context.Context, volume string) (bool, error) {
	engines, err := s.ds.ListEnginesByVolumeRO(ctx, volume)
	if err != nil {
		return false, fmt.Errorf("list engines of volume %s: %w", volume, err)
	}
	for _, e := range engines {
		for _, st := range e.Status.RestoreStatus {
			if st != nil && st.IsRestoring {
				return true, nil
			}
		}
	}
	return false, nil
}

func (s dsStore) EngineUpgradeCheck(ctx context.Context, v *longhorn.Volume, image string) (lifecycle.EngineUpgradeCheck, error) {
	return s.ds.EngineUpgradeCheck(ctx, v, image)
}

func (s dsStore) CloneSource(ctx context.Context, volume, snapshot string) (int64, error) {
	v, err := s.ds.GetVolumeRO(ctx, volume)
	if apierrors.IsNotFound(err) {
		return 0, Invalid("spec.dataSource", "source volume %s does not exist", volume)
	}
	if err != nil {
		return 0, err
	}
	if v.DeletionTimestamp != nil {
		return 0, Invalid("spec.dataSource", "source volume %s is being deleted", volume)
	}
	if snapshot == "" {
		return v.Spec.Size, nil
	}
	sn, err := s.ds.GetSnapshotRO(ctx, snapshot)
	if apierrors.IsNotFound(err) || (err == nil && sn.Spec.Volume != volume) {
		return 0, Invalid("spec.dataSource", "volume %s has no snapshot %s", volume, snapshot)
	}
	if err != nil {
		return 0, err
	}
	return v.Spec.Size, nil
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

func (s dsStore) AttachedVolumes(ctx context.Context) ([]string, error) {
	vols, err := s.ds.ListVolumesRO(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	var out []string
	for _, v := range vols {
		if v.Status.State != "" && v.Status.State != longhorn.VolumeStateDetached {
			out = append(out, v.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s dsStore) NetworkAttachmentDefinitionExists(ctx context.Context, namespace, name string) (bool, error) {
	if s.nads == nil {
		return false, nil
	}
	return s.nads(ctx, namespace, name)
}

// NewRegistryFor returns a registry with every kind the manager admits.
// engineImage is the manager's --engine-image.
func NewRegistryFor(ds *datastore.DataStore, engineImage string, opts ...Option) *Registry {
	st := NewStore(ds, engineImage, opts...)
	reg := NewRegistry()
	Register(reg, VolumeKind(st))
	Register(reg, SettingKind(st))
	Register(reg, NodeKind())
	Register(reg, EngineKind())
	Register(reg, ReplicaKind())
	Register(reg, RecurringJobKind(st))
	Register(reg, VolumeAttachmentKind())
	Register(reg, EngineImageKind(st))
	return reg
}

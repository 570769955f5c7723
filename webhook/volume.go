package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Volume limits.
const (
	// SizeAlignment: volume sizes are rounded up to a multiple of 2 MiB
	// (Longhorn's util.RoundUpSize).
	SizeAlignment int64 = 2 << 20
	// MaxReplicaCount is the largest numberOfReplicas (setting
	// default-replica-count has the same range, 1-20).
	MaxReplicaCount = 20
	// NameMaximumLength bounds volume names so that child names and label
	// values stay valid (Longhorn's datastore.NameMaximumLength; a CSI
	// "pvc-<uuid>" name is exactly 40). kubectl, REST and the UI all meet
	// this one limit, with ValidateName's message.
	NameMaximumLength = 40
	// FinalizerName is the finalizer the manager puts on volumes.
	FinalizerName = "longhorn.io"
)

// nameRegexp is Longhorn's util.ValidateName pattern restricted to the
// characters Kubernetes object names allow.
var nameRegexp = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]+$`)

// VolumeDefaults are the setting values the volume mutator fills in.
type VolumeDefaults struct {
	ReplicaCount      int                              // default-replica-count (for the volume's data engine)
	DataLocality      longhorn.DataLocality            // default-data-locality
	EngineImage       string                           // default-engine-image
	BackupCompression longhorn.BackupCompressionMethod // backup-compression-method
	BackupBlockSize   int64                            // default-backup-block-size, in bytes (0: unknown)
}

// VolumeStore is what volume admission reads besides the request.
type VolumeStore interface {
	VolumeDefaults(engine longhorn.DataEngineType) (VolumeDefaults, error)
	// DataEngineEnabled reports v1-data-engine / v2-data-engine.
	DataEngineEnabled(engine longhorn.DataEngineType) (bool, error)
	// Restoring reports whether a replica of the volume is restoring a
	// backup (an engine's status.restoreStatus says isRestoring).
	Restoring(ctx context.Context, volume string) (bool, error)
	// CloneSource returns the size in bytes of source volume volume and,
	// when snapshot is not "", checks that the volume has that Snapshot
	// object; an Invalid error names what is missing.
	CloneSource(ctx context.Context, volume, snapshot string) (int64, error)
	// EngineUpgradeCheck gathers what lifecycle.CheckEngineUpgrade decides
	// on when v's spec.image changes to image
	// (datastore.DataStore.EngineUpgradeCheck).
	EngineUpgradeCheck(ctx context.Context, v *longhorn.Volume, image string) (lifecycle.EngineUpgradeCheck, error)
	ExpansionStore
}

// VolumeKind is the admission registration for volumes.
func VolumeKind(store VolumeStore) Kind[*longhorn.Volume] {
	return Kind[*longhorn.Volume]{
		Resource:   "volumes",
		New:        func() *longhorn.Volume { return &longhorn.Volume{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Prepare:    normalizeVolumeSize,
		Mutate: func(_ context.Context, req Request[*longhorn.Volume]) ([]PatchOp, error) {
			engine := req.Object.Spec.DataEngine
			if engine == "" {
				engine = longhorn.DataEngineTypeV1
			}
			if req.Operation == admissionv1.Create {
				// Refuse a bad name before the mutation turns it into a
				// label the API server would refuse with its own message.
				if err := ValidateName("metadata.name", req.Object.Name); err != nil {
					return nil, err
				}
			}
			d, err := store.VolumeDefaults(engine)
			if err != nil {
				return nil, fmt.Errorf("read volume defaults: %w", err)
			}
			return mutateVolume(req.Object, req.Operation == admissionv1.Create, d), nil
		},
		Validate: func(ctx context.Context, req Request[*longhorn.Volume]) error {
			if req.Operation == admissionv1.Create {
				on, err := store.DataEngineEnabled(req.Object.Spec.DataEngine)
				if err != nil {
					return err
				}
				if !on {
					return Invalid("spec.dataEngine", "data engine %s is disabled (setting %s-data-engine)", req.Object.Spec.DataEngine, req.Object.Spec.DataEngine)
				}
				if err := refuseNotSupported(VolumeSpecSupport, "spec.", nil, &req.Object.Spec); err != nil {
					return err
				}
				if err := validateVolume(req.Object); err != nil {
					return err
				}
				return validateDataSource(ctx, store, &req.Object.Spec)
			}
			return admitVolumeUpdate(ctx, store, req.Old, req.Object)
		},
	}
}

// admitVolumeUpdate validates an update: supported fields, the update
// rules, activation and expansion.
func admitVolumeUpdate(ctx context.Context, store VolumeStore, old, v *longhorn.Volume) error {
	if err := refuseNotSupported(VolumeSpecSupport, "spec.", &old.Spec, &v.Spec); err != nil {
		return err
	}
	if err := validateVolumeUpdate(old, v); err != nil {
		return err
	}
	if err := checkActivation(ctx, store, old, v); err != nil {
		return err
	}
	if err := checkImageChange(ctx, store, old, v); err != nil {
		return err
	}
	if v.Spec.Size <= old.Spec.Size || v.DeletionTimestamp != nil {
		return nil
	}
	in, err := store.Expansion(ctx, v)
	if err != nil {
		return err
	}
	return checkExpansion(in, old.Spec.Size, v.Spec.Size)
}

// checkImageChange refuses a change of spec.image (the engine image) that
// lifecycle.CheckEngineUpgrade refuses: the offline upgrade of a detached
// volume, the live upgrade of an attached one, and a rollback to
// status.currentImage (always allowed), decided as the REST engineUpgrade
// action and the automatic upgrade decide.
func checkImageChange(ctx context.Context, store VolumeStore, old, v *longhorn.Volume) error {
	if old.Spec.Image == "" || old.Spec.Image == v.Spec.Image {
		return nil
	}
	in, err := store.EngineUpgradeCheck(ctx, old, v.Spec.Image)
	if err != nil {
		return err
	}
	if err := lifecycle.CheckEngineUpgrade(in); err != nil {
		return Invalid("spec.image", "%v", err)
	}
	return nil
}

// checkActivation refuses to activate a standby volume (spec.Standby true
// to false) while one of its replicas restores a backup.
func checkActivation(ctx context.Context, store VolumeStore, old, v *longhorn.Volume) error {
	if !old.Spec.Standby || v.Spec.Standby {
		return nil
	}
	busy, err := store.Restoring(ctx, v.Name)
	if err != nil {
		return err
	}
	if busy {
		return Invalid("spec.Standby", "cannot activate standby volume %s while it restores a backup; retry when the restore is done", v.Name)
	}
	return nil
}

// validateDataSource checks a new volume's spec.dataSource: one of
// Longhorn's two forms, vol://<volume> or snap://<volume>/<snapshot>, not
// with spec.fromBackup, naming a source volume (and Snapshot object) that
// exists, with spec.size at least the source's.
func validateDataSource(ctx context.Context, store VolumeStore, s *longhorn.VolumeSpec) error {
	if s.DataSource == "" {
		return nil
	}
	src, snap, ok := s.DataSource.Parse()
	if !ok {
		return Invalid("spec.dataSource", "%q is not vol://<volume> or snap://<volume>/<snapshot>", s.DataSource)
	}
	if s.FromBackup != "" {
		return Invalid("spec.dataSource", "a volume takes its data from a backup (spec.fromBackup) or from another volume, not both")
	}
	size, err := store.CloneSource(ctx, src, snap)
	if err != nil {
		return err
	}
	if s.Size < size {
		return Invalid("spec.size", "%d bytes is smaller than source volume %s (%d bytes)", s.Size, src, size)
	}
	return nil
}

// maxSize is the largest size a quantity may give (int64 bytes).
var maxSize = resource.NewQuantity(1<<63-1, resource.BinarySI)

// ParseSize parses a volume size: a byte count ("2147483648") or a
// Kubernetes quantity ("2Gi", "1.5Gi", "500M"). It must be a positive whole
// number of bytes below 2^63.
func ParseSize(field, s string) (int64, error) {
	if s == "" {
		return 0, Invalid(field, "must be set (bytes or a quantity such as 1Gi)")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 {
			return 0, Invalid(field, "must be greater than 0, got %d", n)
		}
		return n, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, Invalid(field, "%q is neither a byte count nor a quantity such as 1Gi", s)
	}
	// ParseQuantity caps what overflows int64 at the maximum.
	if q.Sign() <= 0 || q.Cmp(*maxSize) >= 0 {
		return 0, Invalid(field, "%q must be greater than 0 and below 2^63 bytes", s)
	}
	n := q.Value() // rounded up to a whole byte
	if q.Cmp(*resource.NewQuantity(n, q.Format)) != 0 {
		return 0, Invalid(field, "%q is not a whole number of bytes", s)
	}
	return n, nil
}

// RoundUpSize rounds a byte count up to the next multiple of 2 MiB.
func RoundUpSize(n int64) int64 {
	if n <= 0 {
		return SizeAlignment
	}
	return (n + SizeAlignment - 1) / SizeAlignment * SizeAlignment
}

// restoresData reports whether the volume takes its data (and so its size)
// from elsewhere: spec.fromBackup or spec.dataSource.
func restoresData(spec map[string]any) bool {
	fb, _ := spec["fromBackup"].(string)
	ds, _ := spec["dataSource"].(string)
	return fb != "" || ds != ""
}

// normalizeVolumeSize rewrites spec.size of the raw object into a byte
// string rounded up to 2 MiB, so quantities such as "1Gi" decode into the
// int64 field. It returns the patch for the mutating webhook.
func normalizeVolumeSize(raw []byte) ([]byte, []PatchOp, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, Invalid("object", "cannot decode volume: %v", err)
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil, nil, Invalid("spec", "must be set")
	}
	var s string
	switch v := spec["size"].(type) {
	case string:
		s = v
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		s = ""
	default:
		return nil, nil, Invalid("spec.size", "must be a string of bytes or a quantity, got %T", v)
	}
	var n int64
	if s != "" || restoresData(spec) {
		var err error
		if n, err = ParseSize("spec.size", s); err != nil {
			return nil, nil, err
		}
	} // else: no size is 0, rounded up to the 2 MiB minimum as Longhorn's mutator does
	want := strconv.FormatInt(RoundUpSize(n), 10)
	if want == s {
		return raw, nil, nil
	}
	spec["size"] = want
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, err
	}
	return out, []PatchOp{{Op: "replace", Path: "/spec/size", Value: want}}, nil
}

// createDefaults are the defaults only a new volume gets: replica count,
// data locality, engine image, stale-replica timeout, backup compression and
// the finalizer.
func createDefaults(v *longhorn.Volume, d VolumeDefaults) []PatchOp {
	s := &v.Spec
	var ops []PatchOp
	for _, c := range []struct {
		empty bool
		path  string
		value any
	}{
		{s.NumberOfReplicas == 0, "/spec/numberOfReplicas", d.ReplicaCount},
		{s.DataLocality == "", "/spec/dataLocality", d.DataLocality},
		{s.Image == "", "/spec/image", d.EngineImage},
		{s.StaleReplicaTimeout == 0, "/spec/staleReplicaTimeout", 2880},
		{s.BackupCompressionMethod == "" && d.BackupCompression != "", "/spec/backupCompressionMethod", d.BackupCompression},
		// backupBlockSize is a JSON string (json:",string").
		{s.BackupBlockSize == 0 && d.BackupBlockSize > 0, "/spec/backupBlockSize", strconv.FormatInt(d.BackupBlockSize, 10)},
		{v.Finalizers == nil, "/metadata/finalizers", []string{FinalizerName}},
		{v.Finalizers != nil && !hasFinalizer(v.Finalizers), "/metadata/finalizers/-", FinalizerName},
	} {
		if c.empty {
			ops = append(ops, PatchOp{Op: "add", Path: c.path, Value: c.value})
		}
	}
	return ops
}

// mutateVolume fills defaults (Longhorn's volume mutator): replica count,
// data locality, access mode, engine image, empty enums as "ignored",
// empty selectors as [], the finalizer and the volume label.
func mutateVolume(v *longhorn.Volume, create bool, d VolumeDefaults) []PatchOp {
	var ops []PatchOp
	set := func(path string, value any) { ops = append(ops, PatchOp{Op: "add", Path: path, Value: value}) }
	s := &v.Spec
	if create {
		ops = append(ops, createDefaults(v, d)...)
	}
	if v.Labels == nil {
		set("/metadata/labels", map[string]string{"longhornvolume": v.Name})
	} else if v.Labels["longhornvolume"] != v.Name {
		set("/metadata/labels/longhornvolume", v.Name)
	}
	defaults := []struct {
		empty bool
		path  string
		value any
	}{
		{s.DataEngine == "", "/spec/dataEngine", longhorn.DataEngineTypeV1},
		{s.Frontend == "" && !s.Standby, "/spec/frontend", longhorn.VolumeFrontendBlockDev},
		{s.AccessMode == "", "/spec/accessMode", longhorn.AccessModeReadWriteOnce},
		{s.ReplicaAutoBalance == "", "/spec/replicaAutoBalance", longhorn.ReplicaAutoBalanceIgnored},
		{s.SnapshotDataIntegrity == "", "/spec/snapshotDataIntegrity", longhorn.SnapshotDataIntegrityIgnored},
		{s.UnmapMarkSnapChainRemoved == "", "/spec/unmapMarkSnapChainRemoved", longhorn.UnmapMarkSnapChainRemovedIgnored},
		{s.RestoreVolumeRecurringJob == "", "/spec/restoreVolumeRecurringJob", longhorn.RestoreVolumeRecurringJobDefault},
		{s.ReplicaSoftAntiAffinity == "", "/spec/replicaSoftAntiAffinity", longhorn.ReplicaSoftAntiAffinityDefault},
		{s.ReplicaZoneSoftAntiAffinity == "", "/spec/replicaZoneSoftAntiAffinity", longhorn.ReplicaZoneSoftAntiAffinityDefault},
		{s.ReplicaDiskSoftAntiAffinity == "", "/spec/replicaDiskSoftAntiAffinity", longhorn.ReplicaDiskSoftAntiAffinityDefault},
		{s.FreezeFilesystemForSnapshot == "", "/spec/freezeFilesystemForSnapshot", longhorn.FreezeFilesystemForSnapshotDefault},
		{s.OfflineRebuilding == "", "/spec/offlineRebuilding", longhorn.VolumeOfflineRebuildingIgnored},
		{s.DiskSelector == nil, "/spec/diskSelector", []string{}},
		{s.NodeSelector == nil, "/spec/nodeSelector", []string{}},
	}
	for _, d := range defaults {
		if d.empty {
			set(d.path, d.value)
		}
	}
	return ops
}

func hasFinalizer(fs []string) bool {
	for _, f := range fs {
		if f == FinalizerName {
			return true
		}
	}
	return false
}

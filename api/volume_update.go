package api

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// The update actions of a volume (Longhorn api/volume.go): one spec field
// each, from a body {"<field>": value}. Values that need a feature this
// product lacks answer 501 (e.g. unmapMarkSnapChainRemoved "enabled");
// "ignored" (follow the setting) and "disabled" are always taken.
func init() {
	enum := func(name, input, field string, allowed []string, missing map[string]string, set func(*longhorn.VolumeSpec, string)) {
		volumeActionTable[name] = volumeAction{enumUpdate(field, allowed, missing, set), ActionDef{Input: input, Output: "volume"},
			fieldInputModel(field, "")}
	}
	num := func(name, input, field string, lo, hi int64, set func(*longhorn.VolumeSpec, int64), zeroOnly string) {
		volumeActionTable[name] = volumeAction{intUpdate(field, lo, hi, zeroOnly, set), ActionDef{Input: input, Output: "volume"},
			fieldInputModel(field, 0)}
	}
	enum("updateDataLocality", "UpdateDataLocalityInput", "dataLocality",
		[]string{"disabled", "best-effort", "strict-local"}, nil, func(s *longhorn.VolumeSpec, v string) { s.DataLocality = longhorn.DataLocality(v) })
	enum("updateAccessMode", "UpdateAccessModeInput", "accessMode", []string{"rwo", "rwop", "rwx"},
		map[string]string{"rwx": "ReadWriteMany (rwx) volumes served by a share manager"},
		func(s *longhorn.VolumeSpec, v string) { s.AccessMode = longhorn.AccessMode(v) })
	enum("updateReplicaAutoBalance", "UpdateReplicaAutoBalanceInput", "replicaAutoBalance",
		[]string{"ignored", "disabled", "least-effort", "best-effort"}, nil,
		func(s *longhorn.VolumeSpec, v string) { s.ReplicaAutoBalance = longhorn.ReplicaAutoBalance(v) })
	enum("updateUnmapMarkSnapChainRemoved", "UpdateUnmapMarkSnapChainRemovedInput", "unmapMarkSnapChainRemoved",
		[]string{"ignored", "disabled", "enabled"}, map[string]string{"enabled": "marking the snapshot chain removed on unmap"},
		func(s *longhorn.VolumeSpec, v string) {
			s.UnmapMarkSnapChainRemoved = longhorn.UnmapMarkSnapChainRemoved(v)
		})
	enum("updateSnapshotDataIntegrity", "UpdateSnapshotDataIntegrityInput", "snapshotDataIntegrity",
		[]string{"ignored", "disabled", "enabled", "fast-check"},
		map[string]string{"enabled": "snapshot data integrity checking", "fast-check": "snapshot data integrity checking"},
		func(s *longhorn.VolumeSpec, v string) { s.SnapshotDataIntegrity = longhorn.SnapshotDataIntegrity(v) })
	enum("updateBackupCompressionMethod", "UpdateBackupCompressionMethodInput", "backupCompressionMethod",
		[]string{"none", "lz4", "gzip"}, nil,
		func(s *longhorn.VolumeSpec, v string) {
			s.BackupCompressionMethod = longhorn.BackupCompressionMethod(v)
		})
	enum("updateReplicaSoftAntiAffinity", "UpdateReplicaSoftAntiAffinityInput", "replicaSoftAntiAffinity",
		[]string{"ignored", "enabled", "disabled"}, nil,
		func(s *longhorn.VolumeSpec, v string) {
			s.ReplicaSoftAntiAffinity = longhorn.ReplicaSoftAntiAffinity(v)
		})
	enum("updateReplicaZoneSoftAntiAffinity", "UpdateReplicaZoneSoftAntiAffinityInput", "replicaZoneSoftAntiAffinity",
		[]string{"ignored", "enabled", "disabled"}, nil,
		func(s *longhorn.VolumeSpec, v string) {
			s.ReplicaZoneSoftAntiAffinity = longhorn.ReplicaZoneSoftAntiAffinity(v)
		})
	enum("updateReplicaDiskSoftAntiAffinity", "UpdateReplicaDiskSoftAntiAffinityInput", "replicaDiskSoftAntiAffinity",
		[]string{"ignored", "enabled", "disabled"}, nil,
		func(s *longhorn.VolumeSpec, v string) {
			s.ReplicaDiskSoftAntiAffinity = longhorn.ReplicaDiskSoftAntiAffinity(v)
		})
	enum("updateFreezeFilesystemForSnapshot", "UpdateFreezeFilesystemForSnapshotInput", "freezeFilesystemForSnapshot",
		[]string{"ignored", "enabled", "disabled"}, map[string]string{"enabled": "freezing the filesystem for snapshots"},
		func(s *longhorn.VolumeSpec, v string) {
			s.FreezeFilesystemForSnapshot = longhorn.FreezeFilesystemForSnapshot(v)
		})
	enum("updateOfflineReplicaRebuilding", "UpdateOfflineRebuildingInput", "offlineRebuilding",
		[]string{"ignored", "disabled", "enabled"}, map[string]string{"enabled": "offline replica rebuilding"},
		func(s *longhorn.VolumeSpec, v string) { s.OfflineRebuilding = longhorn.VolumeOfflineRebuilding(v) })
	num("updateSnapshotMaxCount", "UpdateSnapshotMaxCountInput", "snapshotMaxCount", 0, 250,
		func(s *longhorn.VolumeSpec, n int64) { s.SnapshotMaxCount = int(n) }, "")
	num("updateRebuildConcurrentSyncLimit", "UpdateRebuildConcurrentSyncLimitInput", "rebuildConcurrentSyncLimit", 0, 5,
		func(s *longhorn.VolumeSpec, n int64) { s.RebuildConcurrentSyncLimit = int(n) }, "")
	num("updateReplicaRebuildingBandwidthLimit", "UpdateReplicaRebuildingBandwidthLimitInput", "replicaRebuildingBandwidthLimit",
		0, 1<<31, func(s *longhorn.VolumeSpec, n int64) { s.ReplicaRebuildingBandwidthLimit = n }, "")
	num("updateUblkQueueDepth", "UpdateUblkQueueDepthInput", "ublkQueueDepth", 0, 0,
		func(s *longhorn.VolumeSpec, n int64) { s.UblkQueueDepth = int(n) }, "the ublk frontend (v2 data engine)")
	num("updateUblkNumberOfQueue", "UpdateUblkNumberOfQueueInput", "ublkNumberOfQueue", 0, 0,
		func(s *longhorn.VolumeSpec, n int64) { s.UblkNumberOfQueue = int(n) }, "the ublk frontend (v2 data engine)")
	volumeActionTable["updateSnapshotMaxSize"] = volumeAction{(*Server).updateSnapshotMaxSize,
		ActionDef{Input: "UpdateSnapshotMaxSizeInput", Output: "volume"}, fieldInputModel("snapshotMaxSize", "")}
	volumeActionTable["replicaRemove"] = volumeAction{(*Server).replicaRemove, in("replicaRemoveInput"), ReplicaRemoveInput{}}
	volumeActionTable["engineUpgrade"] = volumeAction{(*Server).engineUpgrade,
		ActionDef{Input: "engineUpgradeInput", Output: "volume"}, EngineUpgradeInput{}}
	volumeActionTable["offlineReplicaRebuilding"] = volumeAction{nil, ActionDef{Output: "volume"}, nil}
	volumeActionTable[ActionTrimFilesystem] = volumeAction{(*Server).trimFilesystem, ActionDef{Output: "volume"}, nil}
}

// fieldInputModel is a schema model for a one-field input: a struct with
// one field of example's type and JSON name field.
func fieldInputModel(field string, example any) any {
	t := reflect.StructOf([]reflect.StructField{{Name: "Value", Type: reflect.TypeOf(example), Tag: reflect.StructTag(`json:"` + field + `"`)}})
	return reflect.New(t).Elem().Interface()
}

// fieldInput decodes a {"<field>": value} body into v; a missing field is a
// 422 naming it.
func fieldInput(r *http.Request, field string, v any) error {
	var body map[string]json.RawMessage
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	raw, ok := body[field]
	if !ok {
		return invalidInput(field, "is required")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidInput(field, "has the wrong type: %v", err)
	}
	return nil
}

// enumUpdate sets a string field to one of allowed (any value when allowed
// is nil); values in missing answer 501 naming the missing feature.
func enumUpdate(field string, allowed []string, missing map[string]string, set func(*longhorn.VolumeSpec, string)) volumeActionFunc {
	return func(s *Server, ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
		var val string
		if err := fieldInput(r, field, &val); err != nil {
			return 0, nil, err
		}
		if allowed != nil && !slices.Contains(allowed, val) {
			return 0, nil, invalidInput(field, "%q is not one of %s", val, strings.Join(allowed, ", "))
		}
		if why, ok := missing[val]; ok {
			return 0, nil, notSupported(why)
		}
		if field == "dataLocality" && val == string(longhorn.DataLocalityStrictLocal) && v.Spec.NumberOfReplicas != 1 {
			return 0, nil, invalidInput(field, "strict-local needs exactly 1 replica; the volume has %d", v.Spec.NumberOfReplicas)
		}
		return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { set(sp, val); return nil })
	}
}

// intUpdate sets an int field within [lo, hi]; with zeroOnly set, values
// other than 0 need that missing feature and answer 501.
func intUpdate(field string, lo, hi int64, zeroOnly string, set func(*longhorn.VolumeSpec, int64)) volumeActionFunc {
	return func(s *Server, ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
		var n json.Number
		if err := fieldInput(r, field, &n); err != nil {
			return 0, nil, err
		}
		val, err := n.Int64()
		if err != nil {
			return 0, nil, invalidInput(field, "%q is not an integer", n.String())
		}
		if zeroOnly != "" && val != 0 {
			return 0, nil, notSupported(zeroOnly)
		}
		if val < lo || val > hi {
			return 0, nil, invalidInput(field, "must be between %d and %d, got %d", lo, hi, val)
		}
		if field == "snapshotMaxCount" && val == 1 {
			return 0, nil, invalidInput(field, "must be 0 (the snapshot-max-count setting) or between 2 and 250, got 1")
		}
		return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { set(sp, val); return nil })
	}
}

// updateSnapshotMaxSize takes bytes or a quantity; 0 means no limit, else it
// must be at least twice the volume size (Longhorn's rule).
func (s *Server) updateSnapshotMaxSize(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var val string
	if err := fieldInput(r, "snapshotMaxSize", &val); err != nil {
		return 0, nil, err
	}
	var size int64
	if strings.TrimSpace(val) != "0" {
		var err error
		if size, err = ParseSize("snapshotMaxSize", val); err != nil {
			return 0, nil, err
		}
		if size < 2*v.Spec.Size {
			return 0, nil, invalidInput("snapshotMaxSize", "must be 0 (no limit) or at least twice the volume size (%d bytes), got %d", 2*v.Spec.Size, size)
		}
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { sp.SnapshotMaxSize = size; return nil })
}

// ReplicaRemoveInput is the body of replicaRemove.
type ReplicaRemoveInput struct {
	Name string `json:"name"`
}

// replicaRemove deletes one replica of the volume; the volume controller
// replenishes it (Longhorn's e2e tests use this to force a rebuild).
func (s *Server) replicaRemove(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in ReplicaRemoveInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == "" {
		return 0, nil, invalidInput("name", "is required: the replica to remove")
	}
	rep, err := s.ds.GetReplicaRO(ctx, in.Name)
	if apierrors.IsNotFound(err) || (err == nil && rep.Spec.VolumeName != v.Name) {
		return 0, nil, invalidInput("name", "%q is not a replica of volume %s", in.Name, v.Name)
	} else if err != nil {
		return 0, nil, err
	}
	if err := s.ds.DeleteReplica(ctx, in.Name); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, v)
}

// oneOf is a 422 naming field and the allowed values unless v is one of them.
func oneOf[T ~string](field string, v T, allowed ...T) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return invalidInput(field, "%q is not one of %s", v, strings.Join(names, ", "))
}

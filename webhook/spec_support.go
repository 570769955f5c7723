package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// FieldSupport says whether the product acts on one spec field of a
// Longhorn object (the JSON name, e.g. "numberOfReplicas"). Like the
// settings (types/setting_support.go), a field is either acted on, with
// Reader naming the code ("dir/file.go:Func", module-relative), or not
// supported yet: admission then refuses, with "not supported yet", a new or
// changed value that is not the field's zero value or one of Allowed (a
// value stored before the refusal existed stays). spec_support_test.go walks
// every field of the spec types and checks the list against the code.
type FieldSupport struct {
	// Reader is the code that acts on the field. A not-supported field may
	// name code that reads it for a lesser purpose.
	Reader string
	// NotSupported: nothing acts on the field yet.
	NotSupported bool
	// Allowed are JSON values besides the zero value that a not-supported
	// field accepts because they ask for nothing (`"ignored"`, `"disabled"`).
	Allowed []string
	// What names the feature in the refusal, e.g. "encrypted volumes".
	What string
	// Pending names the helper whose work in progress implements the field
	// (and owns its refusal meanwhile); the check skips it.
	Pending string
}

func acts(reader string) FieldSupport { return FieldSupport{Reader: reader} }

func notYet(what string, allowed ...string) FieldSupport {
	return FieldSupport{NotSupported: true, What: what, Allowed: allowed}
}

func pending(helper string) FieldSupport { return FieldSupport{Pending: helper} }

const (
	ensureEngine   = "controller/volume_children.go:ensureEngine"
	newReplica     = "controller/volume_children.go:newReplica"
	schedVolume    = "controller/volume_schedule.go:schedVolume"
	schedNodes     = "controller/volume_schedule.go:schedNodes"
	schedReplicaFn = "controller/volume_schedule.go:schedReplica"
	volSettings    = "controller/volume_snapshot.go:loadVolumeSettings"
	engineProcess  = "controller/engine_controller.go:engineProcessSpec"
	replicaProcess = "controller/replica_controller.go:processSpec"
	instanceAction = "controller/instance_handler.go:instanceAction"
	diskStatuses   = "controller/node_disks.go:decideDiskStatuses"
	replenish      = "controller/volume_replicas.go:reconcileReplenish"
	evictionFor    = "controller/volume_evict.go:evictionRequestedFor"
)

// VolumeSpecSupport covers every field of VolumeSpec.
var VolumeSpecSupport = map[string]FieldSupport{
	"size":                            acts(ensureEngine),
	"frontend":                        acts(ensureEngine),
	"ublkQueueDepth":                  notYet("ublk frontends (v2 data engine)"),
	"ublkNumberOfQueue":               notYet("ublk frontends (v2 data engine)"),
	"nvmeTcpNrIoQueues":               notYet("NVMe/TCP frontends (v2 data engine)"),
	"fromBackup":                      acts("controller/volume_restore.go:reconcileRestore"),
	"restoreVolumeRecurringJob":       notYet("restoring recurring jobs from a backup", `"ignored"`, `"disabled"`),
	"dataSource":                      acts("controller/volume_clone.go:reconcileClone"),
	"cloneMode":                       notYet("linked clones (v2 data engine)", `"full-copy"`),
	"dataLocality":                    acts("controller/volume_locality.go:localityNode"),
	"staleReplicaTimeout":             acts("controller/volume_replicas.go:reconcileCleanup"),
	"nodeID":                          acts("controller/volume_attach.go:reconcileState"),
	"engineNodeID":                    notYet("an engine on another node than the frontend (v2 data engine)"),
	"migrationNodeID":                 notYet("live migration"),
	"image":                           acts(ensureEngine),
	"backingImage":                    notYet("backing images"),
	"Standby":                         acts("controller/volume_restore.go:followRestore"),
	"diskSelector":                    acts(schedVolume),
	"nodeSelector":                    acts(schedVolume),
	"topologyRequirement":             acts(schedVolume),
	"disableFrontend":                 acts(ensureEngine),
	"revisionCounterDisabled":         acts(ensureEngine),
	"unmapMarkSnapChainRemoved":       notYet("unmap marking the snapshot chain removed", `"ignored"`, `"disabled"`),
	"replicaSoftAntiAffinity":         acts(volSettings),
	"replicaZoneSoftAntiAffinity":     acts(volSettings),
	"replicaDiskSoftAntiAffinity":     acts(volSettings),
	"lastAttachedBy":                  acts("controller/volume_attachment_controller.go:syncVolumeAttachment"),
	"accessMode":                      notYet("ReadWriteMany (rwx) volumes", `"rwo"`, `"rwop"`),
	"migratable":                      notYet("migratable volumes"),
	"encrypted":                       notYet("encrypted volumes"),
	"numberOfReplicas":                acts(replenish),
	"replicaAutoBalance":              acts(volSettings),
	"snapshotDataIntegrity":           notYet("snapshot checksums", `"ignored"`, `"disabled"`),
	"backupCompressionMethod":         acts("controller/backup_controller.go:backupOptions"),
	"backupBlockSize":                 acts("controller/backup_controller.go:backupOptions"),
	"dataEngine":                      acts(schedVolume),
	"snapshotMaxCount":                acts(ensureEngine),
	"snapshotMaxSize":                 acts(ensureEngine),
	"freezeFilesystemForSnapshot":     notYet("freezing the filesystem for snapshots", `"ignored"`, `"disabled"`),
	"backupTargetName":                acts("controller/backup_volume_controller.go:syncBackupVolume"),
	"offlineRebuilding":               notYet("offline replica rebuilding", `"ignored"`, `"disabled"`),
	"replicaRebuildingBandwidthLimit": acts("controller/engine_rebuild.go:rebuildBandwidthLimit"),
	"rebuildConcurrentSyncLimit":      acts("controller/engine_rebuild.go:replicaAddRequest"),
	"snapshotHashingRequestedAt":      notYet("on-demand snapshot hashing"),
	"dataLayout":                      notYet("data layouts other than replicated", `{"type":"replicated"}`),
}

// NodeSpecSupport covers every field of NodeSpec.
var NodeSpecSupport = map[string]FieldSupport{
	"name":                      acts("controller/node_controller.go:createOwnNode"),
	"disks":                     acts("controller/node_controller.go:reconcileDisks"),
	"allowScheduling":           acts(schedNodes),
	"evictionRequested":         acts(evictionFor),
	"tags":                      acts(schedNodes),
	"instanceManagerCPURequest": acts("controller/instance_manager_controller.go:podCPURequest"),
}

// DiskSpecSupport covers every field of DiskSpec (node spec.disks[*]).
var DiskSpecSupport = map[string]FieldSupport{
	"diskType":          notYet("block disks (v2 data engine)", `"filesystem"`),
	"path":              acts(diskStatuses),
	"diskDriver":        notYet("disk drivers (v2 data engine)"),
	"allowScheduling":   acts(schedNodes),
	"evictionRequested": acts(evictionFor),
	"storageReserved":   acts(schedNodes),
	"tags":              acts(schedNodes),
}

// InstanceSpecSupport covers the fields engines and replicas share.
var InstanceSpecSupport = map[string]FieldSupport{
	"volumeName":       acts(replicaProcess),
	"volumeSize":       acts(engineProcess),
	"nodeID":           acts("controller/instance_handler.go:createInstance"),
	"image":            acts(instanceAction),
	"desireState":      acts(instanceAction),
	"logRequested":     notYet("instance log collection"),
	"salvageRequested": notYet("salvage requests on an instance"),
	"dataEngine":       acts("controller/instance_handler.go:instanceManagerFor"),
}

// EngineSpecSupport covers EngineSpec's own fields.
var EngineSpecSupport = map[string]FieldSupport{
	"frontend":                         acts("controller/engine_controller.go:engineFrontend"),
	"ublkQueueDepth":                   notYet("ublk frontends (v2 data engine)"),
	"ublkNumberOfQueue":                notYet("ublk frontends (v2 data engine)"),
	"replicaAddressMap":                acts("controller/engine_upgrade.go:engineReplicaMap"),
	"upgradedReplicaAddressMap":        acts("controller/engine_upgrade.go:createNewEngine"),
	"backupVolume":                     acts("controller/engine_restore.go:restoreSource"),
	"requestedBackupRestore":           acts("controller/engine_restore.go:reconcileRestore"),
	"requestedDataSource":              acts("controller/engine_clone.go:reconcileClone"),
	"disableFrontend":                  acts("controller/engine_controller.go:engineFrontend"),
	"revisionCounterDisabled":          acts(engineProcess),
	"unmapMarkSnapChainRemovedEnabled": notYet("unmap marking the snapshot chain removed"),
	"active":                           acts(ensureEngine),
	"snapshotMaxCount":                 acts(engineProcess),
	"snapshotMaxSize":                  acts(engineProcess),
	"rebuildConcurrentSyncLimit":       acts("controller/engine_rebuild.go:replicaAddRequest"),
}

// ReplicaSpecSupport covers ReplicaSpec's own fields.
var ReplicaSpecSupport = map[string]FieldSupport{
	"engineName":                       acts(newReplica),
	"migrationEngineName":              notYet("live migration"),
	"healthyAt":                        acts("controller/volume_replicas.go:reconcileReplicaHealth"),
	"lastHealthyAt":                    acts("controller/volume_replicas.go:reconcileReplicaHealth"),
	"failedAt":                         acts("controller/volume_replicas.go:reconcileCleanup"),
	"lastFailedAt":                     acts("controller/volume_replicas.go:markFailed"),
	"diskID":                           acts("controller/volume_replicas.go:scheduled"),
	"diskPath":                         acts(replicaProcess),
	"dataDirectoryName":                acts(replicaProcess),
	"backingImage":                     notYet("backing images"),
	"active":                           acts(schedReplicaFn),
	"hardNodeAffinity":                 acts(schedReplicaFn),
	"revisionCounterDisabled":          acts(replicaProcess),
	"unmapMarkDiskChainRemovedEnabled": notYet("unmap marking the disk chain removed"),
	"rebuildRetryCount":                acts(replenish),
	"evictionRequested":                acts("controller/volume_evict.go:reconcileEviction"),
	"snapshotMaxCount":                 notYet("per-replica snapshot limits (the engine enforces the volume's)"),
	"snapshotMaxSize":                  notYet("per-replica snapshot limits (the engine enforces the volume's)"),
	"linkedCloneSrcReplicaName":        notYet("linked clones (v2 data engine)"),
}

// zeroJSON are the encodings of a field's zero value.
var zeroJSON = []string{``, `null`, `""`, `false`, `0`, `"0"`, `[]`, `{}`}

// jsonFields encodes obj (a spec struct) as its top-level JSON fields.
func jsonFields(obj any) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	return out, json.Unmarshal(b, &out)
}

// refuseNotSupported checks cur (a spec struct) against list: a field that
// is not supported yet may only hold its zero value, an Allowed value, or
// the value it held in old (nil on create). prefix names the object part in
// the refusal ("spec." or "spec.disks[ssd].").
func refuseNotSupported(list map[string]FieldSupport, prefix string, old, cur any) error {
	now, err := jsonFields(cur)
	if err != nil {
		return err
	}
	was := map[string]json.RawMessage{}
	if old != nil {
		if was, err = jsonFields(old); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		fs := list[name]
		v := string(now[name])
		if !fs.NotSupported || slices.Contains(zeroJSON, v) || slices.Contains(fs.Allowed, v) {
			continue
		}
		if prev, ok := was[name]; ok && bytes.Equal(prev, now[name]) {
			continue
		}
		accepted := "its zero value"
		if len(fs.Allowed) > 0 {
			accepted += " or " + strings.Join(fs.Allowed, ", ")
		}
		return Invalid(prefix+name, "%s: %s are not supported yet (accepted: %s)", v, fs.What, accepted)
	}
	return nil
}

// refuseNotSupportedDisks applies DiskSpecSupport to every disk, a disk
// of the same name in old being its previous value.
func refuseNotSupportedDisks[D any](old, cur map[string]D) error {
	names := make([]string, 0, len(cur))
	for n := range cur {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var prev any
		if d, ok := old[n]; ok {
			prev = d
		}
		if err := refuseNotSupported(DiskSpecSupport, fmt.Sprintf("spec.disks[%s].", n), prev, cur[n]); err != nil {
			return err
		}
	}
	return nil
}

package enginerpc_test

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// longhornMessages is Longhorn's ptypes schema as longhorn-engine-wire.md
// §2 lists it (longhorn/types, registered descriptors of longhorn-engine
// 5939910c), written out here independently of the .proto files: "number
// name type" per field; types are scalars, a message or enum name,
// "repeated T" or "map<K,V>".
var longhornMessages = map[string]string{
	"SyncFileInfo": "1 from_file_name string, 2 to_file_name string, 3 actual_size int64",
	// ControllerService
	"Volume": "1 name string, 2 size int64, 3 replicaCount int32, 4 endpoint string, 5 frontend string, " +
		"6 frontendState string, 7 isExpanding bool, 8 last_expansion_error string, 9 last_expansion_failed_at string, " +
		"10 unmap_mark_snap_chain_removed bool, 11 snapshot_max_count int32, 12 snapshot_max_size int64",
	"ReplicaAddress":                              "1 address string, 2 instanceName string",
	"ControllerReplica":                           "1 address ReplicaAddress, 2 mode ReplicaMode",
	"VolumeStartRequest":                          "1 replicaAddresses repeated string, 2 size int64, 3 currentSize int64",
	"VolumeSnapshotRequest":                       "1 name string, 2 labels map<string,string>, 3 freezeFilesystem bool",
	"VolumeSnapshotReply":                         "1 name string",
	"VolumeRevertRequest":                         "1 name string",
	"VolumeExpandRequest":                         "1 size int64",
	"VolumeFrontendStartRequest":                  "1 frontend string",
	"VolumeUnmapMarkSnapChainRemovedSetRequest":   "1 enabled bool",
	"VolumeSnapshotMaxCountSetRequest":            "1 count int32",
	"VolumeSnapshotMaxSizeSetRequest":             "1 size int64",
	"VolumeIORequest":                             "1 type string, 2 data string, 3 offset int64, 4 length int64",
	"VolumeIOResponse":                            "1 data bytes, 2 size int64",
	"ReplicaListReply":                            "1 replicas repeated ControllerReplica",
	"ControllerReplicaCreateRequest":              "1 address string, 2 snapshot_required bool, 3 mode ReplicaMode",
	"ReplicaPrepareRebuildReply":                  "1 replica ControllerReplica, 2 sync_file_info_list repeated SyncFileInfo",
	"ReplicaRebuildConcurrentSyncLimitSetRequest": "1 limit int32",
	"ReplicaRebuildConcurrentSyncLimitGetReply":   "1 limit int32",
	"JournalListRequest":                          "1 limit int64",
	"VersionOutput": "1 version string, 2 gitCommit string, 3 buildDate string, 4 cliAPIVersion int64, " +
		"5 cliAPIMinVersion int64, 6 controllerAPIVersion int64, 7 controllerAPIMinVersion int64, " +
		"8 dataFormatVersion int64, 9 dataFormatMinVersion int64",
	"VersionDetailGetReply": "1 version VersionOutput",
	"Metrics": "1 readThroughput uint64, 2 writeThroughput uint64, 3 readLatency uint64, 4 writeLatency uint64, " +
		"5 readIOPS uint64, 6 writeIOPS uint64",
	"MetricsGetReply":             "1 metrics Metrics",
	"VolumePrepareRestoreRequest": "1 lastRestored string",
	"VolumeFinishRestoreRequest":  "1 currentRestored string",
	// ReplicaService
	"ReplicaCreateRequest":                "1 size string",
	"ReplicaOpenRequest":                  "1 is_upgrade bool, 2 expected_backend_size int64",
	"ReplicaRevertRequest":                "1 name string, 2 created string",
	"ReplicaSnapshotRequest":              "1 name string, 2 user_created bool, 3 created string, 4 labels map<string,string>",
	"ReplicaExpandRequest":                "1 size int64",
	"DiskRemoveRequest":                   "1 name string, 2 force bool",
	"DiskReplaceRequest":                  "1 target string, 2 source string",
	"DiskPrepareRemoveRequest":            "1 name string",
	"DiskPrepareRemoveResponse":           "1 operations repeated PrepareRemoveAction",
	"DiskMarkAsRemovedRequest":            "1 name string",
	"RebuildingSetRequest":                "1 rebuilding bool",
	"RevisionCounterSetRequest":           "1 counter int64",
	"UnmapMarkDiskChainRemovedSetRequest": "1 enabled bool",
	"SnapshotMaxCountSetRequest":          "1 count int32",
	"SnapshotMaxSizeSetRequest":           "1 size int64",
	"PrepareRemoveAction":                 "1 action string, 2 source string, 3 target string",
	"DiskInfo": "1 name string, 2 parent string, 3 children map<string,bool>, 4 removed bool, 5 user_created bool, " +
		"6 created string, 7 size string, 8 labels map<string,string>",
	"Replica": "1 dirty bool, 2 rebuilding bool, 3 head string, 4 parent string, 5 size string, 6 sector_size int64, " +
		"7 backing_file string, 8 state string, 9 chain repeated string, 10 disks map<string,DiskInfo>, " +
		"11 remain_snapshots int32, 12 revision_counter int64, 13 last_modify_time int64, 14 head_file_size int64, " +
		"15 revision_counter_disabled bool, 16 unmap_mark_disk_chain_removed bool, 17 snapshot_count_usage int32, " +
		"18 snapshot_size_usage int64, 19 snapshot_count_total int32",
	// SyncAgentService
	"FileRemoveRequest":      "1 file_name string",
	"FileRenameRequest":      "1 old_file_name string, 2 new_file_name string",
	"ReceiverLaunchRequest":  "1 to_file_name string",
	"ReceiverLaunchResponse": "1 port int32",
	"FileSendRequest":        "1 from_file_name string, 2 host string, 3 port int32, 4 fast_sync bool, 5 file_sync_http_client_timeout int32",
	"FilesSyncRequest": "1 from_address string, 2 to_host string, 3 sync_file_info_list repeated SyncFileInfo, " +
		"4 fast_sync bool, 5 file_sync_http_client_timeout int32, 6 grpc_timeout_seconds int64, " +
		"7 local_sync FileLocalSync, 8 from_address_map map<string,bool>",
	"FileLocalSync": "1 source_path string, 2 target_path string",
	"SnapshotCloneRequest": "1 from_address string, 2 to_host string, 3 snapshot_file_name string, " +
		"4 export_backing_image_if_exist bool, 5 file_sync_http_client_timeout int32, 6 from_volume_name string",
	"VolumeExportRequest": "1 snapshot_file_name string, 2 host string, 3 port int32, 4 export_backing_image_if_exist bool, " +
		"5 file_sync_http_client_timeout int32",
	"BackupCreateRequest": "1 snapshot_file_name string, 2 backup_target string, 3 volume_name string, 4 labels repeated string, " +
		"5 credential map<string,string>, 6 backing_image_name string, 7 backing_image_checksum string, 8 backup_name string, " +
		"9 compression_method string, 10 concurrent_limit int32, 11 storage_class_name string, 12 parameters map<string,string>",
	"BackupCreateResponse": "1 backup string, 2 is_incremental bool",
	"BackupRemoveRequest":  "1 backup string",
	"BackupStatusRequest":  "1 backup string",
	"BackupStatusResponse": "1 progress int32, 2 backup_url string, 3 error string, 4 snapshot_name string, 5 state string",
	"BackupRestoreRequest": "1 backup string, 2 snapshot_disk_name string, 3 credential map<string,string>, 4 concurrent_limit int32",
	"BackupRestoreIncrementallyRequest": "1 backup string, 2 delta_file_name string, 3 last_restored_backup_name string, " +
		"4 snapshot_disk_name string, 5 credential map<string,string>, 6 concurrent_limit int32",
	"RestoreStatusResponse": "1 is_restoring bool, 2 last_restored string, 3 progress int32, 4 error string, " +
		"5 dest_file_name string, 6 state string, 7 backup_url string, 8 current_restoring_backup string",
	"SnapshotPurgeStatusResponse": "1 is_purging bool, 2 error string, 3 progress int32, 4 state string",
	"ReplicaRebuildStatusResponse": "1 is_rebuilding bool, 2 error string, 3 progress int32, 4 state string, " +
		"5 from_replica_address string, 6 from_replica_address_list repeated string",
	"SnapshotCloneStatusResponse": "1 is_cloning bool, 2 error string, 3 progress int32, 4 state string, " +
		"5 from_replica_address string, 6 snapshot_name string",
	"SnapshotHashRequest":           "1 snapshot_name string, 2 rehash bool",
	"SnapshotHashStatusRequest":     "1 snapshot_name string",
	"SnapshotHashStatusResponse":    "1 state string, 2 checksum string, 3 error string, 4 silently_corrupted bool",
	"SnapshotHashCancelRequest":     "1 snapshot_name string",
	"SnapshotHashLockStateResponse": "1 is_locked bool",
}

// The *Response messages of ReplicaService that carry only the replica.
var replicaResponses = []string{"ReplicaCreateResponse", "ReplicaGetResponse", "ReplicaOpenResponse", "ReplicaCloseResponse",
	"ReplicaReloadResponse", "ReplicaRevertResponse", "ReplicaSnapshotResponse", "ReplicaExpandResponse",
	"DiskRemoveResponse", "DiskReplaceResponse", "DiskMarkAsRemovedResponse", "RebuildingSetResponse",
	"RevisionCounterSetResponse", "UnmapMarkDiskChainRemovedSetResponse", "SnapshotMaxCountSetResponse",
	"SnapshotMaxSizeSetResponse"}

// longhornServices: method -> "Request Response" (Empty = google.protobuf.Empty).
var longhornServices = map[string]map[string]string{
	"ControllerService": {
		"VolumeGet": "Empty Volume", "VolumeStart": "VolumeStartRequest Volume", "VolumeShutdown": "Empty Volume",
		"VolumeSnapshot": "VolumeSnapshotRequest VolumeSnapshotReply", "VolumeRevert": "VolumeRevertRequest Volume",
		"VolumeExpand": "VolumeExpandRequest Volume", "VolumeFrontendStart": "VolumeFrontendStartRequest Volume",
		"VolumeFrontendShutdown":             "Empty Volume",
		"VolumeUnmapMarkSnapChainRemovedSet": "VolumeUnmapMarkSnapChainRemovedSetRequest Volume",
		"VolumeSnapshotMaxCountSet":          "VolumeSnapshotMaxCountSetRequest Volume",
		"VolumeSnapshotMaxSizeSet":           "VolumeSnapshotMaxSizeSetRequest Volume",
		"VolumeIO":                           "VolumeIORequest VolumeIOResponse", "ReplicaList": "Empty ReplicaListReply",
		"ReplicaGet": "ReplicaAddress ControllerReplica", "ControllerReplicaCreate": "ControllerReplicaCreateRequest ControllerReplica",
		"ReplicaDelete": "ReplicaAddress Empty", "ReplicaUpdate": "ControllerReplica ControllerReplica",
		"ReplicaPrepareRebuild": "ReplicaAddress ReplicaPrepareRebuildReply", "ReplicaVerifyRebuild": "ReplicaAddress ControllerReplica",
		"ReplicaRebuildConcurrentSyncLimitSet": "ReplicaRebuildConcurrentSyncLimitSetRequest Empty",
		"ReplicaRebuildConcurrentSyncLimitGet": "Empty ReplicaRebuildConcurrentSyncLimitGetReply",
		"JournalList":                          "JournalListRequest Empty", "VersionDetailGet": "Empty VersionDetailGetReply",
		"MetricsGet": "Empty MetricsGetReply",
	},
	"ReplicaService": {
		"ReplicaCreate": "ReplicaCreateRequest ReplicaCreateResponse", "ReplicaDelete": "Empty Empty",
		"ReplicaGet": "Empty ReplicaGetResponse", "ReplicaOpen": "ReplicaOpenRequest ReplicaOpenResponse",
		"ReplicaClose": "Empty ReplicaCloseResponse", "ReplicaReload": "Empty ReplicaReloadResponse",
		"ReplicaRevert": "ReplicaRevertRequest ReplicaRevertResponse", "ReplicaSnapshot": "ReplicaSnapshotRequest ReplicaSnapshotResponse",
		"ReplicaExpand": "ReplicaExpandRequest ReplicaExpandResponse", "DiskRemove": "DiskRemoveRequest DiskRemoveResponse",
		"DiskReplace": "DiskReplaceRequest DiskReplaceResponse", "DiskPrepareRemove": "DiskPrepareRemoveRequest DiskPrepareRemoveResponse",
		"DiskMarkAsRemoved": "DiskMarkAsRemovedRequest DiskMarkAsRemovedResponse", "RebuildingSet": "RebuildingSetRequest RebuildingSetResponse",
		"RevisionCounterSet":           "RevisionCounterSetRequest RevisionCounterSetResponse",
		"UnmapMarkDiskChainRemovedSet": "UnmapMarkDiskChainRemovedSetRequest UnmapMarkDiskChainRemovedSetResponse",
		"SnapshotMaxCountSet":          "SnapshotMaxCountSetRequest SnapshotMaxCountSetResponse",
		"SnapshotMaxSizeSet":           "SnapshotMaxSizeSetRequest SnapshotMaxSizeSetResponse",
	},
	"SyncAgentService": {
		"FileRemove": "FileRemoveRequest Empty", "FileRename": "FileRenameRequest Empty", "FileSend": "FileSendRequest Empty",
		"FilesSync": "FilesSyncRequest Empty", "SnapshotClone": "SnapshotCloneRequest Empty", "VolumeExport": "VolumeExportRequest Empty",
		"ReceiverLaunch": "ReceiverLaunchRequest ReceiverLaunchResponse", "BackupCreate": "BackupCreateRequest BackupCreateResponse",
		"BackupRemove": "BackupRemoveRequest Empty", "BackupRestore": "BackupRestoreRequest Empty",
		"BackupStatus": "BackupStatusRequest BackupStatusResponse", "Reset": "Empty Empty", "RestoreStatus": "Empty RestoreStatusResponse",
		"SnapshotPurge": "Empty Empty", "SnapshotPurgeStatus": "Empty SnapshotPurgeStatusResponse",
		"ReplicaRebuildStatus": "Empty ReplicaRebuildStatusResponse", "SnapshotCloneStatus": "Empty SnapshotCloneStatusResponse",
		"SnapshotHash": "SnapshotHashRequest Empty", "SnapshotHashStatus": "SnapshotHashStatusRequest SnapshotHashStatusResponse",
		"SnapshotHashCancel": "SnapshotHashCancelRequest Empty", "SnapshotHashLockState": "Empty SnapshotHashLockStateResponse",
	},
}

// extensionFloor: fields numbered from here on are this implementation's.
const extensionFloor = 1000

func message(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName("ptypes." + name))
	if err != nil {
		t.Fatalf("ptypes.%s is not registered: %v", name, err)
	}
	return d.(protoreflect.MessageDescriptor)
}

// typeOf renders a field's type in the table's notation.
func typeOf(f protoreflect.FieldDescriptor) string {
	if f.IsMap() {
		return "map<" + typeOf(f.MapKey()) + "," + typeOf(f.MapValue()) + ">"
	}
	var s string
	switch f.Kind() {
	case protoreflect.MessageKind:
		s = string(f.Message().Name())
	case protoreflect.EnumKind:
		s = string(f.Enum().Name())
	default:
		s = f.Kind().String()
	}
	if f.IsList() {
		s = "repeated " + s
	}
	return s
}

// TestLonghornMessageSchema: every message has Longhorn's fields, numbers,
// names and types, and nothing else below the extension floor.
func TestLonghornMessageSchema(t *testing.T) {
	for _, name := range replicaResponses {
		longhornMessages[name] = "1 replica Replica"
	}
	for name, spec := range longhornMessages {
		md := message(t, name)
		want := map[protoreflect.FieldNumber]string{}
		for _, f := range strings.Split(spec, ", ") {
			parts := strings.SplitN(f, " ", 3)
			n, _ := strconv.Atoi(parts[0])
			want[protoreflect.FieldNumber(n)] = parts[1] + " " + parts[2]
		}
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			f := fields.Get(i)
			got := string(f.Name()) + " " + typeOf(f)
			if f.Number() >= extensionFloor {
				continue
			}
			if want[f.Number()] != got {
				t.Errorf("%s field %d: ours %q, Longhorn's %q", name, f.Number(), got, want[f.Number()])
			}
			delete(want, f.Number())
		}
		for n, w := range want {
			t.Errorf("%s lacks Longhorn's field %d %s", name, n, w)
		}
	}
	if e := message(t, "ControllerReplica").Fields().ByName("mode").Enum(); e.Values().ByNumber(0).Name() != "WO" ||
		e.Values().ByNumber(1).Name() != "RW" || e.Values().ByNumber(2).Name() != "ERR" {
		t.Errorf("ReplicaMode values differ from Longhorn's WO=0 RW=1 ERR=2")
	}
}

// TestLonghornServices: the three services have exactly Longhorn's methods
// with Longhorn's request and response types.
func TestLonghornServices(t *testing.T) {
	for svc, methods := range longhornServices {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName("ptypes." + svc))
		if err != nil {
			t.Fatalf("ptypes.%s: %v", svc, err)
		}
		sd := d.(protoreflect.ServiceDescriptor)
		if sd.Methods().Len() != len(methods) {
			t.Errorf("%s has %d methods, Longhorn's %d", svc, sd.Methods().Len(), len(methods))
		}
		for m, io := range methods {
			md := sd.Methods().ByName(protoreflect.Name(m))
			if md == nil {
				t.Errorf("%s lacks %s", svc, m)
				continue
			}
			got := shortName(md.Input().FullName()) + " " + shortName(md.Output().FullName())
			if got != io {
				t.Errorf("%s.%s: %s, Longhorn's %s", svc, m, got, io)
			}
		}
	}
}

func shortName(n protoreflect.FullName) string {
	if n == "google.protobuf.Empty" {
		return "Empty"
	}
	return strings.TrimPrefix(string(n), "ptypes.")
}

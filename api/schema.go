package api

import (
	"context"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Schema is a gdapi schema (go-rancher client.Schema): the fields, methods
// and actions of a type. Schema-driven clients (Longhorn's Python test
// client) bind list/create/update/delete and actions from these and follow
// links.collection.
type Schema struct {
	Resource
	PluralName        string                 `json:"pluralName"`
	ResourceMethods   []string               `json:"resourceMethods"`
	CollectionMethods []string               `json:"collectionMethods"`
	ResourceFields    map[string]SchemaField `json:"resourceFields"`
	ResourceActions   map[string]ActionDef   `json:"resourceActions"`
	CollectionActions map[string]ActionDef   `json:"collectionActions"`
	CollectionFields  map[string]SchemaField `json:"collectionFields"`
	CollectionFilters map[string]any         `json:"collectionFilters"`
}

// SchemaField describes one field (go-rancher client.Field): its gdapi type
// ("string", "int", "boolean", "float", "date", "json", "array[T]",
// "map[T]" or another schema's id) and what a client may do with it.
type SchemaField struct {
	Type        string   `json:"type,omitempty"`
	Default     any      `json:"default,omitempty"`
	Unique      bool     `json:"unique,omitempty"`
	Nullable    bool     `json:"nullable,omitempty"`
	Create      bool     `json:"create,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Update      bool     `json:"update,omitempty"`
	Min         *int64   `json:"min,omitempty"`
	Max         *int64   `json:"max,omitempty"`
	Options     []string `json:"options,omitempty"`
	Description string   `json:"description,omitempty"`
}

// ActionDef names an action's input and output schemas.
type ActionDef struct {
	Input  string `json:"input,omitempty"`
	Output string `json:"output,omitempty"`
}

// schemaDef is the static description a Schema is built from: the model
// type's fields by reflection, then fields overriding some of them.
type schemaDef struct {
	id, coll          string
	model             any
	resMethods        []string
	collMethods       []string
	actions           map[string]ActionDef
	collectionActions map[string]ActionDef
	fields            map[string]SchemaField
}

var (
	get       = []string{"GET"}
	getPost   = []string{"GET", "POST"}
	getPut    = []string{"GET", "PUT"}
	getDelete = []string{"GET", "DELETE"}
	required  = SchemaField{Create: true, Required: true}
	creatable = SchemaField{Create: true}
)

// in names an action with an input that answers a volume.
func in(input string) ActionDef { return ActionDef{Input: input, Output: "volume"} }

func intPtr(n int64) *int64 { return &n }

// resourceSchemas are the types with a collection (or a resource URL).
func resourceSchemas() []schemaDef {
	return []schemaDef{
		{id: "setting", coll: "settings", model: Setting{}, resMethods: getPut, collMethods: get,
			fields: map[string]SchemaField{"name": {Required: true, Unique: true}, "value": {Required: true, Update: true},
				"definition": {Type: "settingDefinition"}}},
		volumeSchema(),
		{id: "node", coll: "nodes", model: Node{}, resMethods: []string{"GET", "PUT", "DELETE"}, collMethods: get,
			actions: map[string]ActionDef{"diskUpdate": {Input: "diskUpdateInput", Output: "node"}},
			fields: map[string]SchemaField{"allowScheduling": {Required: true, Update: true}, "evictionRequested": {Required: true, Update: true},
				"tags": {Create: true, Update: true}, "instanceManagerCPURequest": {Update: true},
				"disks": {Type: "map[diskInfo]", Nullable: true}, "conditions": {Type: "map[nodeCondition]"}}},
		{id: "engineImage", coll: "engineimages", model: EngineImage{}, resMethods: getDelete, collMethods: getPost,
			fields: map[string]SchemaField{"image": {Create: true, Required: true, Unique: true}}},
		{id: "instanceManager", coll: "instancemanagers", model: InstanceManager{}, resMethods: get, collMethods: get,
			fields: map[string]SchemaField{"instanceEngines": {Type: "map[instanceProcess]"}, "instanceReplicas": {Type: "map[instanceProcess]"}}},
		{id: "volumeAttachment", coll: "volumeattachments", model: VolumeAttachment{}, resMethods: get, collMethods: get,
			fields: map[string]SchemaField{"attachments": {Type: "map[attachment]"}}},
		{id: "event", coll: "events", model: Event{}, collMethods: get, fields: map[string]SchemaField{"event": {Type: "json"}}},
		{id: "tag", model: Tag{}},
		{id: "recurringJob", coll: "recurringjobs", model: RecurringJob{}, resMethods: []string{"GET", "PUT", "DELETE"}, collMethods: getPost,
			fields: map[string]SchemaField{"name": {Create: true, Required: true, Unique: true}, "task": required, "cron": required,
				"retain": required, "concurrency": required, "groups": {Type: "array[string]", Nullable: true, Create: true},
				"labels": {Type: "map[string]", Nullable: true, Create: true}}},
		{id: "orphan", coll: "orphans", model: Orphan{}, resMethods: getDelete, collMethods: get},
		{id: "backupTarget", coll: "backuptargets", model: BackupTarget{}, resMethods: getDelete, collMethods: []string{"GET", "POST", "PUT"},
			actions: map[string]ActionDef{"backupTargetSync": {Input: "syncBackupResource", Output: "backupTarget"},
				"backupTargetUpdate": {Input: "backupTarget", Output: "backupTarget"}},
			fields: map[string]SchemaField{"name": {Create: true, Required: true, Unique: true}, "backupTargetURL": creatable,
				"credentialSecret": creatable, "pollInterval": creatable}},
		{id: "backupVolume", coll: "backupvolumes", model: BackupVolume{}, resMethods: getDelete, collMethods: getPut,
			actions: map[string]ActionDef{"backupList": {Output: "backupListOutput"}, "backupListByVolume": {Input: "volume", Output: "backupListOutput"},
				"backupGet": {Input: "backupInput", Output: "backup"}, "backupDelete": {Input: "backupInput", Output: "backupVolume"},
				"backupVolumeSync": {Input: "syncBackupResource", Output: "backupVolume"}}},
		{id: "backup", coll: "backups", model: Backup{}, collMethods: get},
		{id: "backingImage", coll: "backingimages", model: BackingImage{}, resMethods: getDelete, collMethods: getPost,
			actions: map[string]ActionDef{"backingImageCleanup": {Input: "backingImageCleanupInput", Output: "backingImage"}, "upload": {},
				"backupBackingImageCreate": {Output: "backingImage"}, "updateMinNumberOfCopies": {Output: "backingImage"}},
			fields: map[string]SchemaField{"name": {Create: true, Required: true, Unique: true}, "sourceType": required,
				"parameters": {Type: "map[string]", Create: true, Required: true}, "expectedChecksum": creatable,
				"diskFileStatusMap": {Type: "map[backingImageDiskFileStatus]"}}},
		{id: "backupBackingImage", coll: "backupbackingimages", model: BackupBackingImage{}, resMethods: getDelete, collMethods: get,
			actions: map[string]ActionDef{"backupBackingImageRestore": {Output: "backupBackingImage"}}},
		{id: "systemBackup", coll: "systembackups", model: SystemBackup{}, resMethods: getDelete, collMethods: getPost,
			fields: map[string]SchemaField{"name": {Create: true, Required: true, Unique: true}, "volumeBackupPolicy": creatable}},
		{id: "systemRestore", coll: "systemrestores", model: SystemRestore{}, resMethods: getDelete, collMethods: getPost,
			fields: map[string]SchemaField{"name": {Create: true, Required: true, Unique: true}, "systemBackup": {Create: true, Required: true}}},
		{id: "supportBundle", coll: "supportbundles", model: SupportBundle{}, resMethods: getDelete, collMethods: getPost},
		{id: "shareManager", coll: "sharemanagers", model: ShareManager{}, resMethods: get, collMethods: get},
	}
}

// volumeSchema describes the volume: create fields with Longhorn's defaults
// and every volume action with its input.
func volumeSchema() schemaDef {
	actions := map[string]ActionDef{}
	for name, a := range volumeActionTable {
		actions[name] = a.def
	}
	return schemaDef{id: "volume", coll: "volumes", model: Volume{}, resMethods: getDelete, collMethods: getPost, actions: actions,
		fields: map[string]SchemaField{
			"name": {Create: true, Required: true, Unique: true}, "size": {Create: true, Required: true, Default: "100G"},
			"numberOfReplicas": {Create: true, Required: true, Default: 3, Min: intPtr(1), Max: intPtr(20)},
			"frontend":         {Create: true, Options: []string{"blockdev", "iscsi", "nbd", ""}}, "fromBackup": creatable,
			"dataSource": creatable, "dataLocality": {Create: true, Default: "disabled", Options: []string{"disabled", "best-effort", "strict-local"}},
			"accessMode":          {Create: true, Default: "rwo", Options: []string{"rwo", "rwop", "rwx"}},
			"staleReplicaTimeout": {Create: true, Default: 2880}, "backingImage": creatable, "standby": creatable,
			"migratable": creatable, "encrypted": creatable, "diskSelector": creatable, "nodeSelector": creatable,
			"revisionCounterDisabled": creatable, "unmapMarkSnapChainRemoved": creatable, "snapshotDataIntegrity": creatable,
			"replicaAutoBalance": creatable, "replicaSoftAntiAffinity": creatable, "replicaZoneSoftAntiAffinity": creatable,
			"replicaDiskSoftAntiAffinity": creatable, "backupCompressionMethod": creatable, "backupBlockSize": creatable,
			"dataEngine": {Create: true, Default: "v1", Options: []string{"v1", "v2"}}, "snapshotMaxCount": creatable,
			"snapshotMaxSize": creatable, "freezeFilesystemForSnapshot": creatable, "backupTargetName": creatable,
			"recurringJobSelector": {Type: "array[volumeRecurringJob]", Create: true},
			"replicas":             {Type: "array[replica]"}, "controllers": {Type: "array[controller]", Nullable: true},
			"conditions": {Type: "map[volumeCondition]"}, "kubernetesStatus": {Type: "kubernetesStatus"},
			"cloneStatus": {Type: "cloneStatus"}, "backupStatus": {Type: "array[backupStatus]"},
			"restoreStatus": {Type: "array[restoreStatus]"}, "purgeStatus": {Type: "array[purgeStatus]"},
			"rebuildStatus": {Type: "array[rebuildStatus]"}, "volumeAttachment": {Type: "volumeAttachment"},
		}}
}

// embeddedSchemas are types that only appear inside resources or as action
// inputs and outputs.
func embeddedSchemas() []schemaDef {
	list := func(of string) map[string]SchemaField {
		return map[string]SchemaField{"data": {Type: "array[" + of + "]"}}
	}
	return []schemaDef{
		{id: "apiVersion", model: Resource{}}, {id: "schema", model: Schema{}}, {id: "error", model: Error{}},
		{id: "snapshot", model: Snapshot{}, fields: map[string]SchemaField{"children": {Type: "map[boolean]"}}},
		{id: "snapshotCR", model: SnapshotCR{}, fields: map[string]SchemaField{"children": {Type: "map[boolean]"}}},
		{id: "snapshotListOutput", model: listOutput{}, fields: list("snapshot")},
		{id: "snapshotCRListOutput", model: listOutput{}, fields: list("snapshotCR")},
		{id: "backupListOutput", model: listOutput{}, fields: list("backup")},
		{id: "replica", model: Replica{}}, {id: "controller", model: Controller{}},
		{id: "diskInfo", model: DiskInfo{}, fields: map[string]SchemaField{"conditions": {Type: "map[diskCondition]"}}},
		{id: "attachment", model: Attachment{}, fields: map[string]SchemaField{"conditions": {Type: "array[longhornCondition]"}}},
		{id: "backupStatus", model: BackupStatus{}}, {id: "restoreStatus", model: RestoreStatus{}},
		{id: "purgeStatus", model: PurgeStatus{}}, {id: "rebuildStatus", model: RebuildStatus{}},
		{id: "kubernetesStatus", model: longhorn.KubernetesStatus{}, fields: map[string]SchemaField{"workloadsStatus": {Type: "array[workloadStatus]"}}},
		{id: "workloadStatus", model: longhorn.WorkloadStatus{}}, {id: "cloneStatus", model: longhorn.VolumeCloneStatus{}},
		{id: "volumeRecurringJob", model: VolumeRecurringJob{}}, {id: "volumeRecurringJobInput", model: VolumeRecurringJobInput{}},
		{id: "settingDefinition", model: types.SettingDefinition{}},
		{id: "volumeCondition", model: longhorn.Condition{}}, {id: "nodeCondition", model: longhorn.Condition{}},
		{id: "diskCondition", model: longhorn.Condition{}}, {id: "longhornCondition", model: longhorn.Condition{}},
		{id: "instanceProcess", model: longhorn.InstanceProcess{}},
		{id: "backingImageDiskFileStatus", model: longhorn.BackingImageDiskFileStatus{}},
		{id: "backingImageCleanupInput", model: struct {
			Disks []string `json:"disks"`
		}{}},
		{id: "empty", model: Resource{}}, {id: "kubernetesEvent", model: corev1.Event{}},
		{id: "diskUpdate", model: longhorn.DiskSpec{}},
		{id: "diskUpdateInput", model: DiskUpdateInput{}, fields: map[string]SchemaField{"disks": {Type: "map[diskUpdate]"}}},
		{id: "backupInput", model: BackupInput{}}, {id: "syncBackupResource", model: SyncBackupResource{}},
	}
}

// listOutput is the shape of the snapshotList/snapshotCRList/backupList
// outputs.
type listOutput struct {
	Data []any  `json:"data"`
	Type string `json:"type"`
}

// allSchemas lists every type the API serves: resources, embedded types and
// the action inputs.
func allSchemas() []schemaDef {
	out := append(resourceSchemas(), embeddedSchemas()...)
	for _, a := range volumeActionTable {
		if a.def.Input != "" && a.input != nil {
			out = append(out, schemaDef{id: a.def.Input, model: a.input})
		}
	}
	return dedupeSchemas(out)
}

// dedupeSchemas keeps the first definition of each id (actions share inputs).
func dedupeSchemas(in []schemaDef) []schemaDef {
	seen := map[string]bool{}
	out := in[:0]
	for _, d := range in {
		if !seen[d.id] {
			seen[d.id] = true
			out = append(out, d)
		}
	}
	return out
}

func (u urls) schema(d schemaDef) Schema {
	plural := d.coll
	if plural == "" {
		plural = d.id + "s"
	}
	sc := Schema{Resource: u.newResource("schema", "schemas", d.id), PluralName: plural,
		ResourceMethods: nonNil(d.resMethods), CollectionMethods: nonNil(d.collMethods),
		ResourceFields: fieldsOf(reflect.TypeOf(d.model)), ResourceActions: nonNilMap(d.actions),
		CollectionActions: nonNilMap(d.collectionActions), CollectionFields: map[string]SchemaField{},
		CollectionFilters: map[string]any{}}
	for name, f := range d.fields {
		base := sc.ResourceFields[name]
		if f.Type == "" {
			f.Type = base.Type
		}
		sc.ResourceFields[name] = f
	}
	if d.coll != "" {
		sc.Links["collection"] = u.collection(d.coll)
	}
	return sc
}

func (s *Server) listSchemas(_ context.Context, _ *http.Request, u urls) (int, any, error) {
	defs := allSchemas()
	out := make([]Schema, 0, len(defs))
	for _, d := range defs {
		out = append(out, u.schema(d))
	}
	return http.StatusOK, u.newCollection("schema", "schemas", sortResources(out)), nil
}

func (s *Server) getSchema(_ context.Context, r *http.Request, u urls) (int, any, error) {
	id := r.PathValue("id")
	for _, d := range allSchemas() {
		if strings.EqualFold(d.id, id) {
			return http.StatusOK, u.schema(d), nil
		}
	}
	return 0, nil, newError(http.StatusNotFound, CodeNotFound, "schema %q not found", id)
}

// fieldsOf describes the JSON fields of struct type t, embedded structs
// flattened (the id, type, links and actions of Resource included, as
// gdapi's schemas have them).
func fieldsOf(t reflect.Type) map[string]SchemaField {
	out := map[string]SchemaField{}
	t = derefType(t)
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			maps.Copy(out, fieldsOf(f.Type))
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = SchemaField{Type: gdapiType(f.Type)}
	}
	return out
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// gdapiType names a Go type the way gdapi schemas do.
func gdapiType(t reflect.Type) string {
	t = derefType(t)
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Slice, reflect.Array:
		return "array[" + gdapiType(t.Elem()) + "]"
	case reflect.Map:
		return "map[" + gdapiType(t.Elem()) + "]"
	case reflect.Struct:
		if t.Name() == "Time" {
			return "date"
		}
		r := []rune(t.Name())
		if len(r) == 0 {
			return "json"
		}
		r[0] = unicode.ToLower(r[0])
		return string(r)
	}
	return "json"
}

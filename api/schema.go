package api

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"unicode"
)

// Schema is a gdapi schema: the fields, methods and actions of a resource
// type. Longhorn's python client (longhorn-tests) is driven by these.
type Schema struct {
	Resource
	PluralName        string                 `json:"pluralName"`
	ResourceMethods   []string               `json:"resourceMethods"`
	CollectionMethods []string               `json:"collectionMethods"`
	ResourceFields    map[string]SchemaField `json:"resourceFields"`
	ResourceActions   map[string]ActionDef   `json:"resourceActions"`
	CollectionActions map[string]ActionDef   `json:"collectionActions"`
}

// SchemaField describes one field: its gdapi type ("string", "int",
// "boolean", "array[string]", "map[string]", or another schema's id).
type SchemaField struct {
	Type string `json:"type"`
}

// ActionDef names an action's input and output schemas.
type ActionDef struct {
	Input  string `json:"input,omitempty"`
	Output string `json:"output,omitempty"`
}

// schemaDef is the static description a Schema is built from.
type schemaDef struct {
	id, coll             string
	model                any
	resMethods, colMeths []string
	actions              map[string]ActionDef
}

// schemas lists every resource and input type the API serves.
func schemas() []schemaDef {
	snapIn := ActionDef{Input: "snapshotInput", Output: "snapshot"}
	volActions := map[string]ActionDef{
		ActionAttach: {Input: "attachInput", Output: "volume"}, ActionDetach: {Input: "detachInput", Output: "volume"},
		ActionSalvage: {Input: "salvageInput", Output: "volume"}, ActionExpand: {Input: "expandInput", Output: "volume"},
		ActionUpdateReplicaCount: {Input: "updateReplicaCountInput", Output: "volume"},
		ActionSnapshotCreate:     snapIn, ActionSnapshotGet: snapIn, ActionSnapshotList: {Output: "snapshotListOutput"},
		ActionSnapshotDelete: {Input: "snapshotInput", Output: "volume"}, ActionSnapshotRevert: {Input: "snapshotInput", Output: "volume"},
		ActionSnapshotPurge:            {Output: "volume"},
		ActionReplicaRemove:            {Input: "replicaRemoveInput", Output: "volume"},
		ActionUpdateDataLocality:       {Input: "updateDataLocalityInput", Output: "volume"},
		ActionUpdateReplicaAutoBalance: {Input: "updateReplicaAutoBalanceInput", Output: "volume"},
	}
	get := []string{"GET"}
	return []schemaDef{
		{id: "setting", coll: "settings", model: Setting{}, resMethods: []string{"GET", "PUT"}, colMeths: get},
		{id: "volume", coll: "volumes", model: Volume{}, resMethods: []string{"GET", "DELETE"}, colMeths: []string{"GET", "POST"}, actions: volActions},
		{id: "node", coll: "nodes", model: Node{}, resMethods: []string{"GET", "PUT"}, colMeths: get,
			actions: map[string]ActionDef{"diskUpdate": {Input: "diskUpdateInput", Output: "node"}}},
		{id: "engineImage", coll: "engineimages", model: EngineImage{}, resMethods: get, colMeths: get},
		{id: "instanceManager", coll: "instancemanagers", model: InstanceManager{}, resMethods: get, colMeths: get},
		{id: "volumeAttachment", coll: "volumeattachments", model: VolumeAttachment{}, resMethods: get, colMeths: get},
		{id: "snapshot", model: Snapshot{}},
		{id: "replica", model: Replica{}},
		{id: "controller", model: Controller{}},
		{id: "diskInfo", model: DiskInfo{}},
		{id: "attachInput", model: AttachInput{}},
		{id: "detachInput", model: DetachInput{}},
		{id: "salvageInput", model: SalvageInput{}},
		{id: "expandInput", model: ExpandInput{}},
		{id: "updateReplicaCountInput", model: UpdateReplicaCountInput{}},
		{id: "snapshotInput", model: SnapshotInput{}},
		{id: "diskUpdateInput", model: DiskUpdateInput{}},
		{id: "settingInput", model: SettingInput{}},
		{id: "nodeInput", model: NodeInput{}},
		{id: "volumeInput", model: VolumeInput{}},
		{id: "replicaRemoveInput", model: ReplicaRemoveInput{}},
		{id: "updateDataLocalityInput", model: UpdateDataLocalityInput{}},
		{id: "updateReplicaAutoBalanceInput", model: UpdateReplicaAutoBalanceInput{}},
	}
}

func (u urls) schema(d schemaDef) Schema {
	sc := Schema{Resource: u.newResource("schema", "schemas", d.id), PluralName: d.coll,
		ResourceMethods: nonNil(d.resMethods), CollectionMethods: nonNil(d.colMeths),
		ResourceFields: fieldsOf(reflect.TypeOf(d.model)), ResourceActions: d.actions,
		CollectionActions: map[string]ActionDef{}}
	if sc.ResourceActions == nil {
		sc.ResourceActions = map[string]ActionDef{}
	}
	if d.coll != "" {
		sc.Links["collection"] = u.collection(d.coll)
	}
	return sc
}

func (s *Server) listSchemas(_ context.Context, _ *http.Request, u urls) (int, any, error) {
	var out []Schema
	for _, d := range schemas() {
		out = append(out, u.schema(d))
	}
	return http.StatusOK, u.newCollection("schema", "schemas", out), nil
}

func (s *Server) getSchema(_ context.Context, r *http.Request, u urls) (int, any, error) {
	id := r.PathValue("id")
	for _, d := range schemas() {
		if strings.EqualFold(d.id, id) {
			return http.StatusOK, u.schema(d), nil
		}
	}
	return 0, nil, newError(http.StatusNotFound, CodeNotFound, "schema %q not found", id)
}

// fieldsOf describes the JSON fields of struct type t, embedded structs
// flattened (the common Resource fields are left out, as gdapi does).
func fieldsOf(t reflect.Type) map[string]SchemaField {
	out := map[string]SchemaField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			if f.Type == reflect.TypeOf(Resource{}) {
				continue
			}
			for k, v := range fieldsOf(derefType(f.Type)) {
				out[k] = v
			}
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

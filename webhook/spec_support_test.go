package webhook

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// specLists pairs each spec type with its support list.
var specLists = []struct {
	name string
	typ  reflect.Type
	list map[string]FieldSupport
}{
	{"VolumeSpec", reflect.TypeOf(longhorn.VolumeSpec{}), VolumeSpecSupport},
	{"NodeSpec", reflect.TypeOf(longhorn.NodeSpec{}), NodeSpecSupport},
	{"DiskSpec", reflect.TypeOf(longhorn.DiskSpec{}), DiskSpecSupport},
	{"InstanceSpec", reflect.TypeOf(longhorn.InstanceSpec{}), InstanceSpecSupport},
	{"EngineSpec", reflect.TypeOf(longhorn.EngineSpec{}), EngineSpecSupport},
	{"ReplicaSpec", reflect.TypeOf(longhorn.ReplicaSpec{}), ReplicaSpecSupport},
}

// specFields returns the JSON name -> Go field of t's own fields (embedded
// structs are skipped: they have their own list).
func specFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

// TestEverySpecFieldHasSupportEntry: each list covers its type exactly and
// a not-supported field says what it is about.
func TestEverySpecFieldHasSupportEntry(t *testing.T) {
	for _, sl := range specLists {
		fields := specFields(sl.typ)
		for name := range fields {
			fs, ok := sl.list[name]
			switch {
			case !ok:
				t.Errorf("%s.%s has no entry in spec_support.go: name the code acting on it or mark it not supported yet", sl.name, name)
			case fs.Pending != "":
				t.Logf("%s.%s: pending, owned by %s", sl.name, name, fs.Pending)
			case !fs.NotSupported && fs.Reader == "":
				t.Errorf("%s.%s is supported but names no reader", sl.name, name)
			case fs.NotSupported && fs.What == "":
				t.Errorf("%s.%s is not supported but its refusal names no feature", sl.name, name)
			}
		}
		for name := range sl.list {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s has no field %q but spec_support.go lists it", sl.name, name)
			}
		}
	}
}

// mentionsField reports whether fn uses Go field name as a selector
// (x.Field) or a composite literal key (Field: ...).
func mentionsField(fn *ast.FuncDecl, field string) bool {
	found := false
	ast.Inspect(fn, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			found = found || x.Sel.Name == field
		case *ast.KeyValueExpr:
			if id, ok := x.Key.(*ast.Ident); ok {
				found = found || id.Name == field
			}
		}
		return !found
	})
	return found
}

// TestSpecFieldReadersActOnTheirField is the accepted-but-unread check for
// spec fields: each Reader names a function that exists and uses the field.
func TestSpecFieldReadersActOnTheirField(t *testing.T) {
	files := map[string]*ast.File{}
	for _, sl := range specLists {
		fields := specFields(sl.typ)
		for name, fs := range sl.list {
			if fs.Reader == "" {
				continue
			}
			file, fn, ok := strings.Cut(fs.Reader, ":")
			if !ok {
				t.Errorf("%s.%s: reader %q is not dir/file.go:Func", sl.name, name, fs.Reader)
				continue
			}
			if files[file] == nil {
				f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", file), nil, 0)
				if err != nil {
					t.Fatalf("%s.%s: %v", sl.name, name, err)
				}
				files[file] = f
			}
			var decl *ast.FuncDecl
			for _, d := range files[file].Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn && (decl == nil || mentionsField(fd, fields[name].Name)) {
					decl = fd
				}
			}
			switch {
			case decl == nil:
				t.Errorf("%s.%s: reader %s: no function %s in %s", sl.name, name, fs.Reader, fn, file)
			case !mentionsField(decl, fields[name].Name):
				t.Errorf("%s.%s: reader %s does not use .%s", sl.name, name, fs.Reader, fields[name].Name)
			}
		}
	}
}

// nonZero sets v (settable) to a value whose JSON is not a zero value.
func nonZero(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("not-supported-value")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		nonZero(e)
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), e))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		nonZero(k)
		nonZero(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				nonZero(v.Field(i))
				return
			}
		}
	}
}

// TestNotSupportedSpecFieldsAreRefused: for every field not supported yet,
// a non-zero value is refused naming the field and saying "not supported
// yet", the zero value and the Allowed values pass, and a value the object
// already held passes (stored before the refusal existed).
func TestNotSupportedSpecFieldsAreRefused(t *testing.T) {
	for _, sl := range specLists {
		fields := specFields(sl.typ)
		for name, fs := range sl.list {
			if !fs.NotSupported {
				continue
			}
			zero := reflect.New(sl.typ)
			if err := refuseNotSupported(sl.list, "spec.", nil, zero.Interface()); err != nil {
				t.Fatalf("%s zero value refused: %v", sl.name, err)
			}
			cur := reflect.New(sl.typ)
			nonZero(cur.Elem().FieldByIndex(fields[name].Index))
			err := refuseNotSupported(sl.list, "spec.", nil, cur.Interface())
			if err == nil || !strings.Contains(err.Error(), "spec."+name+":") || !strings.Contains(err.Error(), "not supported yet") {
				t.Errorf("%s.%s = non-zero: error %v, want a refusal naming spec.%s and saying not supported yet", sl.name, name, err, name)
			}
			if err := refuseNotSupported(sl.list, "spec.", cur.Interface(), cur.Interface()); err != nil {
				t.Errorf("%s.%s: an unchanged stored value is refused: %v", sl.name, name, err)
			}
		}
	}
}

// The refusals are wired into admission of each kind.
func TestNotSupportedFieldsRefusedByAdmission(t *testing.T) {
	ctx := context.Background()
	vol := func(mod func(*longhorn.VolumeSpec)) *longhorn.Volume {
		v := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "vol-1"}, Spec: longhorn.VolumeSpec{Size: 1 << 30,
			NumberOfReplicas: 3, DataEngine: longhorn.DataEngineTypeV1, Frontend: longhorn.VolumeFrontendBlockDev,
			AccessMode: longhorn.AccessModeReadWriteOnce, Image: "img", DataLocality: longhorn.DataLocalityDisabled}}
		mod(&v.Spec)
		return v
	}
	vk := VolumeKind(stubVolumeStore{})
	for field, mod := range map[string]func(*longhorn.VolumeSpec){
		"spec.encrypted":  func(s *longhorn.VolumeSpec) { s.Encrypted = true },
		"spec.accessMode": func(s *longhorn.VolumeSpec) { s.AccessMode = longhorn.AccessModeReadWriteMany },
	} {
		err := vk.Validate(ctx, Request[*longhorn.Volume]{Operation: admissionv1.Create, Object: vol(mod), HasNew: true})
		if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "not supported yet") {
			t.Errorf("volume create with %s: %v", field, err)
		}
	}
	old := vol(func(*longhorn.VolumeSpec) {})
	err := vk.Validate(ctx, Request[*longhorn.Volume]{Operation: admissionv1.Update, Old: old, HasOld: true, HasNew: true,
		Object: vol(func(s *longhorn.VolumeSpec) { s.SnapshotDataIntegrity = longhorn.SnapshotDataIntegrityEnabled })})
	if err == nil || !strings.Contains(err.Error(), "spec.snapshotDataIntegrity") {
		t.Errorf("volume update to snapshotDataIntegrity enabled: %v", err)
	}
	node := func(evict bool) *longhorn.Node {
		return &longhorn.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: longhorn.NodeSpec{Name: "n1",
			Disks: map[string]longhorn.DiskSpec{"d": {Type: longhorn.DiskTypeFilesystem, Path: "/data", EvictionRequested: evict}}}}
	}
	nk := NodeKind()
	err = nk.Validate(ctx, Request[*longhorn.Node]{Operation: admissionv1.Update, Old: node(false), HasOld: true, Object: node(true), HasNew: true})
	if err != nil {
		t.Errorf("disk eviction refused: %v", err)
	}
	n := node(false)
	n.Spec.Disks["d"] = longhorn.DiskSpec{Type: longhorn.DiskTypeBlock, Path: "/dev/sdb"}
	if err := nk.Validate(ctx, Request[*longhorn.Node]{Operation: admissionv1.Create, Object: n, HasNew: true}); err == nil ||
		!strings.Contains(err.Error(), "spec.disks[d].diskType") || !strings.Contains(err.Error(), "not supported yet") {
		t.Errorf("block disk: %v", err)
	}
	n = node(false)
	n.Spec.InstanceManagerCPURequest = 250
	if err := nk.Validate(ctx, Request[*longhorn.Node]{Operation: admissionv1.Create, Object: n, HasNew: true}); err != nil {
		t.Errorf("instanceManagerCPURequest refused: %v", err)
	}
	r := &longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: longhorn.ReplicaSpec{
		InstanceSpec: longhorn.InstanceSpec{VolumeName: "v", DataEngine: longhorn.DataEngineTypeV1, SalvageRequested: true}}}
	if err := ReplicaKind().Validate(ctx, Request[*longhorn.Replica]{Operation: admissionv1.Create, Object: r, HasNew: true}); err == nil ||
		!strings.Contains(err.Error(), "spec.salvageRequested") {
		t.Errorf("replica salvageRequested: %v", err)
	}
}

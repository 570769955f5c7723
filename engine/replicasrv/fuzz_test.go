package replicasrv

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// serviceMethods lists a service's methods and request types from its
// registered descriptor.
func serviceMethods(t testing.TB, service string) ([]string, map[string]protoreflect.MessageType) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		t.Fatal(err)
	}
	sd := d.(protoreflect.ServiceDescriptor)
	var names []string
	types := map[string]protoreflect.MessageType{}
	for i := 0; i < sd.Methods().Len(); i++ {
		m := sd.Methods().Get(i)
		mt, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName())
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, string(m.Name()))
		types[string(m.Name())] = mt
	}
	return names, types
}

// callMethod decodes b as the method's request (skipping undecodable
// input) and calls the method of srv with it.
func callMethod(srv any, method string, mt protoreflect.MessageType, b []byte) {
	req := mt.New().Interface()
	if proto.Unmarshal(b, req) != nil {
		return
	}
	m := reflect.ValueOf(srv).MethodByName(method)
	m.Call([]reflect.Value{reflect.ValueOf(context.Background()), reflect.ValueOf(req)})
}

// FuzzReplicaService: any request bytes to any ReplicaService method leave
// the replica usable, write nothing outside its directory and never panic.
func FuzzReplicaService(f *testing.F) {
	names, types := serviceMethods(f, "ptypes.ReplicaService")
	for i := range names {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte("\x0a\x0fvolume-snap-a.img\x12\x02xx"))
		f.Add(uint8(i), []byte("\x0a\x04../x\x10\x01"))
		f.Add(uint8(i), []byte("\x08\x80\x80\x80\x80\x80\x80\x80\x80\x01"))
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		base := t.TempDir()
		dir := filepath.Join(base, "r")
		s, err := NewServer(dir, 1<<20, replica.Options{}, "r", quiet())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.ReplicaOpen(context.Background(), &enginerpc.ReplicaOpenRequest{}); err != nil {
			t.Fatal(err)
		}
		name := names[int(which)%len(names)]
		callMethod(s, name, types[name], b)
		_, _ = s.ReplicaClose(context.Background(), nil)
		if name != "ReplicaDelete" {
			if _, err := s.ReplicaOpen(context.Background(), &enginerpc.ReplicaOpenRequest{}); err != nil {
				t.Fatalf("%s(%x) left a replica that does not open: %v", name, b, err)
			}
		}
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if e.Name() != "r" {
				t.Fatalf("%s(%x) wrote %s outside the replica directory", name, b, e.Name())
			}
		}
	})
}

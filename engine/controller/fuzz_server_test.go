package controller_test

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/longhorn-go/longhorn/engine/controller"
)

// confineAddrs points every replica address of a fuzzed request at a closed
// loopback port.
func confineAddrs(m protoreflect.Message, port int) {
	addr := fmt.Sprintf("tcp://127.0.0.1:%d", port)
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		switch {
		case f.Name() == "replicaAddresses":
			m.Clear(f)
			m.Mutable(f).List().Append(protoreflect.ValueOfString(addr))
		case f.Name() == "address" && f.Kind() == protoreflect.StringKind, f.Name() == "from_engine_address":
			m.Set(f, protoreflect.ValueOfString(addr))
		case f.Kind() == protoreflect.MessageKind && !f.IsList() && !f.IsMap() && m.Has(f):
			confineAddrs(m.Mutable(f).Message(), port)
		}
	}
}

// FuzzControllerService: any request bytes to any method of the engine's
// ControllerService and ControllerExtService, with replica addresses
// confined to a closed loopback port, never panic the engine.
func FuzzControllerService(f *testing.F) {
	type method struct {
		srv  any
		name string
		in   protoreflect.MessageType
	}
	var methods []method
	for _, svc := range []string{"ptypes.ControllerService", "lhext.ControllerExtService"} {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
		if err != nil {
			f.Fatal(err)
		}
		ms := d.(protoreflect.ServiceDescriptor).Methods()
		for i := 0; i < ms.Len(); i++ {
			mt, err := protoregistry.GlobalTypes.FindMessageByName(ms.Get(i).Input().FullName())
			if err != nil {
				f.Fatal(err)
			}
			methods = append(methods, method{srv: svc, name: string(ms.Get(i).Name()), in: mt})
		}
	}
	for i := range methods {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte("\x08\x80\x20\x10\x01"))
		f.Add(uint8(i), []byte("\x0a\x05abcde\x12\x03\x0a\x01x"))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c, err := controller.NewVolume(controller.VolumeOptions{Name: "vol", Size: 1 << 20, Log: quietLog(),
			EngineReplicaTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Shutdown()
		m := methods[int(which)%len(methods)]
		req := m.in.New()
		if proto.Unmarshal(b, req.Interface()) != nil {
			return
		}
		confineAddrs(req, port)
		srv := any(controller.NewServer(c))
		if m.srv == "lhext.ControllerExtService" {
			srv = controller.NewExtServer(c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		reflect.ValueOf(srv).MethodByName(m.name).Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(req.Interface())})
	})
}

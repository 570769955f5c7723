package syncagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/replica"
)

// dirReplica is a Replica over a directory for agent tests.
type dirReplica struct{ dir string }

func (r dirReplica) FilePath(name string) (string, error) {
	if err := replica.ValidateFileName(name); err != nil {
		return "", err
	}
	return filepath.Join(r.dir, name), nil
}

func (r dirReplica) Purge(context.Context, func(string, int64, int64)) error { return nil }

// closedPort returns a loopback port nothing listens on (just released).
func closedPort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p
}

// confine rewrites every address of a fuzzed request to a closed loopback
// port and caps its timeouts, so a fuzzed call never reaches anything.
func confine(m protoreflect.Message, port int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		switch f.Name() {
		case "host", "to_host":
			m.Set(f, protoreflect.ValueOfString("127.0.0.1"))
		case "port":
			m.Set(f, protoreflect.ValueOfInt32(int32(port)))
		case "from_address":
			m.Set(f, protoreflect.ValueOfString(fmt.Sprintf("tcp://127.0.0.1:%d", port-2)))
		case "from_address_map":
			m.Clear(f)
			if port > 2 {
				m.Mutable(f).Map().Set(protoreflect.ValueOfString(fmt.Sprintf("127.0.0.1:%d", port-2)).MapKey(), protoreflect.ValueOfBool(true))
			}
		case "file_sync_http_client_timeout":
			m.Set(f, protoreflect.ValueOfInt32(1))
		case "grpc_timeout_seconds":
			m.Set(f, protoreflect.ValueOfInt64(2))
		case "local_sync":
			m.Clear(f)
		}
	}
}

func shortRetries(t testing.TB) {
	r0, r1, r2, s0, s1 := retryFirst, retryMax, openRetryFor, syncRetryFirst, syncRetryMax
	retryFirst, retryMax, openRetryFor, syncRetryFirst, syncRetryMax = time.Millisecond, time.Millisecond, 10*time.Millisecond, time.Millisecond, time.Millisecond
	t.Cleanup(func() { retryFirst, retryMax, openRetryFor, syncRetryFirst, syncRetryMax = r0, r1, r2, s0, s1 })
}

// FuzzSyncAgentService: any request bytes to any SyncAgentService method,
// with addresses confined to a closed loopback port, never panic and never
// touch a file outside the replica directory.
func FuzzSyncAgentService(f *testing.F) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName("ptypes.SyncAgentService")
	if err != nil {
		f.Fatal(err)
	}
	methods := d.(protoreflect.ServiceDescriptor).Methods()
	for i := 0; i < methods.Len(); i++ {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte("\x0a\x11volume-snap-a.img\x12\x11volume-snap-b.img"))
		f.Add(uint8(i), []byte("\x0a\x0a../../etc\x1a\x04\x0a\x02..\x10\x01"))
	}
	shortRetries(f)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		base := t.TempDir()
		dir := filepath.Join(base, "r")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		port := closedPort(t)
		log := logrus.New()
		log.SetOutput(devNull{})
		a := NewAgent(dirReplica{dir}, Config{Host: "127.0.0.1", PortStart: port, PortEnd: port,
			HashLockPath: filepath.Join(base, "lock", "hash"), Log: log})
		defer a.Close()
		m := methods.Get(int(which) % methods.Len())
		mt, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName())
		if err != nil {
			t.Fatal(err)
		}
		req := mt.New()
		if proto.Unmarshal(b, req.Interface()) != nil {
			return
		}
		confine(req, port)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out := reflect.ValueOf(a).MethodByName(string(m.Name())).Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(req.Interface())})
		if err, _ := out[1].Interface().(error); err != nil && errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s(%x) ran into the test's deadline", m.Name(), b)
		}
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if e.Name() != "r" && e.Name() != "lock" {
				t.Fatalf("%s(%x) wrote %s outside the replica directory", m.Name(), b, e.Name())
			}
		}
		_, _ = a.Reset(context.Background(), &emptypb.Empty{})
	})
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

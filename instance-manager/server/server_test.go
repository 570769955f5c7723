package server

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/instance-manager/process"
	"github.com/longhorn-go/longhorn/internal/testproc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

func TestMain(m *testing.M) {
	testproc.MaybeRun()
	os.Exit(m.Run())
}

type testIM struct {
	srv   *Server
	mgr   *process.Manager
	conn  *grpc.ClientConn
	pconn *grpc.ClientConn
	pm    imrpc.ProcessManagerServiceClient
	inst  imrpc.InstanceServiceClient
	proxy imrpc.ProxyEngineServiceClient
	self  string
}

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if testing.Verbose() {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

func startIM(t *testing.T, ports int) *testIM {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	start := int32(testutil.FreePortRange(t, ports))
	mgr, err := process.NewManager(process.Config{
		PortRange: process.PortRange{Start: start, End: start + int32(ports) - 1}, PortProbe: process.HostPortFree,
		LogDir: t.TempDir(), StopTimeout: 2 * time.Second, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	srv, err := New(Config{Listen: "127.0.0.1:0", ProxyListen: "127.0.0.1:0", Manager: mgr, DefaultBinary: self, ReplaceTimeout: 10 * time.Second, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	im := &testIM{srv: srv, mgr: mgr, self: self}
	im.conn = dial(t, srv.Addr())
	im.pconn = dial(t, srv.ProxyAddr())
	im.pm = imrpc.NewProcessManagerServiceClient(im.conn)
	im.inst = imrpc.NewInstanceServiceClient(im.conn)
	im.proxy = imrpc.NewProxyEngineServiceClient(im.pconn)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return im
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, what string, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Errorf("%s: got %v %q, want %v containing %q", what, st.Code(), st.Message(), code, msg)
	}
}

func TestProcessServiceRefusesBadRequestsAndChangesNothing(t *testing.T) {
	im := startIM(t, 12)
	ctx := ctxT(t)
	ok := &imrpc.ProcessSpec{Name: "p1", Binary: im.self, Args: []string{testproc.Arg, "--lines", "1"}, PortCount: 10, PortArgs: []string{"--listen,127.0.0.1:"}}
	if _, err := im.pm.ProcessCreate(ctx, &imrpc.ProcessCreateRequest{Spec: ok}); err != nil {
		t.Fatal(err)
	}
	mod := func(f func(*imrpc.ProcessSpec)) *imrpc.ProcessSpec {
		s := &imrpc.ProcessSpec{Name: "p2", Binary: im.self, Args: []string{testproc.Arg}, PortCount: 1, PortArgs: []string{"--listen,127.0.0.1:"}}
		f(s)
		return s
	}
	cases := []struct {
		name string
		spec *imrpc.ProcessSpec
		code codes.Code
		msg  string
	}{
		{"nil spec", nil, codes.InvalidArgument, "spec is required"},
		{"no name", mod(func(s *imrpc.ProcessSpec) { s.Name = "" }), codes.InvalidArgument, "name is required"},
		{"bad name", mod(func(s *imrpc.ProcessSpec) { s.Name = "a/b" }), codes.InvalidArgument, "not allowed"},
		{"port count 0", mod(func(s *imrpc.ProcessSpec) { s.PortCount = 0 }), codes.InvalidArgument, "port_count is 0"},
		{"port count too large", mod(func(s *imrpc.ProcessSpec) { s.PortCount = 13 }), codes.InvalidArgument, "port_count is 13, want 1..12"},
		{"missing binary", mod(func(s *imrpc.ProcessSpec) { s.Binary = "/nonexistent/longhorn" }), codes.InvalidArgument, "cannot be run"},
		{"duplicate name", mod(func(s *imrpc.ProcessSpec) { s.Name = "p1" }), codes.AlreadyExists, "p1"},
		{"exhausted", mod(func(s *imrpc.ProcessSpec) { s.PortCount = 3 }), codes.ResourceExhausted, "no free port range"},
	}
	for _, c := range cases {
		_, err := im.pm.ProcessCreate(ctx, &imrpc.ProcessCreateRequest{Spec: c.spec})
		wantCode(t, c.name, err, c.code, c.msg)
	}
	_, err := im.pm.ProcessDelete(ctx, &imrpc.ProcessDeleteRequest{Name: "nope"})
	wantCode(t, "delete unknown", err, codes.NotFound, "nope")
	_, err = im.pm.ProcessGet(ctx, &imrpc.ProcessGetRequest{Name: ""})
	wantCode(t, "get empty", err, codes.InvalidArgument, "name is required")
	_, err = im.pm.ProcessReplace(ctx, &imrpc.ProcessReplaceRequest{Spec: ok, TerminateSignal: "SIGFOO"})
	wantCode(t, "bad signal", err, codes.InvalidArgument, "terminate_signal")
	_, err = im.pm.ProcessDelete(ctx, &imrpc.ProcessDeleteRequest{Name: "p1", Uuid: "x"})
	wantCode(t, "delete other uuid", err, codes.FailedPrecondition, "uuid")
	list, err := im.pm.ProcessList(ctx, &imrpc.ProcessListRequest{})
	if err != nil || len(list.GetProcesses()) != 1 || im.mgr.PortsInUse() != 10 {
		t.Fatalf("after bad requests: %v %v, %d ports", list, err, im.mgr.PortsInUse())
	}
	// An identical create is idempotent.
	again, err := im.pm.ProcessCreate(ctx, &imrpc.ProcessCreateRequest{Spec: ok})
	if err != nil || again.GetStatus().GetUuid() != list.GetProcesses()["p1"].GetStatus().GetUuid() {
		t.Fatalf("repeated create: %v %v", again, err)
	}
}

func TestHealthAndVersion(t *testing.T) {
	im := startIM(t, 2)
	ctx := ctxT(t)
	for _, cc := range []*grpc.ClientConn{im.conn, im.pconn} {
		r, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %v %v", r, err)
		}
	}
	v, err := im.inst.VersionGet(ctx, &imrpc.Empty{})
	if err != nil || v.GetInstanceManagerApiVersion() != imrpc.InstanceManagerAPIVersion || v.GetInstanceManagerProxyApiMinVersion() != imrpc.InstanceManagerProxyAPIMinVersion {
		t.Fatalf("version %v %v", v, err)
	}
	if _, err := im.proxy.Ping(ctx, &imrpc.Empty{}); err != nil {
		t.Fatal(err)
	}
}

func TestRedactedText(t *testing.T) {
	req := &imrpc.EngineSnapshotBackupRequest{
		ProxyEngineRequest: &imrpc.ProxyEngineRequest{Address: "127.0.0.1:1"},
		Target:             &imrpc.BackupTarget{Url: "s3://b@us/", Credential: map[string]string{"AWS_SECRET_ACCESS_KEY": "hunter2"}},
	}
	s := redactedText(req)
	if strings.Contains(s, "hunter2") || !strings.Contains(s, "s3://b@us/") {
		t.Fatalf("redacted %s", s)
	}
	if req.GetTarget().GetCredential()["AWS_SECRET_ACCESS_KEY"] != "hunter2" {
		t.Fatal("redaction changed the request")
	}
}

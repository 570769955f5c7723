package server

import (
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/internal/testproc"
)

func instanceSpec(name, typ string, ports int32) *imrpc.InstanceSpec {
	return &imrpc.InstanceSpec{
		Name: name, Type: typ, VolumeName: "vol1", PortCount: ports, PortArgs: []string{"--listen,127.0.0.1:"},
		ProcessInstanceSpec: &imrpc.ProcessInstanceSpec{Args: []string{testproc.Arg, "--lines", "2"}}, // binary "" = default
	}
}

func recvUntil(t *testing.T, w grpc.ServerStreamingClient[imrpc.InstanceResponse], what string, cond func(*imrpc.InstanceResponse) bool) *imrpc.InstanceResponse {
	t.Helper()
	for {
		r, err := w.Recv()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if cond(r) {
			return r
		}
	}
}

func isState(name, state string, deleted bool) func(*imrpc.InstanceResponse) bool {
	return func(r *imrpc.InstanceResponse) bool {
		return r.GetSpec().GetName() == name && r.GetStatus().GetState() == state && r.GetDeleted() == deleted
	}
}

func TestInstanceLifecycle(t *testing.T) {
	im := startIM(t, 30)
	ctx := ctxT(t)
	w, err := im.inst.InstanceWatch(ctx, &imrpc.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Header(); err != nil { // subscribed: no later change is missed
		t.Fatal(err)
	}
	// A plain process is not an instance and is not reported on InstanceWatch.
	if _, err := im.pm.ProcessCreate(ctx, &imrpc.ProcessCreateRequest{Spec: &imrpc.ProcessSpec{Name: "plain", Binary: im.self, Args: []string{testproc.Arg}, PortCount: 1, PortArgs: []string{"--listen,127.0.0.1:"}}}); err != nil {
		t.Fatal(err)
	}
	r, err := im.inst.InstanceCreate(ctx, &imrpc.InstanceCreateRequest{Spec: instanceSpec("vol1-r-1", "replica", 10)})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetSpec().GetProcessInstanceSpec().GetBinary() != im.self || r.GetStatus().GetPortEnd()-r.GetStatus().GetPortStart() != 9 {
		t.Fatalf("created %v", r)
	}
	if _, err := im.inst.InstanceCreate(ctx, &imrpc.InstanceCreateRequest{Spec: instanceSpec("vol1-e-0", "engine", 1)}); err != nil {
		t.Fatal(err)
	}
	first := recvUntil(t, w, "an event", func(*imrpc.InstanceResponse) bool { return true })
	if first.GetSpec().GetName() == "plain" {
		t.Fatal("plain process reported on InstanceWatch")
	}
	recvUntil(t, w, "replica running", isState("vol1-r-1", "running", false))

	list, err := im.inst.InstanceList(ctx, &imrpc.Empty{})
	if err != nil || len(list.GetInstances()) != 2 || list.GetInstances()["vol1-e-0"].GetSpec().GetType() != "engine" {
		t.Fatalf("list %v %v", list, err)
	}
	_, err = im.inst.InstanceGet(ctx, &imrpc.InstanceGetRequest{Name: "vol1-r-1", Type: "engine"})
	wantCode(t, "get with wrong type", err, codes.NotFound, "of type")
	_, err = im.inst.InstanceGet(ctx, &imrpc.InstanceGetRequest{Name: "plain"})
	wantCode(t, "get plain process", err, codes.NotFound, "plain")

	logs, err := im.inst.InstanceLog(ctx, &imrpc.InstanceLogRequest{Name: "vol1-r-1"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for {
		l, err := logs.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l.GetLine())
	}
	if !strings.Contains(strings.Join(lines, "\n"), "testproc line 1") {
		t.Fatalf("log %q", lines)
	}

	// kill -9 is reported as error within 2 s.
	pid := 0
	for _, p := range []string{"vol1-r-1"} {
		info, _ := im.mgr.Get(p)
		pid = info.Status.PID
	}
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev := recvUntil(t, w, "replica error", isState("vol1-r-1", "error", false))
	if d := time.Since(killed); d > 2*time.Second || !strings.Contains(ev.GetStatus().GetErrorMsg(), "killed") {
		t.Fatalf("error after %v: %q", d, ev.GetStatus().GetErrorMsg())
	}

	for _, n := range []string{"vol1-r-1", "vol1-e-0"} {
		if _, err := im.inst.InstanceDelete(ctx, &imrpc.InstanceDeleteRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
		recvUntil(t, w, n+" deleted", isState(n, "stopped", true))
	}
	if _, err := im.pm.ProcessDelete(ctx, &imrpc.ProcessDeleteRequest{Name: "plain"}); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(5*time.Second, func() bool { return im.mgr.PortsInUse() == 0 }) {
		t.Fatalf("%d ports in use", im.mgr.PortsInUse())
	}
}

func TestInstanceCreateValidation(t *testing.T) {
	im := startIM(t, 2)
	ctx := ctxT(t)
	mod := func(f func(*imrpc.InstanceSpec)) *imrpc.InstanceSpec {
		s := instanceSpec("i1", "engine", 1)
		f(s)
		return s
	}
	cases := []struct {
		name string
		spec *imrpc.InstanceSpec
		msg  string
	}{
		{"nil", nil, "spec is required"},
		{"type", mod(func(s *imrpc.InstanceSpec) { s.Type = "shard" }), `spec.type "shard"`},
		{"v2", mod(func(s *imrpc.InstanceSpec) { s.DataEngine = imrpc.DataEngine_DATA_ENGINE_V2 }), "v1 instances only"},
		{"volume", mod(func(s *imrpc.InstanceSpec) { s.VolumeName = "" }), "volume_name is required"},
		{"args", mod(func(s *imrpc.InstanceSpec) { s.ProcessInstanceSpec = nil }), "process_instance_spec.args"},
		{"ports", mod(func(s *imrpc.InstanceSpec) { s.PortCount = 0 }), "port_count"},
	}
	for _, c := range cases {
		_, err := im.inst.InstanceCreate(ctx, &imrpc.InstanceCreateRequest{Spec: c.spec})
		wantCode(t, c.name, err, codes.InvalidArgument, c.msg)
	}
	if l, _ := im.inst.InstanceList(ctx, &imrpc.Empty{}); len(l.GetInstances()) != 0 {
		t.Fatalf("bad creates left %v", l)
	}
}

func TestInstanceReplace(t *testing.T) {
	im := startIM(t, 4)
	ctx := ctxT(t)
	old, err := im.inst.InstanceCreate(ctx, &imrpc.InstanceCreateRequest{Spec: instanceSpec("e-r", "engine", 1)})
	if err != nil {
		t.Fatal(err)
	}
	ns := instanceSpec("e-r", "engine", 1)
	ns.ProcessInstanceSpec.Args = []string{testproc.Arg, "--lines", "5"}
	r, err := im.inst.InstanceReplace(ctx, &imrpc.InstanceReplaceRequest{Spec: ns, TerminateSignal: "SIGTERM"})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetStatus().GetUuid() == old.GetStatus().GetUuid() || r.GetStatus().GetState() != "running" || r.GetStatus().GetPortStart() == old.GetStatus().GetPortStart() {
		t.Fatalf("replace %v from %v", r.GetStatus(), old.GetStatus())
	}
	if !waitUntil(5*time.Second, func() bool { return im.mgr.PortsInUse() == 1 }) {
		t.Fatalf("old ports kept: %d", im.mgr.PortsInUse())
	}
	ns.Type = "replica"
	_, err = im.inst.InstanceReplace(ctx, &imrpc.InstanceReplaceRequest{Spec: ns})
	wantCode(t, "replace with other type", err, codes.NotFound, "of type")
}

func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

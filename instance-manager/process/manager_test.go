package process

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func spec(name string, ports int32) Spec {
	return Spec{Name: name, Binary: "/fake/longhorn", Args: []string{"engine"}, PortCount: ports, PortArgs: []string{"--listen,127.0.0.1:"}}
}

func TestCreateBecomesRunningOnlyWhenReady(t *testing.T) {
	m, fe, fh := newFakeManager(t, nil)
	sub := m.Subscribe()
	info, err := m.Create(spec("e-0", 1), Meta{Type: "engine", VolumeName: "v"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status.State != StateStarting || info.Status.PortStart != 20000 || info.Status.PortEnd != 20000 || info.Status.UUID == "" {
		t.Fatalf("created %+v", info.Status)
	}
	if got := fe.run(0).cmd.Args; !slices.Equal(got, []string{"engine", "--listen", "127.0.0.1:20000"}) {
		t.Fatalf("args %q", got)
	}
	waitEvent(t, sub, "starting", named("e-0", StateStarting, false))
	time.Sleep(30 * time.Millisecond) // several probes fail meanwhile
	if got, _ := m.Get("e-0"); got.Status.State != StateStarting {
		t.Fatalf("state %s before the port is ready", got.Status.State)
	}
	fh.mu.Lock()
	fh.ready["127.0.0.1:20000"] = true
	fh.mu.Unlock()
	waitEvent(t, sub, "running", named("e-0", StateRunning, false))
}

func TestCreateIsIdempotentByName(t *testing.T) {
	m, fe, _ := newFakeManager(t, nil)
	a, err := m.Create(spec("r-0", 10), Meta{Type: "replica"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Create(spec("r-0", 10), Meta{Type: "replica"})
	if err != nil || b.Status.UUID != a.Status.UUID {
		t.Fatalf("repeated create: %v, uuid %s vs %s", err, b.Status.UUID, a.Status.UUID)
	}
	other := spec("r-0", 10)
	other.Args = []string{"replica"}
	if _, err := m.Create(other, Meta{Type: "replica"}); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("create with other spec: %v, want ErrAlreadyExists", err)
	}
	if _, err := m.Create(spec("r-0", 10), Meta{Type: "engine"}); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("create with other meta: %v, want ErrAlreadyExists", err)
	}
	if len(fe.runs) != 1 || m.PortsInUse() != 10 {
		t.Fatalf("%d starts, %d ports in use; want 1 and 10", len(fe.runs), m.PortsInUse())
	}
}

// A record whose process exited (here: a process record made through the
// process service, in state error) must not block a new start with its
// name: the create replaces it, with new ports and a new uuid. A live
// process with another spec still refuses.
func TestCreateReplacesAnExitedRecord(t *testing.T) {
	m, fe, fh := newFakeManager(t, nil)
	fh.setAll(true)
	sub := m.Subscribe()
	old, err := m.Create(spec("vol-e-0", 1), Meta{})
	if err != nil {
		t.Fatal(err)
	}
	fe.run(0).exitWith(errors.New("exit status 1"))
	waitEvent(t, sub, "error", named("vol-e-0", StateError, false))
	other := spec("vol-e-0", 1)
	other.Args = []string{"engine", "controller", "vol"}
	info, err := m.Create(other, Meta{Type: "engine", VolumeName: "vol"})
	if err != nil {
		t.Fatalf("create over an exited record: %v", err)
	}
	if info.Status.UUID == old.Status.UUID || info.Status.State != StateStarting || info.Meta.Type != "engine" {
		t.Fatalf("replacement %+v, old uuid %s", info, old.Status.UUID)
	}
	waitEvent(t, sub, "running", named("vol-e-0", StateRunning, false))
	if len(fe.runs) != 2 || m.PortsInUse() != 1 || len(m.List()) != 1 {
		t.Fatalf("%d starts, %d ports, %d records; want 2, 1, 1", len(fe.runs), m.PortsInUse(), len(m.List()))
	}
	if _, err := m.Create(spec("vol-e-0", 1), Meta{}); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("create over a live process with another spec: %v, want ErrAlreadyExists", err)
	}
}

func TestInvalidRequestsChangeNothing(t *testing.T) {
	m, fe, _ := newFakeManager(t, func(c *Config) { c.PortRange = PortRange{20000, 20019} })
	if _, err := m.Create(spec("keep", 10), Meta{}); err != nil {
		t.Fatal(err)
	}
	bad := spec("bad", 0)
	if _, err := m.Create(bad, Meta{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("port count 0: %v", err)
	}
	if _, err := m.Create(spec("big", 21), Meta{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("port count beyond range: %v", err)
	}
	fe.startErr = &exec.Error{Name: "nope", Err: exec.ErrNotFound}
	if _, err := m.Create(spec("x3", 1), Meta{}); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "cannot be run") {
		t.Errorf("missing binary: %v", err)
	}
	fe.startErr = errors.New("fork failed")
	if _, err := m.Create(spec("x4", 1), Meta{}); err == nil || errors.Is(err, ErrInvalidArgument) {
		t.Errorf("start failure: %v", err)
	}
	fe.startErr = nil
	if _, err := m.Create(spec("x1", 10), Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(spec("x2", 1), Meta{}); !errors.Is(err, ErrPortsExhausted) {
		t.Errorf("exhausted: %v", err)
	}
	if _, err := m.Delete("nope", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete unknown: %v", err)
	}
	if _, err := m.Get("a/b"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("get bad name: %v", err)
	}
	if _, err := m.Delete("keep", "not-the-uuid"); !errors.Is(err, ErrFailedPrecondition) {
		t.Errorf("delete wrong uuid: %v", err)
	}
	names := []string{}
	for _, i := range m.List() {
		names = append(names, i.Spec.Name)
	}
	if !slices.Equal(names, []string{"keep", "x1"}) || m.PortsInUse() != 20 {
		t.Fatalf("after bad requests: %v, %d ports in use", names, m.PortsInUse())
	}
}

func TestUnexpectedExitIsErrorUntilDeleted(t *testing.T) {
	m, fe, fh := newFakeManager(t, nil)
	fh.setAll(true)
	sub := m.Subscribe()
	if _, err := m.Create(spec("r-1", 10), Meta{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, sub, "running", named("r-1", StateRunning, false))
	fe.run(0).exitWith(errors.New("signal: killed"))
	ev := waitEvent(t, sub, "error", named("r-1", StateError, false))
	if !strings.Contains(ev.Status.ErrorMsg, "exited unexpectedly: signal: killed") || ev.Status.PID != 0 {
		t.Fatalf("error event %+v", ev.Status)
	}
	if m.PortsInUse() != 10 {
		t.Fatalf("ports of a failed process freed before delete")
	}
	info, err := m.Delete("r-1", ev.Status.UUID)
	if err != nil || !info.Deleted || info.Status.State != StateStopped {
		t.Fatalf("delete: %+v %v", info, err)
	}
	waitEvent(t, sub, "deleted", named("r-1", StateStopped, true))
	if m.PortsInUse() != 0 || len(m.List()) != 0 {
		t.Fatalf("after delete: %d ports, %d processes", m.PortsInUse(), len(m.List()))
	}
}

func TestExitWhileStartingIsError(t *testing.T) {
	m, fe, _ := newFakeManager(t, nil)
	sub := m.Subscribe()
	if _, err := m.Create(spec("e-1", 1), Meta{}); err != nil {
		t.Fatal(err)
	}
	fe.run(0).exitWith(errors.New("exit status 3"))
	ev := waitEvent(t, sub, "error", named("e-1", StateError, false))
	if !strings.Contains(ev.Status.ErrorMsg, "before its ports were ready: exit status 3") {
		t.Fatalf("error msg %q", ev.Status.ErrorMsg)
	}
}

func TestDeleteStopsThenFreesPorts(t *testing.T) {
	m, fe, fh := newFakeManager(t, nil)
	fh.setAll(true)
	sub := m.Subscribe()
	if _, err := m.Create(spec("e-2", 1), Meta{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, sub, "running", named("e-2", StateRunning, false))
	fe.ignore = nil
	info, err := m.Delete("e-2", "")
	if err != nil || !info.Deleted {
		t.Fatalf("delete %+v %v", info, err)
	}
	waitEvent(t, sub, "deleted", named("e-2", StateStopped, true))
	if got := fe.run(0).signals(); !slices.Equal(got, []syscall.Signal{syscall.SIGTERM}) {
		t.Fatalf("signals %v", got)
	}
	if m.PortsInUse() != 0 {
		t.Fatal("ports not freed")
	}
	// The name is free again and gets new ports (next-fit).
	again, err := m.Create(spec("e-2", 1), Meta{})
	if err != nil || again.Status.PortStart != 20001 {
		t.Fatalf("re-create: %+v %v", again.Status, err)
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	m, fe, fh := newFakeManager(t, nil)
	fe.ignore = map[syscall.Signal]bool{syscall.SIGTERM: true}
	fh.setAll(true)
	sub := m.Subscribe()
	if _, err := m.Create(spec("stubborn", 1), Meta{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, sub, "running", named("stubborn", StateRunning, false))
	if _, err := m.Delete("stubborn", ""); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, sub, "stopping", named("stubborn", StateStopping, true))
	again, err := m.Delete("stubborn", "")
	if err != nil || !again.Deleted || again.Status.State != StateStopping {
		t.Fatalf("repeated delete: %+v %v", again, err)
	}
	waitEvent(t, sub, "deleted", named("stubborn", StateStopped, true))
	if got := fe.run(0).signals(); !slices.Equal(got, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}) {
		t.Fatalf("signals %v", got)
	}
}

func TestReplace(t *testing.T) {
	m, fe, fh := newFakeManager(t, nil)
	fh.setAll(true)
	sub := m.Subscribe()
	old, err := m.Create(spec("e-3", 1), Meta{Type: "engine"})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, sub, "running", named("e-3", StateRunning, false))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ns := spec("e-3", 1)
	ns.Args = []string{"engine", "--upgraded"}
	info, err := m.Replace(ctx, ns, Meta{Type: "engine"}, syscall.SIGHUP)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status.UUID == old.Status.UUID || info.Status.PortStart == old.Status.PortStart || info.Status.State != StateRunning {
		t.Fatalf("replaced %+v from %+v", info.Status, old.Status)
	}
	if got := fe.run(0).signals(); !slices.Equal(got, []syscall.Signal{syscall.SIGHUP}) {
		t.Fatalf("old run got %v", got)
	}
	got, _ := m.Get("e-3")
	if got.Status.UUID != info.Status.UUID || !slices.Equal(got.Spec.Args, ns.Args) {
		t.Fatalf("visible after replace: %+v", got)
	}
	if !waitFor(time.Second, func() bool { return m.PortsInUse() == 1 }) {
		t.Fatalf("old ports not freed: %d in use", m.PortsInUse())
	}

	// A replacement that dies keeps the current run.
	fh.setAll(false)
	go func() {
		time.Sleep(20 * time.Millisecond)
		fe.run(2).exitWith(errors.New("exit status 1"))
	}()
	if _, err := m.Replace(ctx, spec("e-3", 1), Meta{Type: "engine"}, syscall.SIGHUP); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("failing replace: %v", err)
	}
	if got, _ := m.Get("e-3"); got.Status.UUID != info.Status.UUID || got.Status.State != StateRunning {
		t.Fatalf("after failed replace: %+v", got.Status)
	}
	if !waitFor(time.Second, func() bool { return m.PortsInUse() == 1 }) {
		t.Fatalf("failed replacement's ports not freed: %d", m.PortsInUse())
	}
	if _, err := m.Replace(ctx, spec("nope", 1), Meta{}, syscall.SIGHUP); !errors.Is(err, ErrNotFound) {
		t.Fatalf("replace unknown: %v", err)
	}
}

func TestShutdownStopsEverything(t *testing.T) {
	m, fe, fh := newFakeManager(t, nil)
	fh.setAll(true)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := m.Create(spec(n, 10), Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	sub := m.Subscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if len(fe.run(i).signals()) == 0 {
			t.Errorf("run %d not signalled", i)
		}
	}
	if len(m.List()) != 0 || m.PortsInUse() != 0 {
		t.Fatalf("after shutdown: %d processes, %d ports", len(m.List()), m.PortsInUse())
	}
	for range sub.C() { // drained and closed
	}
	if _, err := m.Create(spec("d", 1), Meta{}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("create after shutdown: %v", err)
	}
}

func TestWatchOverflowClosesSubscriber(t *testing.T) {
	m, _, _ := newFakeManager(t, func(c *Config) { c.WatchBuffer = 2 })
	sub := m.Subscribe()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := m.Create(spec(n, 1), Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for range sub.C() {
		n++
	}
	if n != 2 || !sub.Overflowed() {
		t.Fatalf("got %d events, overflowed %v", n, sub.Overflowed())
	}
}

func TestReadLog(t *testing.T) {
	m, fe, _ := newFakeManager(t, nil)
	fe.output = "hello\nworld\n"
	if _, err := m.Create(spec("logged", 1), Meta{}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	err := m.ReadLog(context.Background(), "logged", func(l string) error { lines = append(lines, l); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || !strings.Contains(lines[0], "starting /fake/longhorn") || lines[1] != "hello" || lines[2] != "world" {
		t.Fatalf("log %q", lines)
	}
	if err := m.ReadLog(context.Background(), "nope", func(string) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("log of unknown: %v", err)
	}
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

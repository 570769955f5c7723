package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testproc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

func TestMain(m *testing.M) {
	testproc.MaybeRun()
	os.Exit(m.Run())
}

func selfBinary(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newOSManager(t *testing.T, ports int) *Manager {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	start := int32(testutil.FreePortRange(t, ports))
	m, err := NewManager(Config{
		PortRange: PortRange{start, start + int32(ports) - 1}, PortProbe: HostPortFree,
		LogDir: t.TempDir(), StopTimeout: 500 * time.Millisecond, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return m
}

func listenerSpec(t *testing.T, name string, ports int32, extra ...string) Spec {
	return Spec{
		Name: name, Binary: selfBinary(t), Args: append([]string{testproc.Arg, "--lines", "3"}, extra...),
		PortCount: ports, PortArgs: []string{"--listen,127.0.0.1:"},
	}
}

func TestOSProcessKilledIsErrorWithin2s(t *testing.T) {
	m := newOSManager(t, 20)
	sub := m.Subscribe()
	defer sub.Close()
	info, err := m.Create(listenerSpec(t, "r-os", 10), Meta{Type: "replica"})
	if err != nil {
		t.Fatal(err)
	}
	running := waitEvent(t, sub, "running", named("r-os", StateRunning, false))
	var lines []string
	if err := m.ReadLog(context.Background(), "r-os", func(l string) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(lines, "\n"), fmt.Sprintf("listening on [127.0.0.1:%d]", info.Status.PortStart)) {
		t.Fatalf("log: %q", lines)
	}
	killed := time.Now()
	if err := syscall.Kill(running.Status.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, sub, "error", named("r-os", StateError, false))
	if d := time.Since(killed); d > 2*time.Second {
		t.Fatalf("error reported after %v", d)
	}
	if !strings.Contains(ev.Status.ErrorMsg, "signal: killed") {
		t.Fatalf("error msg %q", ev.Status.ErrorMsg)
	}
	if _, err := m.Delete("r-os", ""); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, sub, "deleted", named("r-os", StateStopped, true))
	if m.PortsInUse() != 0 {
		t.Fatalf("%d ports in use", m.PortsInUse())
	}
}

func TestOSStopEscalatesToSIGKILL(t *testing.T) {
	m := newOSManager(t, 5)
	sub := m.Subscribe()
	defer sub.Close()
	if _, err := m.Create(listenerSpec(t, "stubborn", 1, "--ignore-term"), Meta{}); err != nil {
		t.Fatal(err)
	}
	running := waitEvent(t, sub, "running", named("stubborn", StateRunning, false))
	start := time.Now()
	if _, err := m.Delete("stubborn", ""); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, sub, "deleted", named("stubborn", StateStopped, true))
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("stopped after %v, before the 500ms stop timeout", d)
	}
	if err := syscall.Kill(running.Status.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d still exists: %v", running.Status.PID, err)
	}
}

// TestOSConcurrentCreateDelete runs 100 concurrent create+delete pairs of real
// listener processes (engines: 1 port, replicas: 10) and checks that no process
// and no port is left.
func TestOSConcurrentCreateDelete(t *testing.T) {
	const n = 100
	m := newOSManager(t, 600)
	var mu sync.Mutex
	var pids []int
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ports := int32(1)
			if i%2 == 1 {
				ports = 10
			}
			name := fmt.Sprintf("p-%d", i)
			info, err := m.Create(listenerSpec(t, name, ports), Meta{})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			pids = append(pids, info.Status.PID)
			mu.Unlock()
			if i%3 == 0 { // some are deleted while starting, others once running
				waitFor(5*time.Second, func() bool { g, _ := m.Get(name); return g.Status.State == StateRunning })
			}
			if _, err := m.Delete(name, info.Status.UUID); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !waitFor(20*time.Second, func() bool { return len(m.List()) == 0 && m.PortsInUse() == 0 }) {
		t.Fatalf("leaked: %d processes, %d ports", len(m.List()), m.PortsInUse())
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists: %v", pid, err)
		}
	}
}

package engineapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testproc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// realIM is a `longhorn instance-manager` process started by a test.
type realIM struct {
	cmd       *exec.Cmd
	addr      IMAddress
	portStart int32
	portEnd   int32
	out       *bytes.Buffer
	exited    chan error
}

// startRealIM starts the longhorn binary's instance manager on free ports with
// a private process port range of n ports and extra flags; it is killed at
// cleanup.
func startRealIM(t *testing.T, n int, extra ...string) *realIM {
	t.Helper()
	start := testutil.FreePortRange(t, n)
	ports := testutil.FreePorts(t, 2)
	addr := IMAddress{
		Address:      net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		ProxyAddress: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
	}
	return startRealIMAt(t, addr, int32(start), int32(start+n-1), extra...)
}

// startRealIMAt starts an instance manager on addr with process ports
// start..end.
func startRealIMAt(t *testing.T, addr IMAddress, start, end int32, extra ...string) *realIM {
	t.Helper()
	bin := testutil.LonghornBinary(t)
	im := &realIM{addr: addr, portStart: start, portEnd: end, out: &bytes.Buffer{}, exited: make(chan error, 1)}
	im.cmd = exec.Command(bin, append([]string{"--log-level", "debug", "instance-manager",
		"--listen", im.addr.Address, "--proxy-listen", im.addr.ProxyAddress,
		"--data-root", t.TempDir(), "--port-range", fmt.Sprintf("%d-%d", im.portStart, im.portEnd),
		"--stop-timeout", "3s"}, extra...)...)
	im.cmd.Stdout, im.cmd.Stderr = im.out, im.out
	if err := im.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { im.exited <- im.cmd.Wait() }()
	t.Cleanup(func() {
		_ = im.cmd.Process.Kill()
		<-im.exited
		if t.Failed() {
			t.Logf("instance manager output:\n%s", im.out.String())
		}
	})
	return im
}

// connect waits until the instance manager answers and returns its client.
func (im *realIM) connect(t *testing.T, ctx context.Context, h *Handler) *InstanceManagerClient {
	t.Helper()
	for {
		c, err := h.InstanceManager(ctx, im.addr)
		if err == nil {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatalf("instance manager did not answer: %v", err)
		case err := <-im.exited:
			t.Fatalf("instance manager exited: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// portsFree reports the first port of the range that cannot be bound, or 0.
func (im *realIM) busyPort() int32 {
	for p := im.portStart; p <= im.portEnd; p++ {
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p)))); err != nil {
			return p
		} else {
			l.Close()
		}
	}
	return 0
}

// pidListeningAs finds the process whose command line has "--listen ADDR".
func pidListeningAs(t *testing.T, addr string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte("--listen\x00"+addr+"\x00")) {
			return pid
		}
	}
	t.Fatalf("no process listens as %s", addr)
	return 0
}

func standIn(name string, typ InstanceType, ports int32) InstanceSpec {
	self, _ := os.Executable()
	return InstanceSpec{Name: name, Type: typ, VolumeName: "vol", Binary: self,
		Args: []string{testproc.Arg, "--lines", "2"}, PortCount: ports, PortArgs: []string{"--listen,127.0.0.1:"}}
}

func waitInstance(t *testing.T, w *InstanceWatcher, name string, state InstanceState, deleted bool) *Instance {
	t.Helper()
	for {
		i, err := w.Recv()
		if err != nil {
			t.Fatalf("waiting for %s %s: %v", name, state, err)
		}
		if i.Spec.Name == name && i.Status.State == state && i.Deleted == deleted {
			return i
		}
	}
}

// TestRealInstanceManagerWithStandIns drives a real `longhorn instance-manager`
// through engineapi with listener stand-ins for engine and replica processes.
func TestRealInstanceManagerWithStandIns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts the longhorn binary")
	}
	im := startRealIM(t, 40)
	h := NewHandler(HandlerOptions{})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := im.connect(t, ctx, h)
	w, err := c.InstanceWatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"vol-r-1", "vol-r-2", "vol-e-0"}
	for _, n := range names {
		typ, ports := InstanceTypeReplica, int32(ReplicaPortCount)
		if strings.Contains(n, "-e-") {
			typ, ports = InstanceTypeEngine, EnginePortCount
		}
		if _, err := c.InstanceCreate(ctx, standIn(n, typ, ports)); err != nil {
			t.Fatal(err)
		}
	}
	running := map[string]*Instance{}
	for len(running) < 3 {
		i, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if i.Status.State == InstanceStateRunning {
			running[i.Spec.Name] = i
		}
	}
	if _, err := c.InstanceCreate(ctx, standIn("vol-r-1", InstanceTypeEngine, 1)); !IsAlreadyExists(err) {
		t.Fatalf("duplicate name: %v", err)
	}
	var lines []string
	if err := c.InstanceLog(ctx, "vol-r-2", InstanceTypeReplica, func(l string) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "testproc line 1") {
		t.Fatalf("log %q", lines)
	}

	// kill -9 a replica: error on the watch within 2 s.
	r1 := running["vol-r-1"]
	pid := pidListeningAs(t, ReplicaAddress("127.0.0.1", r1)[len("tcp://"):])
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev := waitInstance(t, w, "vol-r-1", InstanceStateError, false)
	if d := time.Since(killed); d > 2*time.Second {
		t.Fatalf("error reported %v after kill -9", d)
	}
	t.Logf("kill -9 -> error on InstanceWatch after %v: %s", time.Since(killed).Round(time.Millisecond), ev.Status.ErrorMsg)

	for _, n := range names {
		if _, err := c.InstanceDelete(ctx, n, "", ""); err != nil {
			t.Fatal(err)
		}
		waitInstance(t, w, n, InstanceStateStopped, true)
	}
	if l, err := c.InstanceList(ctx); err != nil || len(l) != 0 {
		t.Fatalf("after delete: %v %v", l, err)
	}
	if p := im.busyPort(); p != 0 {
		t.Fatalf("port %d still in use after deleting everything", p)
	}

	// SIGTERM stops the instance manager and every process it runs.
	if _, err := c.InstanceCreate(ctx, standIn("vol-e-1", InstanceTypeEngine, 1)); err != nil {
		t.Fatal(err)
	}
	e1 := waitInstance(t, w, "vol-e-1", InstanceStateRunning, false)
	epid := pidListeningAs(t, EngineAddress("127.0.0.1", e1))
	if err := im.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-im.exited:
		if err != nil {
			t.Fatalf("instance manager exit: %v", err)
		}
		im.exited <- err
	case <-time.After(15 * time.Second):
		t.Fatal("instance manager did not exit after SIGTERM")
	}
	if err := syscall.Kill(epid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("engine stand-in %d survived the instance manager: %v", epid, err)
	}
}

// TestRealInstanceManagerKilledTakesItsProcesses: kill -9 of the instance
// manager leaves no orphan (children get SIGKILL through PR_SET_PDEATHSIG).
func TestRealInstanceManagerKilledTakesItsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts the longhorn binary")
	}
	im := startRealIM(t, 5)
	h := NewHandler(HandlerOptions{})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := im.connect(t, ctx, h)
	w, err := c.InstanceWatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.InstanceCreate(ctx, standIn("orphan-e-0", InstanceTypeEngine, 1)); err != nil {
		t.Fatal(err)
	}
	e := waitInstance(t, w, "orphan-e-0", InstanceStateRunning, false)
	pid := pidListeningAs(t, EngineAddress("127.0.0.1", e))
	if err := im.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	im.exited <- <-im.exited
	deadline := time.Now().Add(5 * time.Second)
	for {
		// The child is reaped by init once it died; until then it may be a zombie.
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil || bytes.Contains(b, []byte(") Z ")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d outlived its instance manager: %s", pid, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

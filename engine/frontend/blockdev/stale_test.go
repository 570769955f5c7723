package blockdev

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a stand-in engine: it serves a blockdev
// frontend for the volume named in the variable and waits to be killed.
const helperEnv = "BLOCKDEV_TEST_ENGINE"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(helperEngine(spec))
	}
	os.Exit(m.Run())
}

// helperEngine: spec is "DEVDIR|STATEDIR|VOLUME|BACKINGFILE".
func helperEngine(spec string) int {
	parts := strings.Split(spec, "|")
	f, err := os.OpenFile(parts[3], os.O_RDWR, 0)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	st, _ := f.Stat()
	be := &fileBackend{f: f, size: st.Size()}
	fe, err := New(Config{DevDir: parts[0], FuseDir: parts[1], Mode: ModeFUSE})
	if err == nil {
		err = fe.Startup(context.Background(), parts[2], be.size, be)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ready", fe.dev.kernelPath())
	select {}
}

// startHelperEngine starts the stand-in engine and returns it with its loop device.
func startHelperEngine(t *testing.T, cfg Config, name, backing string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join([]string{cfg.DevDir, cfg.FuseDir, name, backing}, "|"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "ready ") {
			t.Fatalf("helper engine: %q", l)
		}
		return cmd, strings.TrimPrefix(l, "ready ")
	case <-time.After(20 * time.Second):
		t.Fatal("helper engine did not start in 20s")
	}
	return nil, ""
}

// TestEngineKilledThenReattach: the engine is killed with -9 while its
// device is up; the loop, the dead FUSE mount and the node stay behind. A
// new engine's Startup removes them all and makes a working device, and the
// data written before the kill is there.
func TestEngineKilledThenReattach(t *testing.T) {
	requireFUSE(t)
	cfg, name := testConfig(t), volumeName(t)
	be := newFileBackend(t, 32<<20)
	cmd, oldLoop := startHelperEngine(t, cfg, name, be.f.Name())
	p := []byte(strings.Repeat("before the kill ", 256))
	directIO(t, filepath.Join(cfg.DevDir, name), p, 1<<20)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if loops, _ := loopsOf(cfg.FuseDir, name); len(loops) != 1 || loops[0] != oldLoop {
		t.Fatalf("after the kill want the stale loop %s, found %v", oldLoop, loops)
	}

	f, _ := New(cfg)
	if err := f.Startup(context.Background(), name, be.Size(), be); err != nil {
		t.Fatal(err)
	}
	if tag, _ := loopOwner(oldLoop); strings.HasPrefix(tag, loopPrefix(name)) && oldLoop != f.dev.kernelPath() {
		t.Fatalf("stale loop %s survived the reattach", oldLoop)
	}
	if loops, _ := loopsOf(cfg.FuseDir, name); len(loops) != 1 {
		t.Fatalf("after reattach want one loop for %s, found %v", name, loops)
	}
	got := make([]byte, len(p))
	fd, err := os.Open(f.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	_, err = fd.ReadAt(got, 1<<20)
	fd.Close()
	if err != nil || string(got) != string(p) {
		t.Fatalf("data written before the kill not read back after reattach (%v)", err)
	}
	loop := f.dev.kernelPath()
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, cfg, name, loop)
}

// TestCleanupIfOrphaned: the instance manager's cleanup after an engine
// exit leaves a live owner's device alone and removes a dead owner's.
func TestCleanupIfOrphaned(t *testing.T) {
	requireFUSE(t)
	cfg, name := testConfig(t), volumeName(t)
	be := newFileBackend(t, 16<<20)
	cmd, loop := startHelperEngine(t, cfg, name, be.f.Name())
	if err := CleanupIfOrphaned(cfg, name); err != nil {
		t.Fatal(err)
	}
	if _, ok := blockRdev(filepath.Join(cfg.DevDir, name)); !ok {
		t.Fatal("cleanup removed the device of a live engine")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if err := CleanupIfOrphaned(cfg, name); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, cfg, name, loop)
}

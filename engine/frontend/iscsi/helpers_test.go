package iscsi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/iscsi/internal/filebackend"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

const testVolume = "vol1"

// testTarget is a target serving a sparse file of size bytes on a free
// loopback port; it stops at the end of the test.
type testTarget struct {
	*Target
	addr string
	file string
	be   *filebackend.File
}

func startTarget(t testing.TB, size int64, cfg Config, wrap func(frontend.Backend) frontend.Backend) *testTarget {
	t.Helper()
	file := filepath.Join(t.TempDir(), "vol.img")
	be, err := filebackend.Open(file, size)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		l := logrus.New()
		l.SetOutput(testWriter{t})
		l.SetLevel(logrus.WarnLevel)
		cfg.Log = logrus.NewEntry(l)
	}
	tg, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b frontend.Backend = be
	if wrap != nil {
		b = wrap(be)
	}
	if err := tg.Startup(context.Background(), testVolume, size, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tg.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		be.Close()
	})
	return &testTarget{Target: tg, addr: tg.Addr().String(), file: file, be: be}
}

// url is the libiscsi URL of LUN 1.
func (tt *testTarget) url() string {
	return fmt.Sprintf("iscsi://%s/%s/1", tt.addr, IQN(testVolume))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// runTool runs an external program with a timeout and returns its combined output.
func runTool(t testing.TB, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("%s timed out after %v: %w", name, timeout, ctx.Err())
	}
	return string(out), err
}

// tgtd is Debian's user-space target serving a file with --bstype rdwr on
// a private control port and a free portal port (the conformance baseline).
type tgtd struct {
	ctl  string
	addr string
	iqn  string
	cmd  *exec.Cmd
}

func startTgtd(t testing.TB, size int64) *tgtd {
	t.Helper()
	bin := testutil.RequireTool(t, "tgtd")
	adm := testutil.RequireTool(t, "tgtadm")
	dir := t.TempDir()
	file := filepath.Join(dir, "lun1.img")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(file, size); err != nil {
		t.Fatal(err)
	}
	port := testutil.FreePort(t)
	g := &tgtd{ctl: freeTgtdControlPort(t, adm), addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		iqn: "iqn.2024-01.io.longhorn:baseline"}
	log, err := os.Create(filepath.Join(dir, "tgtd.log"))
	if err != nil {
		t.Fatal(err)
	}
	g.cmd = exec.Command(bin, "-f", "-C", g.ctl, "--iscsi", "portal="+g.addr)
	g.cmd.Stdout, g.cmd.Stderr = log, log
	if err := g.cmd.Start(); err != nil {
		t.Fatalf("start tgtd: %v", err)
	}
	t.Cleanup(func() { g.stop(t, adm); log.Close() })
	T := []string{"-C", g.ctl, "--lld", "iscsi"}
	steps := [][]string{
		{"--op", "new", "--mode", "target", "--tid", "1", "-T", g.iqn},
		{"--op", "new", "--mode", "logicalunit", "--tid", "1", "--lun", "1", "-b", file, "--bstype", "rdwr"},
		{"--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL"},
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range steps {
		for {
			out, err := runTool(t, 10*time.Second, adm, append(T, s...)...)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tgtadm %v: %v: %s", s, err, out)
			}
			time.Sleep(100 * time.Millisecond) // tgtd still starting
		}
	}
	return g
}

// freeTgtdControlPort picks a -C value (0-32767) no running tgtd answers on.
func freeTgtdControlPort(t testing.TB, adm string) string {
	for i := 0; i < 50; i++ {
		c := strconv.Itoa(1000 + rand.IntN(31000))
		if _, err := runTool(t, 5*time.Second, adm, "-C", c, "--op", "show", "--mode", "sys"); err != nil {
			return c
		}
	}
	t.Fatal("no free tgtd control port")
	return ""
}

func (g *tgtd) url() string { return fmt.Sprintf("iscsi://%s/%s/1", g.addr, g.iqn) }

// stop deletes the target and the system (tgtd ignores SIGTERM while it
// has targets), then waits; it kills tgtd if it does not exit.
func (g *tgtd) stop(t testing.TB, adm string) {
	runTool(t, 10*time.Second, adm, "-C", g.ctl, "--lld", "iscsi", "--op", "delete", "--mode", "target", "--tid", "1", "--force")
	runTool(t, 10*time.Second, adm, "-C", g.ctl, "--op", "delete", "--mode", "system")
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		<-done
	}
}

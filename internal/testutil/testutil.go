// Package testutil holds helpers shared by tests that use real tools and
// processes: locating external tools, the longhorn binary, and free ports.
package testutil

import (
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// ToolsRequired reports whether missing tools must fail tests instead of
// skipping them. `make test` sets LONGHORN_REQUIRE_TOOLS=1.
func ToolsRequired() bool { return os.Getenv("LONGHORN_REQUIRE_TOOLS") == "1" }

// RequireTool returns the path of an external program (qemu-io, nbdinfo,
// iscsi-test-cu, ...). When it is missing the test fails under `make test`
// (LONGHORN_REQUIRE_TOOLS=1) and is skipped otherwise. With -short every test
// that calls it is skipped.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: skipping test that needs %s", name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if ToolsRequired() {
			t.Fatalf("%s not found in PATH (install it: see .ci/packages)", name)
		}
		t.Skipf("%s not found in PATH", name)
	}
	return p
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// LonghornBinary returns the path of the longhorn binary for tests that start
// real processes: $LONGHORN_BINARY when set (make test sets it), otherwise the
// binary is built once per test process into a temporary directory.
func LonghornBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LONGHORN_BINARY"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "longhorn-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "longhorn")
		cmd := exec.Command("go", "build", "-o", buildPath, ".")
		cmd.Dir = ModuleRoot(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("building longhorn: %v", buildErr)
	}
	return buildPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// ModuleRoot returns the repository root (the directory holding go.mod).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate module root")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. Prefer
// listening on port 0 directly; use this only when a port must be passed to a
// child process before it starts.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago: every listener is held until all n are picked, so two calls
// cannot hand out the same port (as two FreePort calls in a row can).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// FreePortRange returns the first of n consecutive free TCP ports on 127.0.0.1
// (a replica needs P..P+9). Bases are drawn below the kernel's ephemeral range
// (10000-32767), like the instance manager's port range: ephemeral ports are
// often held by TIME-WAIT sockets of other tests' connections, which block
// bind() of a listener.
func FreePortRange(t testing.TB, n int) int {
	t.Helper()
	for attempt := 0; attempt < 200; attempt++ {
		base := 10000 + rand.IntN(32768-10000-n)
		if attempt >= 150 {
			base = FreePort(t)
		}
		if base+n > 65535 {
			continue
		}
		ok := true
		var ls []net.Listener
		for i := 0; i < n; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// TestOSProcessCgroups runs real processes in their own cgroups on this
// host (cgroup v1 or v2, as root): a process with limits is in a group below
// the manager's with the limit values; one without limits has a group too;
// the group is gone once the process was deleted; limits the host cannot
// enforce, or any limit without cgroups, are refused with the reason.
func TestOSProcessCgroups(t *testing.T) {
	layout, err := cgroup.DetectHostLayout()
	if err != nil || os.Geteuid() != 0 || testing.Short() {
		t.Skipf("needs root and cgroups (%v)", err)
	}
	cg, err := cgroup.New(cgroup.Options{Layout: layout, Name: cgroup.StalePrefix + "ptest-" + strconv.Itoa(os.Getpid())})
	if err != nil {
		t.Skipf("cgroups not writable: %v", err)
	}
	start := int32(testutil.FreePortRange(t, 20))
	m, err := NewManager(Config{PortRange: PortRange{start, start + 19}, PortProbe: HostPortFree,
		LogDir: t.TempDir(), StopTimeout: 500 * time.Millisecond, Logger: testLogger(t), Cgroups: cg})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := cg.Close(); err != nil {
			t.Errorf("group directory left: %v", err)
		}
	}()
	sub := m.Subscribe()
	defer sub.Close()
	dir := t.TempDir()
	limited := listenerSpec(t, "r-limited", 1)
	limited.Limits = cgroup.Limits{CPUMillis: 300, MemoryBytes: 128 << 20, ReadBPS: 8 << 20, IOPath: dir}
	if _, err := cg.BlockDevice(dir); err != nil {
		limited.Limits = cgroup.Limits{CPUMillis: 300, MemoryBytes: 128 << 20}
	}
	if _, err := m.Create(limited, Meta{Type: "replica"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(listenerSpec(t, "e-plain", 1), Meta{Type: "engine"}); err != nil {
		t.Fatal(err)
	}
	// Both start at once and either may run first (the limited one has
	// 0.3 CPU): wait for the two events in whatever order they come.
	both := waitEvents(t, sub, "limited and plain running",
		named("r-limited", StateRunning, false), named("e-plain", StateRunning, false))
	lr, pr := both[0], both[1]
	ldirs := procCgroupDirs(t, layout, lr.Status.PID)
	pdirs := procCgroupDirs(t, layout, pr.Status.PID)
	for c, d := range ldirs {
		if !strings.Contains(d, "/"+cgroup.StalePrefix+"ptest-") || !strings.HasPrefix(filepath.Base(d), "r-limited-") {
			t.Errorf("limited process %s cgroup %s: want <manager group>/r-limited-<uuid>", c, d)
		}
		if !strings.HasPrefix(filepath.Base(pdirs[c]), "e-plain-") {
			t.Errorf("plain process %s cgroup %s: want its own group", c, pdirs[c])
		}
	}
	if layout.Version == 1 {
		checkFile(t, filepath.Join(ldirs["cpu"], "cpu.cfs_quota_us"), "30000")
		checkFile(t, filepath.Join(ldirs["memory"], "memory.limit_in_bytes"), strconv.Itoa(128<<20))
		checkFile(t, filepath.Join(pdirs["cpu"], "cpu.cfs_quota_us"), "-1")
		if limited.Limits.ReadBPS != 0 {
			dev, _ := cg.BlockDevice(dir)
			checkFile(t, filepath.Join(ldirs["blkio"], "blkio.throttle.read_bps_device"), dev+" "+strconv.Itoa(8<<20))
		}
	} else {
		checkFile(t, filepath.Join(ldirs[""], "cpu.max"), "30000 100000")
		checkFile(t, filepath.Join(ldirs[""], "memory.max"), strconv.Itoa(128<<20))
	}
	for _, n := range []string{"r-limited", "e-plain"} {
		if _, err := m.Delete(n, ""); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, sub, n+" deleted", named(n, StateStopped, true))
	}
	for _, d := range append(mapValues(ldirs), mapValues(pdirs)...) {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left after delete: %v", d, err)
		}
	}
	if layout.Version == 1 {
		w := listenerSpec(t, "r-write", 1)
		w.Limits = cgroup.Limits{WriteBPS: 4 << 20, IOPath: dir}
		_, err := m.Create(w, Meta{Type: "replica"})
		if !errors.Is(err, ErrFailedPrecondition) || !strings.Contains(err.Error(), "write_bps/write_iops on cgroup v1") {
			t.Fatalf("v1 write limit: %v", err)
		}
	}
}

func TestLimitsRefusedWithoutCgroups(t *testing.T) {
	m := newOSManager(t, 5)
	m.cfg.CgroupsUnavailable = "started with --cgroups=false"
	s := listenerSpec(t, "r", 1)
	s.Limits = cgroup.Limits{CPUMillis: 100}
	_, err := m.Create(s, Meta{})
	if !errors.Is(err, ErrFailedPrecondition) || !strings.Contains(err.Error(), "runs without cgroups (started with --cgroups=false)") {
		t.Fatalf("limits without cgroups: %v", err)
	}
	s.Limits = cgroup.Limits{CPUMillis: 1}
	if _, err := m.Create(s, Meta{}); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "resource_limits: cpu_millis is 1") {
		t.Fatalf("bad limit: %v", err)
	}
	if m.PortsInUse() != 0 {
		t.Fatalf("%d ports held after refusals", m.PortsInUse())
	}
}

// procCgroupDirs maps controller ("" on v2) to the directory of pid's cgroup.
func procCgroupDirs(t *testing.T, l cgroup.Layout, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := cgroupPaths(string(self)), cgroupPaths(string(b))
	out := map[string]string{}
	if l.Version == 2 {
		rel, _ := filepath.Rel(mine[""], theirs[""])
		out[""] = filepath.Join(l.V2, rel)
		return out
	}
	for c, own := range l.V1 {
		rel, err := filepath.Rel(mine[c], theirs[c])
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("process %d %s cgroup %s not below ours %s", pid, c, theirs[c], mine[c])
		}
		out[c] = filepath.Join(own, rel)
	}
	return out
}

func cgroupPaths(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if p := strings.SplitN(line, ":", 3); len(p) == 3 {
			for _, c := range strings.Split(p[1], ",") {
				out[c] = p[2]
			}
		}
	}
	return out
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := strings.TrimSpace(string(b)); got != want {
		t.Errorf("%s = %q, want %q", path, got, want)
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestCgroupFailureWithoutLimits: when the process's group cannot be made
// (here its parent is no directory), a process without limits still runs,
// in the instance manager's cgroup; one with limits is refused.
func TestCgroupFailureWithoutLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts processes")
	}
	root := t.TempDir()
	own := filepath.Join(root, "im")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "cgroup.controllers"), []byte("cpu memory io\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cg, err := cgroup.New(cgroup.Options{Layout: cgroup.Layout{Version: 2, V2: own}, Name: "g", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(own, "g")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "g"), nil, 0o644); err != nil { // no directory: mkdir below fails
		t.Fatal(err)
	}
	m := newOSManager(t, 5)
	m.cfg.Cgroups = cg
	sub := m.Subscribe()
	defer sub.Close()
	if _, err := m.Create(listenerSpec(t, "plain", 1), Meta{}); err != nil {
		t.Fatalf("a process without limits must run without a cgroup of its own: %v", err)
	}
	waitEvent(t, sub, "plain running", named("plain", StateRunning, false))
	limited := listenerSpec(t, "limited", 1)
	limited.Limits = cgroup.Limits{CPUMillis: 100}
	if _, err := m.Create(limited, Meta{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("limits without a group: %v", err)
	}
}

package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const v1Mountinfo = `25 30 0:23 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
26 25 0:24 /kubepods/pod1/c1 /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu,cpuacct
27 25 0:25 /kubepods/pod1/c1 /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
28 25 0:26 /kubepods/pod1/c1 /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
29 25 0:27 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const v1Self = `9:name=systemd:/
7:blkio:/kubepods/pod1/c1
4:memory:/kubepods/pod1/c1
1:cpu,cpuacct:/kubepods/pod1/c1
0::/
`

func TestDetectLayout(t *testing.T) {
	l, err := DetectLayout([]byte(v1Mountinfo), []byte(v1Self), "/fake")
	if err != nil {
		t.Fatal(err)
	}
	if l.Version != 1 || l.V1["cpu"] != "/fake/sys/fs/cgroup/cpu" || l.V1["memory"] != "/fake/sys/fs/cgroup/memory" || l.V1["blkio"] != "/fake/sys/fs/cgroup/blkio" {
		t.Fatalf("v1 layout (container: mount root = own cgroup) = %+v", l)
	}
	host := "26 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
	l, err = DetectLayout([]byte(host), []byte("1:cpu:/lh/node-1\n"), "")
	if err != nil || l.V1["cpu"] != "/sys/fs/cgroup/cpu/lh/node-1" || len(l.V1) != 1 {
		t.Fatalf("v1 host layout = %+v, %v", l, err)
	}
	v2 := "30 25 0:27 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
	l, err = DetectLayout([]byte(v2), []byte("0::/system.slice/im.scope\n"), "/r")
	if err != nil || l.Version != 2 || l.V2 != "/r/sys/fs/cgroup/system.slice/im.scope" {
		t.Fatalf("v2 layout = %+v, %v", l, err)
	}
	if _, err := DetectLayout([]byte(v2), []byte("1:cpu:/x\n"), ""); err == nil {
		t.Fatal("no matching cgroup: want an error")
	}
	spaced := "30 25 0:26 /lh\\040x /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
	l, err = DetectLayout([]byte(spaced), []byte("1:cpu:/lh x/im\n"), "")
	if err != nil || l.V1["cpu"] != "/sys/fs/cgroup/cpu/im" {
		t.Fatalf("escaped root: layout = %+v, %v", l, err)
	}
}

// fakeV2 makes a cgroup v2 tree with the cpu, memory and io controllers and
// a block device 8:0 with partition 8:1.
func fakeV2(t *testing.T, controllers string) (root, own string) {
	root = t.TempDir()
	own = filepath.Join(root, "sys/fs/cgroup/im")
	must(t, os.MkdirAll(own, 0o755))
	must(t, os.WriteFile(filepath.Join(own, "cgroup.controllers"), []byte(controllers+"\n"), 0o644))
	for _, f := range []string{"cgroup.subtree_control", "cgroup.procs"} {
		must(t, os.WriteFile(filepath.Join(own, f), nil, 0o644))
	}
	disk := filepath.Join(root, "sys/devices/virtual/block/sda")
	must(t, os.MkdirAll(filepath.Join(disk, "sda1"), 0o755))
	must(t, os.WriteFile(filepath.Join(disk, "dev"), []byte("8:0\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(disk, "sda1", "partition"), []byte("1\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "sys/dev/block"), 0o755))
	must(t, os.Symlink(disk, filepath.Join(root, "sys/dev/block/8:0")))
	must(t, os.Symlink(filepath.Join(disk, "sda1"), filepath.Join(root, "sys/dev/block/8:1")))
	return root, own
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return strings.TrimSpace(string(b))
}

func TestV2FakeTree(t *testing.T) {
	root, own := fakeV2(t, "cpuset cpu io memory pids")
	partition := func(string) (uint64, error) { return unix.Mkdev(8, 1), nil }
	m, err := New(Options{Layout: Layout{Version: 2, V2: own}, Name: "g", Root: root, StatDev: partition})
	must(t, err)
	if got := read(t, filepath.Join(own, "cgroup.subtree_control")); got != "+cpu +memory +io" {
		t.Fatalf("own subtree_control = %q", got)
	}
	if got := read(t, filepath.Join(own, "g", "cgroup.subtree_control")); got != "+cpu +memory +io" {
		t.Fatalf("group dir subtree_control = %q", got)
	}
	l := Limits{CPUMillis: 250, MemoryBytes: 64 << 20, ReadBPS: 10 << 20, WriteBPS: 5 << 20, WriteIOPS: 100, IOPath: "/data"}
	g, err := m.Create("r1", l)
	must(t, err)
	dir := filepath.Join(own, "g", "r1")
	if got := read(t, filepath.Join(dir, "cpu.max")); got != "25000 100000" {
		t.Fatalf("cpu.max = %q", got)
	}
	if got := read(t, filepath.Join(dir, "memory.max")); got != "67108864" {
		t.Fatalf("memory.max = %q", got)
	}
	if got := read(t, filepath.Join(dir, "io.max")); got != "8:0 rbps=10485760 wbps=5242880 wiops=100" {
		t.Fatalf("io.max (partition 8:1 throttled on its disk 8:0) = %q", got)
	}
	must(t, g.Add(4242))
	if got := read(t, filepath.Join(dir, "cgroup.procs")); got != "4242" {
		t.Fatalf("cgroup.procs = %q", got)
	}
	if d := g.Dirs(); len(d) != 1 || d[0] != dir {
		t.Fatalf("Dirs = %v", d)
	}
	if _, err := m.Create("r1", l); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Create of an existing group: %v", err)
	}
	// Another instance manager's stale sweep removed the empty group
	// directory: Create makes it again, controllers delegated.
	must(t, os.RemoveAll(filepath.Join(own, "g")))
	if _, err := m.Create("r2", Limits{CPUMillis: 100}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(own, "g", "cgroup.subtree_control")); got != "+cpu +memory +io" {
		t.Fatalf("re-made group dir subtree_control = %q", got)
	}
}

func TestV2MissingControllersRefused(t *testing.T) {
	root, own := fakeV2(t, "cpu memory")
	m, err := New(Options{Layout: Layout{Version: 2, V2: own}, Name: "g", Root: root,
		StatDev: func(string) (uint64, error) { return unix.Mkdev(8, 0), nil }})
	must(t, err)
	_, err = m.Create("r1", Limits{ReadIOPS: 100, IOPath: "/data"})
	if !errors.Is(err, ErrNotEnforceable) || !strings.Contains(err.Error(), "read_bps/read_iops needs the io controller") {
		t.Fatalf("read_iops without io controller: %v", err)
	}
	if _, err := os.Stat(filepath.Join(own, "g", "r1")); !os.IsNotExist(err) {
		t.Fatalf("refused group left a directory: %v", err)
	}
	_, err = m.Create("r2", Limits{ReadBPS: 1 << 20, IOPath: "/tmpfs"})
	if !errors.Is(err, ErrNotEnforceable) {
		t.Fatalf("want refusal: %v", err)
	}
	m2, err := New(Options{Layout: Layout{Version: 2, V2: own}, Name: "g2", Root: root,
		StatDev: func(string) (uint64, error) { return unix.Mkdev(0, 42), nil }})
	must(t, err)
	if _, err := m2.Create("r3", Limits{CPUMillis: 100}); err != nil {
		t.Fatalf("cpu limit with the cpu controller: %v", err)
	}
	if _, err := m2.BlockDevice("/overlay"); !errors.Is(err, ErrNotEnforceable) || !strings.Contains(err.Error(), "0:42, which is no block device") {
		t.Fatalf("overlay device: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, c := range []struct {
		l    Limits
		want string
	}{
		{Limits{CPUMillis: 5}, "cpu_millis is 5, want 0 (unlimited) or at least 10"},
		{Limits{MemoryBytes: 1024}, "memory_bytes is 1024"},
		{Limits{ReadBPS: -1}, "read_bps is -1"},
		{Limits{WriteIOPS: 1}, "write_iops is 1"},
		{Limits{ReadBPS: 1 << 20}, "io_path is required"},
	} {
		if err := c.l.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.l, err, c.want)
		}
	}
	if err := (Limits{CPUMillis: 1000, MemoryBytes: 1 << 30, ReadIOPS: 500, IOPath: "/d"}).Validate(); err != nil {
		t.Fatal(err)
	}
	if !(Limits{IOPath: "/d"}).IsZero() || (Limits{CPUMillis: 10}).IsZero() {
		t.Fatal("IsZero")
	}
}

// TestV1Host makes real process groups on this host's cgroup v1 hierarchies
// (skipped elsewhere or without root): a sleeping process moved into a group
// with CPU, memory and read-bandwidth limits shows them in its cgroup files;
// write limits are refused; every directory is gone afterwards.
func TestV1Host(t *testing.T) {
	l, err := DetectHostLayout()
	if err != nil || l.Version != 1 || os.Geteuid() != 0 {
		t.Skipf("needs root on a cgroup v1 host (layout %+v, %v)", l, err)
	}
	m, err := New(Options{Layout: l, Name: StalePrefix + "test-" + strconv.Itoa(os.Getpid())})
	must(t, err)
	defer func() { must(t, m.Close()) }()
	dir := t.TempDir()
	if _, err := m.BlockDevice(dir); err != nil {
		t.Skipf("temp dir on no block device: %v", err)
	}
	_, err = m.Create("w", Limits{WriteBPS: 1 << 20, IOPath: dir})
	if !errors.Is(err, ErrNotEnforceable) || !strings.Contains(err.Error(), "cgroup v1") {
		t.Fatalf("v1 write limit: %v", err)
	}
	g, err := m.Create("r1", Limits{CPUMillis: 200, MemoryBytes: 64 << 20, ReadBPS: 4 << 20, ReadIOPS: 50, IOPath: dir})
	must(t, err)
	cmd := exec.Command("sleep", "30")
	must(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		must(t, g.Remove())
		for _, d := range g.Dirs() {
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				t.Errorf("%s left: %v", d, err)
			}
		}
	}()
	must(t, g.Add(cmd.Process.Pid))
	self := parseSelfCgroup([]byte(read(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/cgroup")))
	for _, c := range v1Controllers {
		if !strings.HasSuffix(self[c], "/r1") {
			t.Errorf("process %s cgroup %q, want .../r1", c, self[c])
		}
	}
	dev, _ := m.BlockDevice(dir)
	if d, err := m.BlockDevice(filepath.Join(dir, "replicas", "not-yet")); err != nil || d != dev {
		t.Fatalf("a data directory not made yet: %q %v, want its parent's disk %s", d, err, dev)
	}
	for file, want := range map[string]string{
		"cpu/cpu.cfs_quota_us": "20000", "cpu/cpu.cfs_period_us": "100000", "memory/memory.limit_in_bytes": "67108864",
		"blkio/blkio.throttle.read_bps_device": dev + " 4194304", "blkio/blkio.throttle.read_iops_device": dev + " 50",
	} {
		c, f, _ := strings.Cut(file, "/")
		if got := read(t, filepath.Join(m.bases[c], "r1", f)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

// TestV1CPULimitHolds: a busy loop in a group limited to 200m gets at most
// about a fifth of a CPU (its utime+stime over 1.5 s of wall time).
func TestV1CPULimitHolds(t *testing.T) {
	l, err := DetectHostLayout()
	if err != nil || l.Version != 1 || os.Geteuid() != 0 || testing.Short() {
		t.Skipf("needs root on a cgroup v1 host (layout %+v, %v)", l, err)
	}
	m, err := New(Options{Layout: l, Name: StalePrefix + "cpu-" + strconv.Itoa(os.Getpid())})
	must(t, err)
	defer func() { must(t, m.Close()) }()
	g, err := m.Create("busy", Limits{CPUMillis: 200})
	must(t, err)
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	must(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		must(t, g.Remove())
	}()
	must(t, g.Add(cmd.Process.Pid))
	start := cpuSeconds(t, cmd.Process.Pid)
	time.Sleep(1500 * time.Millisecond)
	used := cpuSeconds(t, cmd.Process.Pid) - start
	t.Logf("busy loop limited to 200m: %.2f s CPU in 1.5 s", used)
	if used > 0.45 {
		t.Fatalf("busy loop used %.2f s CPU in 1.5 s, limit 0.2 CPU (0.3 s)", used)
	}
}

// cpuSeconds is utime+stime of pid from /proc/PID/stat (clock ticks of 1/100 s).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b := read(t, "/proc/"+strconv.Itoa(pid)+"/stat")
	f := strings.Fields(b[strings.LastIndexByte(b, ')')+2:])
	u, err1 := strconv.Atoi(f[11])
	s, err2 := strconv.Atoi(f[12])
	if err1 != nil || err2 != nil {
		t.Fatalf("stat %q", b)
	}
	return float64(u+s) / 100
}

func TestSweepStale(t *testing.T) {
	own := t.TempDir()
	dead := filepath.Join(own, StalePrefix+"999999999-abcdef01")
	live := filepath.Join(own, StalePrefix+strconv.Itoa(os.Getppid())+"-abcdef02")
	must(t, os.MkdirAll(filepath.Join(dead, "r1-12345678"), 0o755))
	must(t, os.MkdirAll(filepath.Join(live, "r2-12345678"), 0o755))
	SweepStale(Layout{Version: 1, V1: map[string]string{"cpu": own}})
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("a dead instance manager's groups left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(live, "r2-12345678")); err != nil {
		t.Fatalf("a live instance manager's group removed: %v", err)
	}
}

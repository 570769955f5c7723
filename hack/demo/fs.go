package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/longhorn-go/longhorn/testbed/framework"
)

// fsDir is the demo's working directory inside the node's mount namespace:
// fuse/ (nbdfuse mount point, the export appears as fuse/disk), mnt/ (the
// ext4 mount point) and nbdfuse.pid.
const fsDir = "/tmp/longhorn-demo"

// nodeFS is the filesystem stack on the node: NBD export -> nbdfuse file ->
// loop device -> ext4.
type nodeFS struct {
	node string
	uri  string
	fuse *framework.NodeProcess
	loop string
}

// demoFiles are written on the filesystem: name and size in MiB.
var demoFiles = []struct {
	name string
	mib  int
}{{"small.bin", 1}, {"medium.bin", 8}, {"large.bin", 24}}

func (d *demo) makeFS(ctx context.Context) (string, error) {
	if d.o.skipFS {
		return "skipped (-skip-fs)", nil
	}
	if reason := fsUnavailable(ctx, d.c, d.nbd.Node); reason != "" {
		return "skipped: " + reason, nil
	}
	d.fs = &nodeFS{node: d.nbd.Node, uri: d.nbd.URI}
	var lines []string
	if err := d.fs.up(ctx, d.c, d.o.logDir, true); err != nil {
		return "", err
	}
	lines = append(lines, fmt.Sprintf("nbdfuse %s/fuse/disk <- %s (pid %d)", fsDir, d.nbd.URI, d.fs.fuse.PID),
		fmt.Sprintf("losetup --sizelimit %dM: %s; mkfs.ext4; mount %s %s/mnt", fsLimit>>20, d.fs.loop, d.fs.loop, fsDir))
	var script strings.Builder
	for _, f := range demoFiles {
		fmt.Fprintf(&script, "head -c %dM /dev/urandom > %s/mnt/%s && ", f.mib, fsDir, f.name)
	}
	fmt.Fprintf(&script, "cp /etc/os-release %s/mnt/os-release && sync && cd %s/mnt && sha256sum %s && df -h .", fsDir, fsDir, d.fileNames())
	t := time.Now()
	out, err := d.c.NodeShell(ctx, d.fs.node, script.String())
	if err != nil {
		return "", err
	}
	sums, df := parseSums(string(out))
	d.sums = sums
	lines = append(lines, fmt.Sprintf("wrote %d files, synced (%s):", len(sums), secs(time.Since(t))))
	lines = append(lines, sumLines(sums)...)
	lines = append(lines, df...)
	return strings.Join(lines, "\n"), nil
}

// fsUnavailable says why the machine cannot run the filesystem step, or "".
func fsUnavailable(ctx context.Context, c *framework.Cluster, node string) string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse (FUSE is not available)"
	}
	if _, err := c.NodeShell(ctx, node, "command -v nbdfuse && command -v fusermount3 && command -v mkfs.ext4 && losetup -f"); err != nil {
		return "missing nbdfuse (libnbd-bin), fusermount3 (fuse3), mkfs.ext4 or a free loop device: " + firstLine(err.Error())
	}
	return ""
}

// up starts nbdfuse, attaches a loop device, makes ext4 when mkfs is set,
// and mounts it.
func (f *nodeFS) up(ctx context.Context, c *framework.Cluster, logDir string, mkfs bool) error {
	if _, err := c.NodeShell(ctx, f.node, fmt.Sprintf("mkdir -p %s/fuse %s/mnt && rm -f %s/nbdfuse.pid", fsDir, fsDir, fsDir)); err != nil {
		return err
	}
	log := filepath.Join(logDir, "longhorn-demo-nbdfuse.log")
	p, err := c.NodeStart(ctx, f.node, log, "nbdfuse", "-P", fsDir+"/nbdfuse.pid", fsDir+"/fuse/disk", f.uri)
	if err != nil {
		return err
	}
	f.fuse = p
	err = pollUntil(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			b, _ := os.ReadFile(log)
			return false, fmt.Errorf("nbdfuse exited: %s", lastLines(string(b), 5))
		}
		_, err := c.NodeShell(ctx, f.node, "test -s "+fsDir+"/nbdfuse.pid")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("nbdfuse not ready: %w", err)
	}
	out, err := c.NodeShell(ctx, f.node, fmt.Sprintf("losetup -f --show --sizelimit %d %s/fuse/disk", fsLimit, fsDir))
	if err != nil {
		return err
	}
	f.loop = strings.TrimSpace(string(out))
	if !strings.HasPrefix(f.loop, "/dev/loop") {
		return fmt.Errorf("losetup printed %q, want /dev/loopN", f.loop)
	}
	script := fmt.Sprintf("mount %s %s/mnt", f.loop, fsDir)
	if mkfs {
		script = fmt.Sprintf("mkfs.ext4 -q -F -L longhorn-demo %s && ", f.loop) + script
	}
	_, err = c.NodeShell(ctx, f.node, script)
	return err
}

// down unmounts, detaches the loop device and ends nbdfuse; it keeps going
// past errors and returns the first.
func (f *nodeFS) down(ctx context.Context, c *framework.Cluster) error {
	var errs []error
	script := fmt.Sprintf("if mountpoint -q %s/mnt; then umount %s/mnt; fi", fsDir, fsDir)
	if _, err := c.NodeShell(ctx, f.node, script); err != nil {
		errs = append(errs, err)
	}
	if f.loop != "" {
		if _, err := c.NodeShell(ctx, f.node, "losetup -d "+f.loop); err != nil {
			errs = append(errs, err)
		}
		f.loop = ""
	}
	if _, err := c.NodeShell(ctx, f.node, fmt.Sprintf("if mountpoint -q %s/fuse; then fusermount3 -u %s/fuse; fi", fsDir, fsDir)); err != nil {
		errs = append(errs, err)
	}
	if f.fuse != nil {
		f.fuse.Stop(5 * time.Second)
		f.fuse = nil
	}
	return errors.Join(errs...)
}

func (d *demo) verifyFS(ctx context.Context) (string, error) {
	if d.fs == nil {
		return "skipped (no filesystem step)", nil
	}
	// Down and up again: a new nbdfuse, loop device and mount, so every
	// byte is read through the NBD frontend, not from a cache.
	if err := d.fs.down(ctx, d.c); err != nil {
		return "", err
	}
	if err := d.fs.up(ctx, d.c, d.o.logDir, false); err != nil {
		return "", err
	}
	t := time.Now()
	out, err := d.c.NodeShell(ctx, d.fs.node, fmt.Sprintf("e2fsck -fn %s >/dev/null && cd %s/mnt && sha256sum %s", d.fs.loop, fsDir, d.fileNames()))
	if err != nil {
		return "", err
	}
	got, _ := parseSums(string(out))
	var bad []string
	for name, want := range d.sums {
		if got[name] != want {
			bad = append(bad, fmt.Sprintf("%s: %s, want %s", name, got[name], want))
		}
	}
	if len(bad) > 0 || len(got) != len(d.sums) {
		return "", fmt.Errorf("%w: %s (files now %d, before %d)", framework.ErrMismatch, strings.Join(bad, "; "), len(got), len(d.sums))
	}
	return fmt.Sprintf("remounted %s (new nbdfuse + loop device): all %d sha256 sums match (%s)", d.fs.loop, len(got), secs(time.Since(t))), nil
}

func (d *demo) finishFS(ctx context.Context) (string, error) {
	if d.fs == nil {
		return "nothing to clean", nil
	}
	err := d.fs.down(ctx, d.c)
	d.fs = nil
	if err != nil {
		return "", err
	}
	_, err = d.c.NodeShell(ctx, d.o.node, "rm -rf "+fsDir)
	return "unmounted, loop device detached, nbdfuse ended", err
}

// cleanupFS runs at exit, also after a failure.
func (d *demo) cleanupFS() {
	if d.writer != nil {
		d.writer.p.Stop(5 * time.Second)
		d.writer = nil
	}
	if d.fs == nil || d.c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.fs.down(ctx, d.c); err != nil {
		fmt.Fprintf(os.Stderr, "cleanup of the demo filesystem on %s: %v\n", d.fs.node, err)
	}
}

// cleanNodeFS removes what an interrupted earlier run left on the node, top
// down: the dd writer, the ext4 mount, loop devices over the nbdfuse file
// (found by backing-file name, which works even when the FUSE daemon is
// gone), the FUSE mount, then nbdfuse itself.
func cleanNodeFS(ctx context.Context, c *framework.Cluster, node string) (string, error) {
	killed := killLeftovers("dd")
	script := fmt.Sprintf(`n=0
if grep -q " %[1]s/mnt " /proc/self/mountinfo; then umount %[1]s/mnt || umount -l %[1]s/mnt; n=$((n+1)); fi
for l in $(losetup -l -n -O NAME,BACK-FILE | awk -v f=%[1]s/fuse/disk 'index($0, f) {print $1}'); do losetup -d "$l" && n=$((n+1)); done
if grep -q " %[1]s/fuse " /proc/self/mountinfo; then fusermount3 -u %[1]s/fuse 2>/dev/null || umount -l %[1]s/fuse; n=$((n+1)); fi
echo $n`, fsDir)
	out, err := c.NodeShell(ctx, node, script)
	if err != nil {
		return "", err
	}
	killed += killLeftovers("nbdfuse")
	if _, err := c.NodeShell(ctx, node, "rm -rf "+fsDir); err != nil {
		return "", err
	}
	if n := strings.TrimSpace(string(out)); n != "0" || killed > 0 {
		return fmt.Sprintf("removed leftovers of an interrupted run in %s on %s: %d processes, %s mounts/loop devices", fsDir, node, killed, n), nil
	}
	return "", nil
}

// killLeftovers kills, by pid, the processes of an interrupted earlier run
// named prog (dd or nbdfuse) whose arguments name fsDir, and waits up to
// 5 s for them to go. It returns how many it killed.
func killLeftovers(prog string) int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if filepath.Base(argv[0]) == prog && isLeftover(argv) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return len(pids)
}

// isLeftover: dd or nbdfuse with an argument under fsDir.
func isLeftover(argv []string) bool {
	if b := filepath.Base(argv[0]); b != "dd" && b != "nbdfuse" {
		return false
	}
	for _, a := range argv[1:] {
		if strings.Contains(a, fsDir+"/") {
			return true
		}
	}
	return false
}

// fileNames lists the demo's files for sha256sum: those written in
// makeFS and, once it finished, the one written during the replica kill.
func (d *demo) fileNames() string {
	names := []string{"os-release"}
	for _, f := range demoFiles {
		names = append(names, f.name)
	}
	if _, ok := d.sums[writerFile]; ok {
		names = append(names, writerFile)
	}
	return strings.Join(names, " ")
}

// parseSums reads sha256sum(1) lines (then other lines, returned as is).
func parseSums(out string) (map[string]string, []string) {
	sums := map[string]string{}
	var rest []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && len(f[0]) == 64 {
			sums[f[1]] = f[0]
		} else if l != "" {
			rest = append(rest, l)
		}
	}
	return sums, rest
}

func sumLines(sums map[string]string) []string {
	var out []string
	for _, f := range demoFiles {
		out = append(out, fmt.Sprintf("  %s  %s (%d MiB)", sums[f.name], f.name, f.mib))
	}
	out = append(out, fmt.Sprintf("  %s  os-release", sums["os-release"]))
	return out
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

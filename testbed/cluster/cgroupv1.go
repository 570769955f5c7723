package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/testbed/cluster/nodeagent"
)

// cgroup v1: this VM mounts each controller as its own v1 hierarchy (and an
// empty cgroup2 at /sys/fs/cgroup/unified). Each real node's kubelet gets
// the cgroup root /lhcluster-<name>/node-N in every hierarchy; it must
// exist before the kubelet starts.

// requiredV1Controllers are the hierarchies kubelet's cgroupfs driver
// needs (cpuset, memory, cpu and cpuacct for pods, pids for limits).
var requiredV1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer"}

// v1Hierarchies returns controller (or name=...) -> mount point of every
// cgroup v1 hierarchy, from /proc/self/mountinfo.
func v1Hierarchies() map[string]string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu"
		l, r, ok := strings.Cut(sc.Text(), " - ")
		rf, lf := strings.Fields(r), strings.Fields(l)
		if !ok || len(rf) < 3 || rf[0] != "cgroup" || len(lf) < 5 {
			continue
		}
		for _, o := range strings.Split(rf[2], ",") {
			if o != "rw" && o != "ro" {
				m[o] = lf[4]
			}
		}
	}
	return m
}

// missingV1Controllers returns the required controllers that are neither a
// v1 hierarchy nor enabled in a cgroup2 root.
func missingV1Controllers() []string {
	h := v1Hierarchies()
	var v2 string
	if root := nodeagent.Cgroup2Root(); root != "" {
		b, _ := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
		v2 = " " + string(b) + " "
	}
	var miss []string
	for _, ctl := range requiredV1Controllers {
		name := ctl
		if ctl == "cpuacct" {
			name = "cpu" // cgroup2's cpu controller covers both
		}
		if h[ctl] == "" && !strings.Contains(v2, " "+name+" ") {
			miss = append(miss, ctl)
		}
	}
	return miss
}

// ensureV1CgroupRoot creates root (e.g. /lhcluster-lh/node-1) in every v1
// hierarchy, copying cpuset.cpus and cpuset.mems down from the parent (a
// new cpuset has none, and a task cannot join an empty cpuset).
func ensureV1CgroupRoot(root string) error {
	for ctl, mnt := range v1Hierarchies() {
		parts := strings.Split(strings.Trim(root, "/"), "/")
		dir := mnt
		for _, p := range parts {
			parent := dir
			dir = filepath.Join(dir, p)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
			if ctl == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if err := copyCgroupFile(parent, dir, f); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func copyCgroupFile(from, to, name string) error {
	cur, _ := os.ReadFile(filepath.Join(to, name))
	if strings.TrimSpace(string(cur)) != "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(from, name))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", filepath.Join(from, name), err)
	}
	if err := os.WriteFile(filepath.Join(to, name), b, 0o644); err != nil {
		return fmt.Errorf("cgroup %s: %w", filepath.Join(to, name), err)
	}
	return nil
}

// removeV1Cgroups kills the processes left in /<top> of every v1
// hierarchy (SIGKILL), then removes its directories, children first. It
// returns how many directories it removed.
// killCgroupProcs sends SIGKILL to every process listed in the dirs' cgroup.procs.
func killCgroupProcs(dirs []string) {
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// removeCgroupDir removes an empty cgroup directory, retrying while the
// kernel reports it busy, until deadline.
func removeCgroupDir(d string, deadline time.Time) error {
	for {
		err := os.Remove(d)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cgroup remove %s: %w", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func removeV1Cgroups(top string, timeout time.Duration) (int, error) {
	n := 0
	var errs []error
	for _, mnt := range v1Hierarchies() {
		base := filepath.Join(mnt, top)
		var dirs []string
		_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if len(dirs) == 0 {
			continue
		}
		killCgroupProcs(dirs)
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		deadline := time.Now().Add(timeout)
		for _, d := range dirs {
			if err := removeCgroupDir(d, deadline); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

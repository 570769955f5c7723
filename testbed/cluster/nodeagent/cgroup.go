package nodeagent

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
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup2Root returns where the cgroup2 hierarchy is mounted
// (/sys/fs/cgroup or, on hybrid hosts, /sys/fs/cgroup/unified), or "" when
// there is none. Processes are placed in cgroups so that a pod, a node or
// the whole cluster can be killed at once with cgroup.kill.
func Cgroup2Root() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 25 0:30 / /sys/fs/cgroup/unified rw,... - cgroup2 cgroup2 rw"
		l, r, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(r, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(l); len(f) >= 5 {
			return f[4]
		}
	}
	return ""
}

// Cgroup is a cgroup2 directory.
type Cgroup struct{ Path string }

// NewCgroup creates (or keeps) the cgroup at path.
func NewCgroup(path string) (*Cgroup, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", path, err)
	}
	return &Cgroup{Path: path}, nil
}

// Open returns a directory fd for SysProcAttr.CgroupFD (CLONE_INTO_CGROUP),
// which places a child in the cgroup before it runs a single instruction.
func (c *Cgroup) Open() (*os.File, error) {
	return os.Open(c.Path)
}

// Procs lists the pids in the cgroup and its descendants.
func (c *Cgroup) Procs() ([]int, error) {
	var pids []int
	err := filepath.WalkDir(c.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil // removed meanwhile
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return nil
	})
	return pids, err
}

// Kill kills every process in the cgroup and its descendants (cgroup.kill)
// and waits up to timeout until none is left. Do not start processes in a
// killed cgroup afterwards: the kernel (6.18 here) kills every child placed
// there with CLONE_INTO_CGROUP; Remove it and create a fresh one.
func (c *Cgroup) Kill(timeout time.Duration) error {
	if _, err := os.Stat(c.Path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(c.Path, "cgroup.kill"), []byte("1"), 0o644); err != nil {
		return fmt.Errorf("cgroup kill %s: %w", c.Path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		pids, err := c.Procs()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v still alive after kill", c.Path, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Remove kills the cgroup's processes and removes it and its descendants.
// A cgroup stays busy until its dead processes are reaped, so removal is
// retried until timeout.
func (c *Cgroup) Remove(timeout time.Duration) error {
	if err := c.Kill(timeout); err != nil {
		return err
	}
	var dirs []string
	_ = filepath.WalkDir(c.Path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) }) // children first
	deadline := time.Now().Add(timeout)
	for _, d := range dirs {
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				return fmt.Errorf("cgroup remove %s: %w", d, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

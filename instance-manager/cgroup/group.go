package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Group is the control group of one process: one directory per v1
// hierarchy, or one v2 directory.
type Group struct {
	dirs []string
}

// Dirs returns the group's directories.
func (g *Group) Dirs() []string { return append([]string(nil), g.dirs...) }

// Add moves the process pid (all its threads) into the group.
func (g *Group) Add(pid int) error {
	for _, d := range g.dirs {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes the group's directories; its process must have exited.
func (g *Group) Remove() error {
	var errs []error
	for _, d := range g.dirs {
		errs = append(errs, rmdir(d))
	}
	return errors.Join(errs...)
}

// Create makes the control group name (a directory name) with limits l.
// An error wrapping ErrNotEnforceable names the limit the host cannot
// enforce and why; nothing is created then.
func (m *Manager) Create(name string, l Limits) (*Group, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("cgroup name %q invalid", name)
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	files, err := m.limitFiles(l)
	if err != nil {
		return nil, err
	}
	g := &Group{}
	for c, base := range m.bases {
		if err := m.ensureBase(c, base); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		g.dirs = append(g.dirs, d)
	}
	for _, f := range files {
		path := filepath.Join(m.bases[f.base], name, f.file)
		if err := writeFile(path, f.value); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("%w: %v", ErrNotEnforceable, err)
		}
	}
	return g, nil
}

// ensureBase makes the group directory again when another instance
// manager's stale sweep removed it while it was empty (see removeStale).
func (m *Manager) ensureBase(controller, base string) error {
	if _, err := os.Stat(base); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if controller != "" {
		return nil
	}
	var enable []string
	for _, c := range v2Controllers {
		if m.controllers[c] {
			enable = append(enable, "+"+c)
		}
	}
	return enableV2(base, enable)
}

// limitFile is one value written into a group directory.
type limitFile struct{ base, file, value string }

// limitFiles returns the files that set l, or why l cannot be enforced.
func (m *Manager) limitFiles(l Limits) ([]limitFile, error) {
	v1 := m.Version() == 1
	var out []limitFile
	if l.CPUMillis > 0 {
		if err := m.need("cpu", "cpu_millis"); err != nil {
			return nil, err
		}
		quota, period := strconv.FormatInt(l.CPUMillis*cfsPeriodUS/1000, 10), strconv.Itoa(cfsPeriodUS)
		if v1 {
			out = append(out, limitFile{"cpu", "cpu.cfs_period_us", period}, limitFile{"cpu", "cpu.cfs_quota_us", quota})
		} else {
			out = append(out, limitFile{"", "cpu.max", quota + " " + period})
		}
	}
	if l.MemoryBytes > 0 {
		if err := m.need("memory", "memory_bytes"); err != nil {
			return nil, err
		}
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if v1 {
			out = append(out, limitFile{"memory", "memory.limit_in_bytes", v})
		} else {
			out = append(out, limitFile{"", "memory.max", v})
		}
	}
	if !l.HasIO() {
		return out, nil
	}
	io, err := m.ioFiles(l)
	return append(out, io...), err
}

// ioFiles sets the I/O limits on the whole disk below l.IOPath. cgroup v1
// throttles only I/O the process submits itself: a replica's writes go
// through the page cache and are written back by kernel threads outside its
// cgroup, so v1 refuses write limits; cgroup v2 charges writeback to the
// writer when the memory controller is on.
func (m *Manager) ioFiles(l Limits) ([]limitFile, error) {
	if err := m.checkIO(l); err != nil {
		return nil, err
	}
	dev, err := m.BlockDevice(l.IOPath)
	if err != nil {
		return nil, err
	}
	if m.Version() == 2 {
		var kv []string
		for _, p := range []struct {
			k string
			v int64
		}{{"rbps", l.ReadBPS}, {"wbps", l.WriteBPS}, {"riops", l.ReadIOPS}, {"wiops", l.WriteIOPS}} {
			if p.v > 0 {
				kv = append(kv, p.k+"="+strconv.FormatInt(p.v, 10))
			}
		}
		return []limitFile{{"", "io.max", dev + " " + strings.Join(kv, " ")}}, nil
	}
	var out []limitFile
	for _, p := range []struct {
		f string
		v int64
	}{{"read_bps_device", l.ReadBPS}, {"read_iops_device", l.ReadIOPS}} {
		if p.v > 0 {
			out = append(out, limitFile{"blkio", "blkio.throttle." + p.f, dev + " " + strconv.FormatInt(p.v, 10)})
		}
	}
	return out, nil
}

// checkIO refuses I/O limits the host's controllers cannot enforce.
func (m *Manager) checkIO(l Limits) error {
	writes := l.WriteBPS != 0 || l.WriteIOPS != 0
	field := "read_bps/read_iops"
	if writes {
		field = "write_bps/write_iops"
	}
	if m.Version() == 1 {
		if err := m.need("blkio", field); err != nil {
			return err
		}
		if writes {
			return notEnforceable("write_bps/write_iops on cgroup v1: the replica writes through the page cache, and v1 blkio does not charge writeback to the writer's cgroup (use a cgroup v2 host)")
		}
		return nil
	}
	if err := m.need("io", field); err != nil {
		return err
	}
	if writes {
		return m.need("memory", "write_bps/write_iops (writeback is charged through the memory controller)")
	}
	return nil
}

func (m *Manager) need(controller, field string) error {
	if m.controllers[controller] {
		return nil
	}
	return notEnforceable("%s needs the %s controller: %s", field, controller, m.missing[controller])
}

// BlockDevice returns "MAJOR:MINOR" of the whole disk holding path (or,
// while it does not exist yet, its nearest existing parent) (the
// disk of a partition; a loop or device-mapper device is a disk), or an
// ErrNotEnforceable error when the file system has no block device
// (overlay, tmpfs, NFS).
func (m *Manager) BlockDevice(path string) (string, error) {
	dev, err := m.opts.StatDev(path)
	// A replica's data directory is made by the replica itself: until then
	// the nearest existing parent (the disk's path) is on the same disk.
	for p := filepath.Clean(path); errors.Is(err, os.ErrNotExist) && p != filepath.Dir(p); {
		p = filepath.Dir(p)
		dev, err = m.opts.StatDev(p)
	}
	if err != nil {
		return "", fmt.Errorf("%w: I/O limits: %v", ErrNotEnforceable, err)
	}
	id := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	sys := filepath.Join(m.opts.Root, "/sys/dev/block", id)
	real, err := filepath.EvalSymlinks(sys)
	if err != nil {
		return "", notEnforceable("I/O limits: %s is on device %s, which is no block device (overlay, tmpfs or a network file system?)", path, id)
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(real), "dev"))
		if err != nil {
			return "", notEnforceable("I/O limits: disk of partition %s: %v", id, err)
		}
		id = strings.TrimSpace(string(b))
	}
	return id, nil
}

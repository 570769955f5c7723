package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// StalePrefix starts the name of every instance manager's group directory
// (StalePrefix + its PID + "-" + a random suffix, as instance managers in
// other PID namespaces may share the cgroup), so a restarted one can remove
// what a dead one left.
const StalePrefix = "longhorn-instances-"

// Options configure a Manager.
type Options struct {
	// Layout is where the instance manager's own control groups are.
	Layout Layout
	// Name is the directory made below them for the process groups;
	// default StalePrefix + the PID + "-" + 8 random hex digits.
	Name string
	// Root prefixes /sys paths (a fake tree in tests); "" on a host.
	Root string
	// StatDev returns the device number of the file system holding path;
	// default stat(2).
	StatDev func(path string) (uint64, error)
}

// Manager makes the per-process control groups of one instance manager.
type Manager struct {
	opts Options
	// bases maps a controller to the directory holding the process groups
	// (v1: one per hierarchy; v2: one directory under the key "").
	bases map[string]string
	// controllers are the usable controllers; missing ones say why.
	controllers map[string]bool
	missing     map[string]string
}

// New creates the group directory below the instance manager's own cgroups.
// A controller whose hierarchy is missing or not writable is recorded as
// unusable (Create refuses limits that need it); New fails only when no
// group can be made at all.
func New(opts Options) (*Manager, error) {
	if opts.Name == "" {
		var r [4]byte
		_, _ = rand.Read(r[:])
		opts.Name = StalePrefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:])
	}
	if opts.StatDev == nil {
		opts.StatDev = statDev
	}
	m := &Manager{opts: opts, bases: map[string]string{}, controllers: map[string]bool{}, missing: map[string]string{}}
	var err error
	switch opts.Layout.Version {
	case 1:
		err = m.setupV1()
	case 2:
		err = m.setupV2()
	default:
		err = fmt.Errorf("cgroup layout version %d", opts.Layout.Version)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Manager) setupV1() error {
	for _, c := range v1Controllers {
		own, ok := m.opts.Layout.V1[c]
		if !ok {
			m.missing[c] = "the cgroup v1 " + c + " hierarchy is not mounted"
			continue
		}
		removeStale(own)
		base := filepath.Join(own, m.opts.Name)
		if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			m.missing[c] = fmt.Sprintf("cannot create %s: %v", base, err)
			continue
		}
		m.bases[c], m.controllers[c] = base, true
	}
	if len(m.bases) == 0 {
		return fmt.Errorf("no cgroup v1 hierarchy is usable: %v", m.missing)
	}
	return nil
}

// setupV2 enables the cpu, memory and io controllers for the group
// directory. cgroup v2 lets only a cgroup without processes hand controllers
// to its children, so when the instance manager's own cgroup refuses, its
// processes move to a leaf "instance-manager" below it first.
func (m *Manager) setupV2() error {
	own := m.opts.Layout.V2
	removeStale(own)
	b, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	avail := strings.Fields(string(b))
	var enable []string
	for _, c := range v2Controllers {
		if slices.Contains(avail, c) {
			enable = append(enable, "+"+c)
		} else {
			m.missing[c] = "the cgroup v2 " + c + " controller is not available in " + own
		}
	}
	if err := enableV2(own, enable); err != nil {
		if err := moveProcs(own, filepath.Join(own, "instance-manager")); err != nil {
			return fmt.Errorf("cgroup v2: move the instance manager to a leaf: %w", err)
		}
		if err := enableV2(own, enable); err != nil {
			return fmt.Errorf("cgroup v2: enable %v in %s: %w", enable, own, err)
		}
	}
	base := filepath.Join(own, m.opts.Name)
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	if err := enableV2(base, enable); err != nil {
		return fmt.Errorf("cgroup v2: enable %v in %s: %w", enable, base, err)
	}
	m.bases[""] = base
	for _, c := range enable {
		m.controllers[c[1:]] = true
	}
	return nil
}

func enableV2(dir string, enable []string) error {
	if len(enable) == 0 {
		return nil
	}
	return writeFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(enable, " "))
}

// moveProcs moves every process of cgroup from into the leaf to (made if needed).
func moveProcs(from, to string) error {
	if err := os.Mkdir(to, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	b, err := os.ReadFile(filepath.Join(from, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, pid := range strings.Fields(string(b)) {
		if err := writeFile(filepath.Join(to, "cgroup.procs"), pid); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
	}
	return nil
}

// Version is the cgroup version in use (1 or 2).
func (m *Manager) Version() int { return m.opts.Layout.Version }

// Usable reports whether controller ("cpu", "memory", "blkio" or "io") can
// be used, and why not.
func (m *Manager) Usable(controller string) (bool, string) {
	return m.controllers[controller], m.missing[controller]
}

// Close removes the group directory (its process groups must be gone).
func (m *Manager) Close() error {
	var errs []error
	for _, b := range m.bases {
		errs = append(errs, rmdir(b))
	}
	return errors.Join(errs...)
}

// removeStale removes the group directories, and their empty process
// groups, that instance managers no longer running left in own. A live
// instance manager of another PID namespace that looks dead loses only
// empty directories: groups with processes cannot be removed, and Create
// makes a missing group directory again.
func removeStale(own string) {
	ents, _ := os.ReadDir(own)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), StalePrefix)
		pid, _, _ := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || !e.IsDir() || syscall.Kill(n, 0) == nil || n == os.Getpid() {
			continue
		}
		dir := filepath.Join(own, e.Name())
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				_ = os.Remove(filepath.Join(dir, s.Name()))
			}
		}
		_ = os.Remove(dir)
	}
}

// rmdir removes a cgroup directory, retrying while its last task is still
// being torn down (EBUSY for a moment after the process was reaped).
func rmdir(dir string) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func writeFile(path, value string) error {
	// O_CREATE: a cgroupfs refuses to create files (a missing controller
	// file stays an error); a fake tree in tests gets them.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

func statDev(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Dev, nil
}

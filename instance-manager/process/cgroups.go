package process

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
)

// isolate makes the control group of one run of spec (nil without
// Config.Cgroups and without limits). Limits the host cannot enforce are
// ErrFailedPrecondition naming the limit and the reason.
func (m *Manager) isolate(spec Spec, uuid string) (*cgroup.Group, error) {
	if m.cfg.Cgroups == nil {
		if !spec.Limits.IsZero() {
			return nil, fmt.Errorf("%w: process %q: resource limits cannot be enforced: this instance manager runs without cgroups (%s)",
				ErrFailedPrecondition, spec.Name, m.cfg.CgroupsUnavailable)
		}
		return nil, nil
	}
	g, err := m.cfg.Cgroups.Create(cgroupName(spec.Name, uuid), spec.Limits)
	if errors.Is(err, cgroup.ErrNotEnforceable) {
		return nil, fmt.Errorf("%w: process %q: %v", ErrFailedPrecondition, spec.Name, err)
	}
	if err != nil && spec.Limits.IsZero() {
		// Nothing to enforce: run it in the instance manager's cgroup.
		m.cfg.Logger.WithError(err).WithField("process", spec.Name).Warn("no cgroup of its own for the process")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("process %q: %w", spec.Name, err)
	}
	return g, nil
}

// joinCgroup moves a just started process into its group and returns the
// group. On failure the group is removed; a process with limits is killed
// and reaped (its limits would not hold), one without keeps running in the
// instance manager's cgroup (nil group, nil error).
func (m *Manager) joinCgroup(run Running, g *cgroup.Group, spec Spec, log io.Writer) (*cgroup.Group, error) {
	err := g.Add(run.PID())
	if err == nil {
		fmt.Fprintf(log, "=== instance manager: process %d in cgroup %v\n", run.PID(), g.Dirs())
		return g, nil
	}
	if spec.Limits.IsZero() {
		fmt.Fprintf(log, "=== instance manager: process %d stays in the instance manager's cgroup: %v\n", run.PID(), err)
		_ = g.Remove()
		return nil, nil
	}
	_ = run.Signal(syscall.SIGKILL)
	_ = run.Wait()
	_ = g.Remove()
	return nil, fmt.Errorf("%w: cgroup: %v", ErrFailedPrecondition, err)
}

// cgroupName is the group directory of one run: the process name (cut to
// fit a file name) and the run's UUID prefix, since a replace runs two
// processes of one name at once.
func cgroupName(name, uuid string) string {
	if len(name) > 200 {
		name = name[:200]
	}
	return name + "-" + uuid[:8]
}

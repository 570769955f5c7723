// Package cgroup gives every engine and replica process of an instance
// manager its own control group below the instance manager's, and applies
// optional per-process resource limits there: CPU (a CFS quota), memory, and
// disk read/write bandwidth and IOPS on the block device a replica's data
// sits on. It works on cgroup v1 (one hierarchy per controller, as this
// project's VM mounts them) and on cgroup v2 (the unified hierarchy). A limit
// the host cannot enforce is an error naming the limit and the reason; it is
// never dropped.
package cgroup

import (
	"errors"
	"fmt"
)

// ErrNotEnforceable wraps every error about a limit the host cannot enforce.
var ErrNotEnforceable = errors.New("resource limit cannot be enforced")

// Limits are the resource limits of one process. Zero means unlimited.
type Limits struct {
	// CPUMillis is CPU time in thousandths of a CPU (500 = half a CPU).
	CPUMillis int64
	// MemoryBytes caps the process's memory, page cache included.
	MemoryBytes int64
	// ReadBPS and WriteBPS cap bytes per second on the block device of IOPath.
	ReadBPS, WriteBPS int64
	// ReadIOPS and WriteIOPS cap operations per second on that device.
	ReadIOPS, WriteIOPS int64
	// IOPath is a directory on the disk the I/O limits apply to (a replica's
	// data directory); required when any I/O limit is set.
	IOPath string
}

// Bounds of the limits: below them a process cannot run.
const (
	// MinCPUMillis is the smallest CPU limit (the kernel's minimum CFS quota
	// is 1 ms per 100 ms period).
	MinCPUMillis = 10
	// MinMemoryBytes is the smallest memory limit (16 MiB).
	MinMemoryBytes = 16 << 20
	// MinBPS is the smallest bandwidth limit (1 MiB/s).
	MinBPS = 1 << 20
	// MinIOPS is the smallest IOPS limit.
	MinIOPS = 10
	// MaxCPUMillis is the largest CPU limit (1000 CPUs), so the quota
	// cannot overflow.
	MaxCPUMillis = 1_000_000
	// cfsPeriodUS is the CFS period the CPU quota is expressed against.
	cfsPeriodUS = 100000
)

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} || l == Limits{IOPath: l.IOPath} }

// HasIO reports whether an I/O limit is set.
func (l Limits) HasIO() bool {
	return l.ReadBPS != 0 || l.WriteBPS != 0 || l.ReadIOPS != 0 || l.WriteIOPS != 0
}

// Validate checks each limit against its bound; the error names the field.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name     string
		v, least int64
	}{
		{"cpu_millis", l.CPUMillis, MinCPUMillis}, {"memory_bytes", l.MemoryBytes, MinMemoryBytes},
		{"read_bps", l.ReadBPS, MinBPS}, {"write_bps", l.WriteBPS, MinBPS},
		{"read_iops", l.ReadIOPS, MinIOPS}, {"write_iops", l.WriteIOPS, MinIOPS},
	} {
		if f.v != 0 && f.v < f.least {
			return fmt.Errorf("%s is %d, want 0 (unlimited) or at least %d", f.name, f.v, f.least)
		}
	}
	if l.CPUMillis > MaxCPUMillis {
		return fmt.Errorf("cpu_millis is %d, at most %d (1000 CPUs)", l.CPUMillis, MaxCPUMillis)
	}
	if l.HasIO() && l.IOPath == "" {
		return errors.New("io_path is required with an I/O limit (the directory whose disk is throttled)")
	}
	return nil
}

func notEnforceable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotEnforceable, fmt.Sprintf(format, args...))
}

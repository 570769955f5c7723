// Package procstat reads /proc/PID/stat (proc(5)) for the test bed: the
// process state, parent and start time that process checks need.
package procstat

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// Stat is the part of /proc/PID/stat the test bed uses.
type Stat struct {
	// State is field 3, one letter: R, S, D, Z, T, ...
	State string
	// PPID is field 4, the parent's process ID.
	PPID int
	// StartTime is field 22, clock ticks after boot; 0 when the line is
	// shorter than that.
	StartTime uint64
	// UTime and STime are fields 14 and 15, the CPU time spent in user and
	// kernel mode, in clock ticks (ClockTicks per second); 0 when the line
	// is shorter than that.
	UTime, STime uint64
}

// ClockTicks is the unit of the stat times (sysconf(_SC_CLK_TCK), 100 on
// every Linux architecture Go supports).
const ClockTicks = 100

// ErrFormat is returned for a line that is not a /proc/PID/stat line.
var ErrFormat = errors.New("procstat: not a /proc/PID/stat line")

// Parse parses one /proc/PID/stat line. Field 2 (comm, in parentheses) may
// hold spaces and parentheses, so fields are counted after the last ')'.
// Errors: ErrFormat when there is no ')' or no state and ppid after it.
func Parse(line string) (Stat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return Stat{}, ErrFormat
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 2 {
		return Stat{}, ErrFormat
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, ErrFormat
	}
	st := Stat{State: f[0], PPID: ppid}
	if len(f) > 12 {
		u, err1 := strconv.ParseUint(f[11], 10, 64)
		k, err2 := strconv.ParseUint(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return Stat{}, ErrFormat
		}
		st.UTime, st.STime = u, k
	}
	if len(f) > 19 {
		if st.StartTime, err = strconv.ParseUint(f[19], 10, 64); err != nil {
			return Stat{}, ErrFormat
		}
	}
	return st, nil
}

// Read reads and parses /proc/PID/stat. Errors: the file's (a process that
// is gone gives an fs.ErrNotExist error) or ErrFormat.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(string(b))
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	st, err := Read(pid)
	return err == nil && st.State != "Z"
}

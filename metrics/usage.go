package metrics

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/longhorn-go/longhorn/internal/procstat"
)

// UsageMeter measures the CPU and memory use of process trees from a proc
// file system (the manager pod mounts the host's at /host/proc): CPU as
// millicpu over the time since the previous measurement of the same key
// (the first one: since the tree's root started), memory as the sum of the
// processes' resident sets (VmRSS).
type UsageMeter struct {
	// Root is the proc file system ("/proc" when empty).
	Root string
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu   sync.Mutex
	last map[string]cpuSample
}

// cpuSample is the CPU time of a tree at a wall time.
type cpuSample struct {
	ticks uint64
	at    time.Time
}

// Usage is what one measurement found.
type Usage struct {
	MilliCPU    float64
	MemoryBytes uint64
}

// proc is one process of the proc file system.
type procEntry struct {
	pid  int
	stat procstat.Stat
	argv []string
}

func (m *UsageMeter) root() string {
	if m.Root == "" {
		return "/proc"
	}
	return m.Root
}

func (m *UsageMeter) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

// processes reads every process's stat and argv.
func (m *UsageMeter) processes() ([]procEntry, error) {
	ents, err := os.ReadDir(m.root())
	if err != nil {
		return nil, err
	}
	var out []procEntry
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.root(), e.Name(), "stat"))
		if err != nil {
			continue
		}
		st, err := procstat.Parse(string(b))
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(m.root(), e.Name(), "cmdline"))
		out = append(out, procEntry{pid: pid, stat: st, argv: strings.Split(string(bytes.TrimRight(cmd, "\x00")), "\x00")})
	}
	return out, nil
}

// FindInstanceManager returns the PID (in Root's namespace) of the
// `longhorn instance-manager` process listening on podIP, or 0.
func (m *UsageMeter) FindInstanceManager(podIP string) int {
	procs, err := m.processes()
	if err != nil || podIP == "" {
		return 0
	}
	for _, p := range procs {
		if len(p.argv) < 2 || filepath.Base(p.argv[0]) != "longhorn" || p.argv[1] != "instance-manager" {
			continue
		}
		for i, a := range p.argv {
			v, ok := strings.CutPrefix(a, "--listen=")
			if !ok && a == "--listen" && i+1 < len(p.argv) {
				v, ok = p.argv[i+1], true
			}
			if ok && strings.HasPrefix(v, podIP+":") {
				return p.pid
			}
		}
	}
	return 0
}

// Measure measures the tree of pid (pid and its descendants); key names
// the tree across measurements. ok is false when pid is not there.
func (m *UsageMeter) Measure(key string, pid int) (Usage, bool) {
	procs, err := m.processes()
	if err != nil {
		return Usage{}, false
	}
	tree := descendants(procs, pid)
	if len(tree) == 0 {
		return Usage{}, false
	}
	var u Usage
	var ticks uint64
	for _, p := range tree {
		ticks += p.stat.UTime + p.stat.STime
		if b, err := os.ReadFile(filepath.Join(m.root(), strconv.Itoa(p.pid), "status")); err == nil {
			var mem procstat.Mem
			procstat.ParseStatus(string(b), &mem)
			u.MemoryBytes += mem.RSS << 10 // KiB
		}
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]cpuSample{}
	}
	prev, seen := m.last[key]
	if !seen {
		prev = cpuSample{at: now.Add(-m.age(tree[0]))}
	}
	m.last[key] = cpuSample{ticks: ticks, at: now}
	if dt := now.Sub(prev.at).Seconds(); dt > 0 && ticks >= prev.ticks {
		u.MilliCPU = float64(ticks-prev.ticks) / procstat.ClockTicks / dt * 1000
	}
	return u, true
}

// age is how long p has run (from Root/uptime and its start time).
func (m *UsageMeter) age(p procEntry) time.Duration {
	b, err := os.ReadFile(filepath.Join(m.root(), "uptime"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return time.Duration((up - float64(p.stat.StartTime)/procstat.ClockTicks) * float64(time.Second))
}

// descendants returns pid's entry first, then every process below it.
func descendants(procs []procEntry, pid int) []procEntry {
	children := map[int][]procEntry{}
	var root *procEntry
	for i := range procs {
		children[procs[i].stat.PPID] = append(children[procs[i].stat.PPID], procs[i])
		if procs[i].pid == pid {
			root = &procs[i]
		}
	}
	if root == nil {
		return nil
	}
	out := []procEntry{*root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].pid]...)
	}
	return out
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/internal/procstat"
)

// Sample is one process's state at one moment; sizes in KiB.
type Sample struct {
	Mem        procstat.Mem `json:"mem_kib"`
	FDs        int          `json:"fds"`
	Goroutines int          `json:"goroutines"` // from --pprof-listen; -1 if unread
	CPUPct     float64      `json:"cpu_pct"`    // % of one core over the window
}

// cpuTicks is utime+stime of pid in clock ticks.
func cpuTicks(pid int) (uint64, error) {
	st, err := procstat.Read(pid)
	return st.UTime + st.STime, err
}

// cpuWindow returns the CPU ticks of every pid now; call its result after
// the window for each pid's CPU use in % of one core.
func cpuWindow(pids []int) func() map[int]float64 {
	t0 := time.Now()
	start := map[int]uint64{}
	for _, p := range pids {
		if t, err := cpuTicks(p); err == nil {
			start[p] = t
		}
	}
	return func() map[int]float64 {
		secs := time.Since(t0).Seconds()
		out := map[int]float64{}
		for p, t := range start {
			if t1, err := cpuTicks(p); err == nil && secs > 0 {
				out[p] = float64(t1-t) / procstat.ClockTicks / secs * 100
			}
		}
		return out
	}
}

// sampleProc reads pid's memory, descriptors and (from pprofAddr) goroutines.
func sampleProc(ctx context.Context, pid int, pprofAddr string) (Sample, error) {
	m, err := procstat.ReadMem(pid)
	if err != nil {
		return Sample{}, err
	}
	fds, err := procstat.OpenFDs(pid)
	if err != nil {
		return Sample{}, err
	}
	g, err := goroutines(ctx, pprofAddr)
	if err != nil {
		g = -1
	}
	return Sample{Mem: m, FDs: fds, Goroutines: g}, nil
}

// goroutines reads the goroutine count from a net/http/pprof endpoint
// (the first line of /debug/pprof/goroutine?debug=1).
func goroutines(ctx context.Context, addr string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/goroutine?debug=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, err
	}
	return parseGoroutineHeader(line)
}

// parseGoroutineHeader parses "goroutine profile: total N".
func parseGoroutineHeader(line string) (int, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("not a goroutine profile header: %q", line)
	}
	return strconv.Atoi(rest)
}

// loadAvg is the first three fields of /proc/loadavg, the machine's load
// next to every number (the CPU is shared).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Agg summarises samples of one role (replica or engine): means, and the
// largest RSS.
type Agg struct {
	N          int     `json:"n"`
	RSSMiB     float64 `json:"rss_mib"`
	MaxRSSMiB  float64 `json:"max_rss_mib"`
	PSSMiB     float64 `json:"pss_mib"`
	USSMiB     float64 `json:"uss_mib"`
	AnonMiB    float64 `json:"anon_mib"`
	FileMiB    float64 `json:"file_mib"`
	HWMMiB     float64 `json:"peak_rss_mib"`
	FDs        float64 `json:"fds"`
	Threads    float64 `json:"threads"`
	Goroutines float64 `json:"goroutines"`
	CPUPct     float64 `json:"cpu_pct"`
}

// aggregate summarises ss (all of one role).
func aggregate(ss []Sample) Agg {
	a := Agg{N: len(ss)}
	if len(ss) == 0 {
		return a
	}
	const mib = 1024.0
	for _, s := range ss {
		m := s.Mem
		a.RSSMiB += float64(m.RSS) / mib
		a.MaxRSSMiB = max(a.MaxRSSMiB, float64(m.RSS)/mib)
		a.PSSMiB += float64(m.PSS) / mib
		a.USSMiB += float64(m.Unique()) / mib
		a.AnonMiB += float64(m.Anon) / mib
		a.FileMiB += float64(m.File) / mib
		a.HWMMiB += float64(m.HWM) / mib
		a.FDs += float64(s.FDs)
		a.Threads += float64(m.Threads)
		a.Goroutines += float64(s.Goroutines)
		a.CPUPct += s.CPUPct
	}
	n := float64(len(ss))
	for _, p := range []*float64{&a.RSSMiB, &a.PSSMiB, &a.USSMiB, &a.AnonMiB, &a.FileMiB, &a.HWMMiB, &a.FDs, &a.Threads, &a.Goroutines, &a.CPUPct} {
		*p /= n
	}
	return a
}

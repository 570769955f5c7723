package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Per-I/O cost of every server process of a row, always measured: CPU time,
// time spent runnable but waiting for a CPU (the machine's load, not ours),
// and context switches. Unlike IOPS on a shared machine these hardly depend on
// what else runs, so they are what to compare while the machine is busy.
// Sources: /proc/PID/task/*/schedstat (run ns, runqueue wait ns, slices) and
// /proc/PID/task/*/status (voluntary_ctxt_switches, nonvoluntary_ctxt_switches),
// summed over the process's threads (threads that exit in between are lost).

// ProcCost is one process's usage; per I/O after scale.
type ProcCost struct {
	CPUus  float64 `json:"cpu_us"`    // on-CPU time, microseconds
	WaitUS float64 `json:"runq_us"`   // runnable but not running, microseconds
	Vol    float64 `json:"vol_csw"`   // voluntary context switches (sleeps)
	Invol  float64 `json:"invol_csw"` // involuntary context switches (preemptions)
}

func (c ProcCost) sub(d ProcCost) ProcCost {
	return ProcCost{c.CPUus - d.CPUus, c.WaitUS - d.WaitUS, c.Vol - d.Vol, c.Invol - d.Invol}
}

func (c ProcCost) scale(f float64) ProcCost {
	return ProcCost{c.CPUus * f, c.WaitUS * f, c.Vol * f, c.Invol * f}
}

func (c ProcCost) String() string {
	return fmt.Sprintf("cpu %6.1f us, runq wait %6.1f us, ctxsw %5.2f vol %5.2f invol", c.CPUus, c.WaitUS, c.Vol, c.Invol)
}

// readProcCost sums the usage of every thread of pid.
func readProcCost(pid int) (ProcCost, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		return ProcCost{}, fmt.Errorf("no tasks for pid %d", pid)
	}
	var c ProcCost
	for _, t := range tasks {
		if b, err := os.ReadFile(filepath.Join(t, "schedstat")); err == nil {
			f := strings.Fields(string(b))
			if len(f) >= 2 {
				run, _ := strconv.ParseFloat(f[0], 64)
				wait, _ := strconv.ParseFloat(f[1], 64)
				c.CPUus += run / 1e3
				c.WaitUS += wait / 1e3
			}
		}
		if b, err := os.ReadFile(filepath.Join(t, "status")); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				k, v, _ := strings.Cut(sc.Text(), ":")
				n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				switch k {
				case "voluntary_ctxt_switches":
					c.Vol += n
				case "nonvoluntary_ctxt_switches":
					c.Invol += n
				}
			}
		}
	}
	return c, nil
}

// measureCosts samples every process after delay and again after d; the
// differences by process name arrive on the channel.
func measureCosts(ctx context.Context, procs []Process, delay, d time.Duration) <-chan map[string]ProcCost {
	ch := make(chan map[string]ProcCost, 1)
	go func() {
		defer close(ch)
		sample := func() map[string]ProcCost {
			m := map[string]ProcCost{}
			for _, p := range procs {
				if c, err := readProcCost(p.Pid); err == nil {
					m[p.Name] = c
				}
			}
			return m
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		before := sample()
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		out := map[string]ProcCost{}
		for name, c := range sample() {
			if b, ok := before[name]; ok {
				out[name] = c.sub(b)
			}
		}
		ch <- out
	}()
	return ch
}

// printCosts prints one line per process of a row: its cost per I/O.
func printCosts(w io.Writer, key string, costs map[string]ProcCost) {
	names := make([]string, 0, len(costs))
	for n := range costs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "       (%s) %-11s per I/O: %s\n", key, n, costs[n])
	}
}

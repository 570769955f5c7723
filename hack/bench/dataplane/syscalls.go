package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Syscall counting (-syscalls): while a job is measured, `perf stat` counts
// the system calls of the row's server processes, reported per fio I/O. The
// performance notes put a syscall at ~1.5 us on these machines, so this is the
// first thing to look at when a row is slow.

// syscallEvents are the per-syscall tracepoints counted besides the total.
var syscallEvents = []string{
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
	"recvfrom", "sendto", "recvmsg", "sendmsg", "futex", "epoll_pwait", "epoll_wait",
	"nanosleep", "fdatasync", "fsync", "io_uring_enter", "sched_yield",
}

// SyscallCounts maps a syscall name ("total" for all) to its count.
type SyscallCounts map[string]float64

// countSyscalls runs one perf stat per process for d (after waiting delay);
// the counts by process name arrive on the channel (a process whose perf
// failed is missing).
func countSyscalls(ctx context.Context, procs []Process, delay, d time.Duration) <-chan map[string]SyscallCounts {
	ch := make(chan map[string]SyscallCounts, 1)
	go func() {
		defer close(ch)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		events := []string{"raw_syscalls:sys_enter"}
		for _, e := range syscallEvents {
			events = append(events, "syscalls:sys_enter_"+e)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		out := map[string]SyscallCounts{}
		for _, p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := []string{"stat", "-x,", "-e", strings.Join(events, ","), "-p", strconv.Itoa(p.Pid),
					"--", "sleep", strconv.FormatFloat(d.Seconds(), 'f', 1, 64)}
				res, err := exec.CommandContext(ctx, "perf", args...).CombinedOutput()
				if err != nil {
					return
				}
				mu.Lock()
				out[p.Name] = parsePerfStat(res)
				mu.Unlock()
			}()
		}
		wg.Wait()
		ch <- out
	}()
	return ch
}

// parsePerfStat reads `perf stat -x,` lines: count,unit,event,...
func parsePerfStat(out []byte) SyscallCounts {
	c := SyscallCounts{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) < 3 {
			continue
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		switch name := f[2]; {
		case name == "raw_syscalls:sys_enter":
			c["total"] = n
		case strings.HasPrefix(name, "syscalls:sys_enter_"):
			c[strings.TrimPrefix(name, "syscalls:sys_enter_")] = n
		}
	}
	return c
}

// scale returns the counts multiplied by f (1/I/Os gives counts per I/O).
func (c SyscallCounts) scale(f float64) SyscallCounts {
	out := SyscallCounts{}
	for k, v := range c {
		out[k] = v * f
	}
	return out
}

// String formats per-I/O counts: "total 4.10: pread64 1.00, writev 0.90, ...".
func (c SyscallCounts) String() string {
	if len(c) == 0 {
		return "-"
	}
	type kv struct {
		k string
		v float64
	}
	var top []kv
	for k, v := range c {
		if k != "total" && v >= 0.01 {
			top = append(top, kv{k, v})
		}
	}
	sort.Slice(top, func(i, j int) bool { return top[i].v > top[j].v })
	parts := make([]string, 0, len(top))
	for _, e := range top {
		parts = append(parts, fmt.Sprintf("%s %.2f", e.k, e.v))
	}
	return fmt.Sprintf("total %.2f: %s", c["total"], strings.Join(parts, ", "))
}

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

// countSyscalls runs perf stat on pids for d (after waiting delay) and returns
// the counts; the result arrives on the channel (nil on failure).
func countSyscalls(ctx context.Context, pids []int, delay, d time.Duration) <-chan SyscallCounts {
	ch := make(chan SyscallCounts, 1)
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
		var ps []string
		for _, p := range pids {
			ps = append(ps, strconv.Itoa(p))
		}
		args := []string{"stat", "-x,", "-e", strings.Join(events, ","), "-p", strings.Join(ps, ","),
			"--", "sleep", strconv.FormatFloat(d.Seconds(), 'f', 1, 64)}
		out, err := exec.CommandContext(ctx, "perf", args...).CombinedOutput()
		if err != nil {
			return
		}
		ch <- parsePerfStat(out)
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

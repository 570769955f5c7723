// Package perfstat samples what a process spent, for benchmarks that pin
// costs per operation rather than time: CPU time, context switches and
// read/write system calls. On a shared, loaded machine these hardly move with
// the load, unlike wall-clock throughput.
//
// Sources (Linux proc(5)): /proc/PID/task/*/schedstat (on-CPU and runqueue
// nanoseconds), /proc/PID/task/*/status (voluntary_ctxt_switches,
// nonvoluntary_ctxt_switches), /proc/PID/io (syscr, syscw: read- and
// write-like system calls). Sums are over the threads alive at sampling time.
package perfstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Sample is a process's cumulative usage at one moment.
type Sample struct {
	CPUNs    float64 // on-CPU time, nanoseconds
	RunqNs   float64 // runnable but waiting for a CPU, nanoseconds
	Vol      float64 // voluntary context switches (the thread slept)
	Invol    float64 // involuntary context switches (preempted)
	RWCalls  float64 // read- and write-like system calls (syscr + syscw)
	Complete bool    // every source could be read
}

// Sub returns s - t, field by field.
func (s Sample) Sub(t Sample) Sample {
	return Sample{s.CPUNs - t.CPUNs, s.RunqNs - t.RunqNs, s.Vol - t.Vol, s.Invol - t.Invol,
		s.RWCalls - t.RWCalls, s.Complete && t.Complete}
}

// Self samples the calling process.
func Self() Sample { return Proc(os.Getpid()) }

// Proc samples process pid; fields it cannot read stay 0 and Complete is false.
func Proc(pid int) Sample {
	s := Sample{Complete: true}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if len(tasks) == 0 {
		s.Complete = false
	}
	for _, t := range tasks {
		if b, err := os.ReadFile(filepath.Join(t, "schedstat")); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 2 {
				run, _ := strconv.ParseFloat(f[0], 64)
				wait, _ := strconv.ParseFloat(f[1], 64)
				s.CPUNs += run
				s.RunqNs += wait
			}
		} else {
			s.Complete = false
		}
		fields(filepath.Join(t, "status"), func(k string, v float64) {
			switch k {
			case "voluntary_ctxt_switches":
				s.Vol += v
			case "nonvoluntary_ctxt_switches":
				s.Invol += v
			}
		})
	}
	if !fields(fmt.Sprintf("/proc/%d/io", pid), func(k string, v float64) {
		if k == "syscr" || k == "syscw" {
			s.RWCalls += v
		}
	}) {
		s.Complete = false
	}
	return s
}

// fields calls fn for every "key: number" line of path.
func fields(path string, fn func(k string, v float64)) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			fn(k, n)
		}
	}
	return true
}

// PerOp is a Sample divided by an operation count.
type PerOp struct {
	CPUus, Vol, Invol, RWCalls float64
}

// Per divides d by n operations.
func (s Sample) Per(n int) PerOp {
	f := 1 / float64(max(n, 1))
	return PerOp{CPUus: s.CPUNs / 1e3 * f, Vol: s.Vol * f, Invol: s.Invol * f, RWCalls: s.RWCalls * f}
}

// Report adds p to b's metrics with the given unit prefix ("" for the
// benchmark's own process, e.g. "srv-" for a helper process).
func Report(b *testing.B, prefix string, p PerOp) {
	b.ReportMetric(p.CPUus, prefix+"cpu-us/op")
	b.ReportMetric(p.Vol+p.Invol, prefix+"ctxsw/op")
	b.ReportMetric(p.RWCalls, prefix+"rwcalls/op")
}

// ReportRatio adds p / floor for CPU, context switches and read/write calls
// ("x-floor" metrics): the cost relative to a baseline measured in the same
// run, which is what a benchmark should compare across machines and loads.
func ReportRatio(b *testing.B, prefix string, p, floor PerOp) {
	ratio := func(a, f float64) float64 {
		if f <= 0 {
			return 0
		}
		return a / f
	}
	b.ReportMetric(ratio(p.CPUus, floor.CPUus), prefix+"cpu-x-floor")
	b.ReportMetric(ratio(p.Vol+p.Invol, floor.Vol+floor.Invol), prefix+"ctxsw-x-floor")
	b.ReportMetric(ratio(p.RWCalls, floor.RWCalls), prefix+"rwcalls-x-floor")
}

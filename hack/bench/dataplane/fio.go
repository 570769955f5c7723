package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/longhorn-go/longhorn/hack/bench/internal/fiojson"
)

// Job is one kbench-style fio workload, run against every target.
type Job struct {
	Name    string // e.g. "randread-4k-qd1"
	RW      string // fio --rw
	BS      string // fio --bs
	IODepth int
}

// Read reports whether the job only reads (it is checked against the read
// targets; writes against the write targets).
func (j Job) Read() bool { return j.RW == "randread" || j.RW == "read" }

// jobs are the workloads: 4 KiB random read and write at depth 1 (latency)
// and 32 (IOPS), 128 KiB sequential read and write (bandwidth).
var jobs = []Job{
	{"randread-4k-qd1", "randread", "4k", 1},
	{"randread-4k-qd32", "randread", "4k", 32},
	{"randwrite-4k-qd1", "randwrite", "4k", 1},
	{"randwrite-4k-qd32", "randwrite", "4k", 32},
	{"seqread-128k-qd16", "read", "128k", 16},
	{"seqwrite-128k-qd16", "write", "128k", 16},
}

// Result is what one fio run measured.
type Result struct {
	IOPS  float64 `json:"iops"`
	BW    float64 `json:"bw_bytes_per_s"`
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
	Err   string  `json:"error,omitempty"`
	// Syscalls are the system calls per I/O of each server process (by
	// Process.Name) during the measured time (-syscalls); nil otherwise.
	Syscalls map[string]SyscallCounts `json:"syscalls,omitempty"`
	// Costs are the CPU time, runqueue wait and context switches per I/O of
	// each server process during the measured time (cost.go).
	Costs map[string]ProcCost `json:"costs,omitempty"`
}

// parseFio extracts the result of a single-job fio JSON report; read selects
// the direction.
func parseFio(data []byte, read bool) (Result, error) {
	d, err := fiojson.Parse(data, read)
	if err != nil {
		return Result{}, err
	}
	return Result{IOPS: d.IOPS, BW: d.BWBytes, P50us: d.P50us(), P99us: d.P99us()}, nil
}

// fioRunner runs fio jobs; outputs and logs go to dir.
type fioRunner struct {
	dir      string
	size     int64
	duration time.Duration
	ramp     time.Duration
	syscalls bool // count server syscalls with perf during each job
}

// commonArgs are the fio options every measured job shares.
func (f *fioRunner) commonArgs(j Job) []string {
	return []string{
		"--name=" + j.Name, "--rw=" + j.RW, "--bs=" + j.BS,
		"--iodepth=" + strconv.Itoa(j.IODepth), "--numjobs=1",
		"--size=" + strconv.FormatInt(f.size, 10),
		"--time_based", "--runtime=" + seconds(f.duration), "--ramp_time=" + seconds(f.ramp),
		"--norandommap", "--randrepeat=0", "--percentile_list=50:99",
	}
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d.Round(time.Second) / time.Second)) }

// run executes job j against endpoint ep and parses the result.
func (f *fioRunner) run(ctx context.Context, key string, ep *Endpoint, j Job) Result {
	out := filepath.Join(f.dir, fmt.Sprintf("fio-%s-%s.json", key, j.Name))
	args := append(f.commonArgs(j), ep.FioArgs...)
	args = append(args, "--output-format=json", "--output="+out)
	var counts <-chan map[string]SyscallCounts
	var costs <-chan map[string]ProcCost
	if ps := ep.processes(); len(ps) > 0 {
		if f.syscalls {
			counts = countSyscalls(ctx, ps, f.ramp, f.duration)
		}
		costs = measureCosts(ctx, ps, f.ramp, f.duration)
	}
	if err := f.exec(ctx, ep, args, time.Duration(2)*(f.duration+f.ramp)+time.Minute); err != nil {
		return Result{Err: err.Error()}
	}
	var sc map[string]SyscallCounts
	if counts != nil {
		sc = <-counts
	}
	var pc map[string]ProcCost
	if costs != nil {
		pc = <-costs
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return Result{Err: err.Error()}
	}
	r, err := parseFio(data, j.Read())
	if err != nil {
		return Result{Err: err.Error()}
	}
	for name, c := range sc {
		if r.Syscalls == nil {
			r.Syscalls = map[string]SyscallCounts{}
		}
		r.Syscalls[name] = c.scale(1 / (r.IOPS * f.duration.Seconds()))
	}
	for name, c := range pc {
		if r.Costs == nil {
			r.Costs = map[string]ProcCost{}
		}
		r.Costs[name] = c.scale(1 / (r.IOPS * f.duration.Seconds()))
	}
	return r
}

// prefill writes the whole range once with 1 MiB sequential writes, so reads
// hit allocated data and writes overwrite, as kbench does.
func (f *fioRunner) prefill(ctx context.Context, ep *Endpoint) error {
	args := []string{"--name=prefill", "--rw=write", "--bs=1M", "--iodepth=8", "--numjobs=1",
		"--size=" + strconv.FormatInt(f.size, 10), "--output-format=json"}
	args = append(args, ep.FioArgs...)
	return f.exec(ctx, ep, args, 10*time.Minute)
}

func (f *fioRunner) exec(ctx context.Context, ep *Endpoint, args []string, timeout time.Duration) error {
	bin := ep.FioBinary
	if bin == "" {
		bin = "fio"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tail := string(out)
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return fmt.Errorf("%s: %w: %s", bin, err, tail)
	}
	return nil
}

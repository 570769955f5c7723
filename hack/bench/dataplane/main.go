// Command dataplane is the `make bench-dataplane` harness: kbench-style fio
// jobs (4 KiB random read/write at depth 1 and 32, 128 KiB sequential read and
// write) on a pre-filled range, against
//
//	(0) fio libaio direct=1 on a preallocated file (the physical limit),
//	(a) nbdkit's file plugin (the peer baseline, fio's nbd engine),
//	(f) this repository's NBD frontend over a plain file (no engine),
//	(b) the engine with 1 replica and (c) with 3 replicas, through NBD,
//
// plus any rows other files register (registerTarget). It prints IOPS,
// bandwidth and p50/p99 completion latency of every row, each as a ratio to
// its baseline row and to (0) from the same run, and checks the targets.
//
// All targets are started first; then each job runs on every row in turn, so
// rows of one job are measured close together in time on a shared machine.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/hack/bench/internal/benchproc"
)

type options struct {
	dir, targets, jobs, longhorn, longhornAlt, jsonOut string
	cpuProfile                                         string
	replicaFlags, controllerFlags                      string
	size                                               int64
	duration, ramp                                     time.Duration
	rounds                                             int
	keep, strict, syscalls, revisionCounter            bool
	noSync                                             bool
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.dir, "dir", "", "directory on the disk to benchmark (default: a new temporary directory)")
	flag.Int64Var(&o.size, "size", 1<<30, "benchmarked range in bytes (pre-filled)")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "measured time per job")
	flag.DurationVar(&o.ramp, "ramp", 2*time.Second, "fio ramp time per job (not measured)")
	flag.StringVar(&o.targets, "targets", "", "comma-separated row keys (default: every registered row)")
	flag.StringVar(&o.jobs, "jobs", "", "comma-separated job names (default: all)")
	flag.StringVar(&o.longhorn, "longhorn", "", "longhorn binary for the engine rows")
	flag.StringVar(&o.longhornAlt, "longhorn-alt", "", "second longhorn binary for the A/B rows B and C (-targets a,b,B,c,C)")
	flag.StringVar(&o.replicaFlags, "replica-flags", "", "extra flags for `longhorn engine replica` (space-separated), e.g. --disable-revision-counter")
	flag.StringVar(&o.controllerFlags, "controller-flags", "", "extra flags for `longhorn engine controller` (space-separated)")
	flag.StringVar(&o.jsonOut, "json", "", "also write results as JSON to this file")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (covers in-process rows such as f)")
	flag.IntVar(&o.rounds, "rounds", 1, "runs of every job per row; the median (by IOPS) is reported")
	flag.BoolVar(&o.keep, "keep", false, "keep the benchmark directory (fio outputs, server logs)")
	flag.BoolVar(&o.syscalls, "syscalls", false, "count the servers' system calls per I/O with perf stat")
	flag.BoolVar(&o.revisionCounter, "revision-counter", false, "run the engine rows with the revision counter on (default off, Longhorn's v1 default)")
	flag.BoolVar(&o.noSync, "no-sync", false, "do not write back the page cache (sync) before each job")
	flag.BoolVar(&o.strict, "strict", false, "exit 1 when a row misses its target ratio")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	logrus.SetLevel(logrus.WarnLevel) // in-process rows log through logrus
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-dataplane:", err)
		os.Exit(2)
	}
	if failed && o.strict {
		os.Exit(1)
	}
}

// row is one started target and its results per job.
type row struct {
	Target
	ep      *Endpoint
	skip    string
	results map[string]Result
}

func run(ctx context.Context, o options) (failed bool, err error) {
	if _, err := needTool("fio"); err != nil {
		return false, err
	}
	dir, cleanup, err := benchDir(o.dir, o.keep)
	if err != nil {
		return false, err
	}
	defer cleanup()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return false, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return false, err
		}
		defer pprof.StopCPUProfile()
	}
	selected, err := selectTargets(o.targets)
	if err != nil {
		return false, err
	}
	js, err := selectJobs(o.jobs)
	if err != nil {
		return false, err
	}
	env := &Env{Dir: dir, Size: o.size, Longhorn: o.longhorn, LonghornAlt: o.longhornAlt, Procs: &benchproc.Procs{Dir: dir},
		ReplicaFlags: strings.Fields(o.replicaFlags), ControllerFlags: strings.Fields(o.controllerFlags),
		RevisionCounter: o.revisionCounter}
	defer env.Procs.StopAll()
	fr := &fioRunner{dir: dir, size: o.size, duration: o.duration, ramp: o.ramp, syscalls: o.syscalls}

	fmt.Printf("bench-dataplane: %d rows x %d jobs, %v each (+%v ramp), range %d MiB, dir %s\n",
		len(selected), len(js), o.duration, o.ramp, o.size>>20, dir)
	rows := startRows(ctx, env, fr, selected)
	defer func() {
		for _, r := range rows {
			if r.ep != nil {
				r.ep.Stop()
			}
		}
	}()
	runJobs(ctx, fr, rows, js, o.rounds, !o.noSync)
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	failed = report(os.Stdout, rows, js)
	if o.jsonOut != "" {
		if err := writeJSON(o.jsonOut, o, rows); err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// runJobs runs every job rounds times on every row, interleaving rows so they
// see the same machine load, and keeps the median round of each. With
// syncFirst every job starts after a sync.
func runJobs(ctx context.Context, fr *fioRunner, rows []*row, js []Job, rounds int, syncFirst bool) {
	for _, j := range js {
		all := map[string][]Result{}
		for round := 1; round <= max(rounds, 1); round++ {
			for _, r := range rows {
				if r.skip != "" || ctx.Err() != nil {
					continue
				}
				fmt.Printf("  %-20s round %d (%s) ...", j.Name, round, r.Key)
				if err := warm(r.ep.Data); err != nil {
					fmt.Printf(" (warming the cache: %v)", err)
				}
				// Every row starts its job with no dirty page left by
				// the job before it (its own or another row's): their
				// write-back would otherwise run during this job and
				// slow whichever row comes next (write jobs leave up
				// to 3 GiB dirty with 3 replicas).
				if syncFirst {
					unix.Sync()
				}
				res := fr.run(ctx, fmt.Sprintf("%s-%d", r.Key, round), r.ep, j)
				all[r.Key] = append(all[r.Key], res)
				if res.Err != "" {
					fmt.Printf(" error: %s\n", res.Err)
				} else {
					fmt.Printf(" %.0f IOPS\n", res.IOPS)
				}
			}
		}
		for _, r := range rows {
			if rs := all[r.Key]; len(rs) > 0 {
				r.results[j.Name] = median(rs)
			}
		}
	}
}

// median returns the round with the median IOPS; any failed round wins, so
// errors are never hidden.
func median(rs []Result) Result {
	for _, r := range rs {
		if r.Err != "" {
			return r
		}
	}
	s := append([]Result(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].IOPS < s[j].IOPS })
	return s[len(s)/2]
}

// startRows starts and pre-fills every selected target; a row that cannot
// start is kept with its reason and skipped.
func startRows(ctx context.Context, env *Env, fr *fioRunner, ts []Target) []*row {
	var rows []*row
	for _, t := range ts {
		r := &row{Target: t, results: map[string]Result{}}
		rows = append(rows, r)
		start := time.Now()
		ep, err := t.Start(ctx, env)
		if err != nil {
			r.skip = err.Error()
			fmt.Printf("  (%s) %s: skipped: %v\n", t.Key, t.Name, err)
			continue
		}
		r.ep = ep
		if err := fr.prefill(ctx, ep); err != nil {
			r.skip = "prefill: " + err.Error()
			fmt.Printf("  (%s) %s: skipped: %s\n", t.Key, t.Name, r.skip)
			continue
		}
		fmt.Printf("  (%s) %s: ready in %v\n", t.Key, t.Name, time.Since(start).Round(time.Millisecond))
	}
	return rows
}

// benchDir returns the working directory and a cleanup function.
func benchDir(dir string, keep bool) (string, func(), error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "bench-dataplane-")
		if err != nil {
			return "", nil, err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	return dir, func() {
		if !keep {
			_ = os.RemoveAll(dir)
		}
	}, nil
}

func selectTargets(spec string) ([]Target, error) {
	all := sortedTargets()
	if spec == "" {
		var out []Target
		for _, t := range all {
			if !t.Optional {
				out = append(out, t)
			}
		}
		return out, nil
	}
	var out []Target
	for _, k := range strings.Split(spec, ",") {
		t, ok := registry[strings.TrimSpace(k)]
		if !ok {
			var keys []string
			for _, t := range all {
				keys = append(keys, t.Key)
			}
			return nil, fmt.Errorf("-targets: unknown row %q, want some of %s", k, strings.Join(keys, ","))
		}
		out = append(out, t)
	}
	return out, nil
}

func selectJobs(spec string) ([]Job, error) {
	if spec == "" {
		return jobs, nil
	}
	var out []Job
	for _, name := range strings.Split(spec, ",") {
		found := false
		for _, j := range jobs {
			if j.Name == strings.TrimSpace(name) {
				out, found = append(out, j), true
			}
		}
		if !found {
			return nil, errors.New("-jobs: unknown job " + name)
		}
	}
	return out, nil
}

func writeJSON(path string, o options, rows []*row) error {
	type jsonRow struct {
		Key, Name, Baseline, Skipped string
		Results                      map[string]Result
	}
	out := struct {
		Time     time.Time
		Duration string
		Size     int64
		Rounds   int
		Rows     []jsonRow
	}{Time: time.Now().UTC(), Duration: o.duration.String(), Size: o.size, Rounds: o.rounds}
	for _, r := range rows {
		out.Rows = append(out.Rows, jsonRow{r.Key, r.Name, r.Baseline, r.skip, r.results})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

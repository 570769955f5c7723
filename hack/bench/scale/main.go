// Command scale is the `make bench-scale` harness (issue 22): what the
// product's cost grows with.
//
//	part 1, cost per volume: RSS, PSS, unique memory, CPU, descriptors,
//	  threads and goroutines of the engine and replica processes of 1, 10
//	  and 50 volumes and of the instance manager that runs them, idle and
//	  under a 4 KiB random write load (cost.go's A/B variants on request);
//	part 2, rebuild throughput (rebuild.go): full and delta rebuild of one
//	  replica of a 3-replica volume under a QD1 client load, against the
//	  disk's sequential write speed in the same run;
//	part 3, the control plane under load (cp.go) on a local 3-node cluster.
//
// Parts 1 and 2 start processes as the instance manager starts them (the
// same binary and command lines), without a cluster. The default run
// measures what issue 22 asks and nothing more (its budget: parts 1-3 in
// under 20 minutes on 2 cores); A/B arms are flags. It prints tables with
// the targets and the machine load next to the numbers, each
// part's wall time against the budget, and writes JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/longhorn-go/longhorn/hack/bench/internal/benchproc"
)

type options struct {
	longhorn, dir, jsonOut, parts, counts, variants string
	cost                                            costOptions
	rebuild                                         rebuildOptions
	cp                                              cpOptions
	keep, revisionCounter                           bool
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.longhorn, "longhorn", "", "longhorn binary")
	flag.StringVar(&o.dir, "dir", "", "directory on the disk to measure (default: a new temporary directory)")
	flag.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file")
	flag.StringVar(&o.parts, "parts", "1,2", "parts to run (1 cost per volume, 2 rebuild, 3 control plane on a local cluster)")
	flag.StringVar(&o.counts, "volumes", "1,10,50", "part 1: volume counts")
	flag.StringVar(&o.variants, "variants", "", "part 1: variants to run, comma-separated, or all (default "+defaultVariants+"; also direct: the bench starts the processes; no-trim: direct without the memory trim)")
	flag.DurationVar(&o.cost.settle, "settle", 12*time.Second, "part 1: wait after start-up before the idle window (past the memory trim's second pass, 10 s after a start)")
	flag.DurationVar(&o.cost.idle, "idle", 10*time.Second, "part 1: idle CPU window")
	flag.DurationVar(&o.cost.run, "load", 10*time.Second, "part 1: load duration")
	flag.Int64Var(&o.cost.size, "size", 1<<30, "part 1: volume size in bytes")
	flag.Int64Var(&o.cost.loadRange, "load-range", 64<<20, "part 1: bytes at the start of volume 0 the load writes to")
	flag.StringVar(&o.rebuild.data, "rebuild-data", "1073741824,4294967296", "part 2: written bytes per run")
	flag.DurationVar(&o.rebuild.quiet, "quiet", 10*time.Second, "part 2: QD1 latency window without a rebuild")
	flag.StringVar(&o.rebuild.alt, "longhorn-alt", "", "part 2: a second longhorn binary measured right after the first at each size (A/B)")
	flag.Int64Var(&o.rebuild.limit, "rebuild-limit", 0, "part 2: MB/s (2^20 B/s) of a limited variant measured after the unlimited one at each size (e.g. 40), 0 = none")
	flag.BoolVar(&o.rebuild.counter, "rebuild-counter", false, "part 2: a variant with the revision counter on, measured after the others at each size (A/B)")
	flag.DurationVar(&o.rebuild.profile, "rebuild-profile", 0, "part 2: CPU profiles of this length of the volume's processes from the start of each rebuild, pprof-*.pb.gz in -dir (with -keep)")
	flag.BoolVar(&o.keep, "keep", false, "keep the directory (logs, fio outputs)")
	flag.BoolVar(&o.revisionCounter, "revision-counter", false, "parts 1-2: run the engines and replicas with the revision counter on (default off: Longhorn's disable-revision-counter defaults to true for v1 volumes)")
	flag.IntVar(&o.cp.volumes, "cp-volumes", 300, "part 3: volumes created")
	flag.IntVar(&o.cp.attach, "cp-attach", 30, "part 3: volumes attached (round-robin over the nodes)")
	flag.IntVar(&o.cp.replicas, "cp-replicas", 2, "part 3: replicas per volume")
	flag.Int64Var(&o.cp.size, "cp-size", 1<<30, "part 3: volume size in bytes")
	flag.IntVar(&o.cp.parallel, "cp-parallel", 10, "part 3: concurrent create and delete requests")
	flag.IntVar(&o.cp.attachParallel, "cp-attach-parallel", 1, "part 3: concurrent attach and detach requests")
	flag.DurationVar(&o.cp.rest, "cp-rest", 20*time.Second, "part 3: rest windows with the volumes (manager CPU, API requests, reconciles)")
	flag.DurationVar(&o.cp.restEmpty, "cp-rest-empty", 10*time.Second, "part 3: rest window right after Longhorn is ready, no volume (0 = none)")
	flag.StringVar(&o.cp.altImage, "cp-alt-image", "", "part 3: A/B: an image archive the managers run for a second rest window at the full volume count (e.g. the code before a change)")
	flag.IntVar(&o.cp.abExtra, "cp-ab-volumes", 60, "part 3: A/B: volumes each arm creates and deletes on top of the others")
	flag.DurationVar(&o.cp.settle, "cp-settle", 30*time.Second, "part 3: A/B: wait after the managers restart before the window")
	o.cp.cluster.flags(flag.CommandLine)
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(2)
	}
}

// Report is the JSON output.
type Report struct {
	Time    time.Time    `json:"time"`
	Uptime  string       `json:"loadavg_start"`
	Cost    []CostRun    `json:"cost,omitempty"`
	Rebuild []RebuildRun `json:"rebuild,omitempty"`
	Control *CPRun       `json:"control_plane,omitempty"`
	Parts   []PartTime   `json:"parts"`
	Secs    float64      `json:"secs"`
	Wall    string       `json:"wall_target"` // parts 1-3 under targetWall: met, MISSED, or why not comparable
}

func run(ctx context.Context, o options) error {
	if o.longhorn == "" {
		return fmt.Errorf("-longhorn: no binary")
	}
	for _, t := range []string{"fio", "nbdinfo"} {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not in PATH", t)
		}
	}
	counts, err := intList(o.counts)
	if err != nil {
		return fmt.Errorf("-volumes: %w", err)
	}
	o.cost.counts = counts
	if o.cost.variants, err = pickVariants(o.variants); err != nil {
		return fmt.Errorf("-variants: %w", err)
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "bench-scale-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	defer waitRemoved()
	e := &env{dir: dir, longhorn: o.longhorn, procs: &benchproc.Procs{Dir: dir}, ports: &ports{}, revisionCounter: o.revisionCounter}
	defer e.procs.StopAll()
	rep := Report{Time: time.Now().UTC(), Uptime: loadAvg()}
	start := time.Now()
	fmt.Printf("bench-scale: parts %s, dir %s, load average %s\n", o.parts, dir, rep.Uptime)
	for _, p := range strings.Split(o.parts, ",") {
		pt, err := runPart(ctx, e, o, strings.TrimSpace(p), &rep)
		if err != nil {
			return err
		}
		rep.Parts = append(rep.Parts, pt)
		fmt.Printf("bench-scale: part %s done in %s, load average %s\n", pt.Part, fmtSecs(pt.Secs), loadAvg())
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	total := time.Since(start)
	rep.Secs, rep.Wall = total.Seconds(), wallVerdict(rep.Parts, total)
	printCost(os.Stdout, rep.Cost)
	printRebuild(os.Stdout, rep.Rebuild)
	printCP(os.Stdout, rep.Control)
	printWall(os.Stdout, rep.Parts, total)
	fmt.Printf("bench-scale: done in %v, load average %s\n", total.Round(time.Second), loadAvg())
	if o.jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(o.jsonOut, b, 0o644)
	}
	return nil
}

// runPart runs part p into rep and returns its wall time, what it ran and
// whether a measurement failed.
func runPart(ctx context.Context, e *env, o options, p string, rep *Report) (PartTime, error) {
	t0 := time.Now()
	pt := PartTime{Part: p}
	switch p {
	case "1":
		rep.Cost = runCost(ctx, e, o.cost, os.Stdout)
		pt.Note = fmt.Sprintf("volumes %s, variants %s", o.counts, joinNames(o.cost.variants, func(v variant) string { return v.Name }))
		pt.Failed = costFailed(rep.Cost)
	case "2":
		rep.Rebuild = runRebuild(ctx, e, o.rebuild, os.Stdout)
		pt.Note = fmt.Sprintf("data %s bytes, %d arms", o.rebuild.data, len(rep.Rebuild))
		pt.Failed = rebuildFailed(rep.Rebuild)
	case "3":
		cp := runControlPlane(ctx, o.longhorn, o.cp)
		rep.Control = &cp
		pt.Note = fmt.Sprintf("cluster up %s of it", fmtSecs(cp.UpSecs))
		pt.Failed = cpFailed(cp)
	default:
		return pt, fmt.Errorf("-parts: unknown part %q", p)
	}
	pt.Secs = time.Since(t0).Seconds()
	return pt, nil
}

// intList parses "1,10,50".
func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}

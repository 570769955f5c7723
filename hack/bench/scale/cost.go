package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Part 1, cost per volume: N volumes of one replica each (an engine process
// and a replica process per volume, as the instance manager starts them),
// measured idle and while one of them takes a 4 KiB random write load at
// depth 32. Variants run the same processes with different environments,
// one after the other at each N, for the A/B of a change.

// variant is one A/B arm: extra environment for every process.
type variant struct {
	Name string   `json:"name"`
	Env  []string `json:"env"`
}

// variants: "im", the volumes created through one instance manager as the
// manager does, which also measures that instance manager (im.go): every
// number the issue asks, so the only one run by default; "direct", the same
// processes started by the bench itself; and "no-trim", those with the
// start-up trim switched off (internal/memtrim), what the processes held
// before it (the trim's A/B).
var variants = []variant{
	{Name: imVariant},
	{Name: "direct"},
	{Name: noTrimVariant, Env: []string{"LONGHORN_MEMTRIM=off"}},
}

// noTrimVariant runs the processes without the start-up memory trim.
const noTrimVariant = "no-trim"

// defaultVariants is what part 1 runs without -variants.
const defaultVariants = imVariant

// pickVariants returns the variants named in list ("a,b"; "" =
// defaultVariants; "all" = every one), or an error naming an unknown one
// and the known ones.
func pickVariants(list string) ([]variant, error) {
	switch list {
	case "":
		list = defaultVariants
	case "all":
		return variants, nil
	}
	var out []variant
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(variants, func(v variant) bool { return v.Name == name })
		if i < 0 {
			known := make([]string, len(variants))
			for j, v := range variants {
				known[j] = v.Name
			}
			return nil, fmt.Errorf("unknown variant %q (known: %s)", name, strings.Join(known, ", "))
		}
		out = append(out, variants[i])
	}
	return out, nil
}

// CostRun is the result of one variant at one N.
type CostRun struct {
	Volumes       int       `json:"volumes"`
	Variant       string    `json:"variant"`
	StartSecs     float64   `json:"start_s"` // until every NBD export answered
	StopSecs      float64   `json:"stop_s"`
	IdleReplica   Agg       `json:"idle_replica"`
	IdleEngine    Agg       `json:"idle_engine"`
	LoadReplica   Agg       `json:"load_replica"` // volume 0 under load
	LoadEngine    Agg       `json:"load_engine"`
	IdleIM        Agg       `json:"idle_instance_manager"` // variant im only
	LoadIM        Agg       `json:"load_instance_manager"`
	Load          FioResult `json:"load_fio"`
	LoadAvgIdle   string    `json:"loadavg_idle"`
	LoadAvgLoaded string    `json:"loadavg_load"`
	Err           string    `json:"error,omitempty"`
}

// costOptions are part 1's knobs.
type costOptions struct {
	counts            []int
	variants          []variant
	settle, idle, run time.Duration
	size, loadRange   int64
}

// runCost runs part 1 for every N and variant.
func runCost(ctx context.Context, e *env, o costOptions, w io.Writer) []CostRun {
	var out []CostRun
	for _, n := range o.counts {
		for _, v := range o.variants {
			fmt.Fprintf(w, "  part 1: %d volumes, %s ...", n, v.Name)
			r := costOnce(ctx, e, o, n, v)
			if r.Err != "" {
				fmt.Fprintf(w, " error: %s\n", r.Err)
			} else {
				fmt.Fprintf(w, " replica %.1f MiB, engine %.1f MiB idle (load %s)\n", r.IdleReplica.MaxRSSMiB, r.IdleEngine.MaxRSSMiB, r.LoadAvgIdle)
			}
			out = append(out, r)
			if ctx.Err() != nil {
				return out
			}
		}
	}
	return out
}

// costOnce starts n volumes with variant v, measures, and stops them.
func costOnce(ctx context.Context, e *env, o costOptions, n int, v variant) CostRun {
	r := CostRun{Volumes: n, Variant: v.Name}
	prefix := fmt.Sprintf("c%d%s-v", n, v.Name[:1])
	t0 := time.Now()
	var vs []*volume
	var im *instanceManager
	var err error
	if v.Name == imVariant {
		if im, err = e.startIM(ctx, prefix+"-im", n, v.Env); err == nil {
			vs, err = e.startVolumesIM(ctx, im, prefix, n, o.size)
		}
	} else {
		vs, err = e.startVolumes(ctx, prefix, n, 1, o.size, v.Env)
	}
	if err == nil {
		r.StartSecs = time.Since(t0).Seconds()
		imPid := 0
		if im != nil {
			imPid = im.proc.Pid()
		}
		err = costMeasure(ctx, e, o, vs, imPid, &r)
	}
	if err != nil {
		r.Err = err.Error()
	}
	t1 := time.Now()
	stopVolumes(vs)
	if im != nil {
		im.stop()
	}
	r.StopSecs = time.Since(t1).Seconds()
	return r
}

// costMeasure samples vs idle, then volume 0 under load.
// imPid, when not 0, is the instance manager that runs them, measured too.
func costMeasure(ctx context.Context, e *env, o costOptions, vs []*volume, imPid int, r *CostRun) error {
	if err := sleep(ctx, o.settle); err != nil {
		return err
	}
	var pids []int
	for _, v := range vs {
		pids = append(pids, v.replicas[0].PID(), v.enginePid())
	}
	if imPid != 0 {
		pids = append(pids, imPid)
	}
	done := cpuWindow(pids)
	if err := sleep(ctx, o.idle); err != nil {
		return err
	}
	cpu := done()
	r.LoadAvgIdle = loadAvg()
	var reps, engs []Sample
	for _, v := range vs {
		rs, err1 := sampleProc(ctx, v.replicas[0].PID(), v.replicas[0].pprof)
		es, err2 := sampleProc(ctx, v.enginePid(), v.pprof)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("sample %s: %v %v", v.name, err1, err2)
		}
		rs.CPUPct, es.CPUPct = cpu[v.replicas[0].PID()], cpu[v.enginePid()]
		reps, engs = append(reps, rs), append(engs, es)
	}
	r.IdleReplica, r.IdleEngine = aggregate(reps), aggregate(engs)
	var err error
	if r.IdleIM, err = sampleIM(ctx, imPid, cpu); err != nil {
		return err
	}
	return costLoad(ctx, e, o, vs[0], imPid, r)
}

// costLoad runs the 4 KiB randwrite QD32 load on v and samples its two
// processes (and the instance manager imPid, when not 0) near the end of it.
func costLoad(ctx context.Context, e *env, o costOptions, v *volume, imPid int, r *CostRun) error {
	const ramp = 2 * time.Second
	type res struct {
		f   FioResult
		err error
	}
	ch := make(chan res, 1)
	go func() {
		args := append(append(randWrite4k(32, o.loadRange), timed(o.run, ramp)...), nbdArgs(v.uri)...)
		f, err := runFio(ctx, e.dir, fmt.Sprintf("cost-%s", v.name), false, o.run+ramp+time.Minute, args...)
		ch <- res{f, err}
	}()
	pids := []int{v.replicas[0].PID(), v.enginePid()}
	if imPid != 0 {
		pids = append(pids, imPid)
	}
	if err := sleep(ctx, ramp); err != nil {
		return err
	}
	done := cpuWindow(pids)
	if err := sleep(ctx, o.run-time.Second); err != nil {
		return err
	}
	cpu := done()
	rs, err1 := sampleProc(ctx, pids[0], v.replicas[0].pprof)
	es, err2 := sampleProc(ctx, pids[1], v.pprof)
	im, err3 := sampleIM(ctx, imPid, cpu)
	r.LoadAvgLoaded = loadAvg()
	got := <-ch
	if err1 != nil || err2 != nil || err3 != nil {
		return fmt.Errorf("sample under load: %v %v %v", err1, err2, err3)
	}
	if got.err != nil {
		return got.err
	}
	rs.CPUPct, es.CPUPct = cpu[pids[0]], cpu[pids[1]]
	r.LoadReplica, r.LoadEngine, r.LoadIM, r.Load = aggregate([]Sample{rs}), aggregate([]Sample{es}), im, got.f
	return nil
}

// sampleIM samples the instance manager pid with its CPU share from cpu; a
// zero Agg when pid is 0 (the variant runs no instance manager).
func sampleIM(ctx context.Context, pid int, cpu map[int]float64) (Agg, error) {
	if pid == 0 {
		return Agg{}, nil
	}
	s, err := sampleProc(ctx, pid, "")
	if err != nil {
		return Agg{}, fmt.Errorf("sample the instance manager: %w", err)
	}
	s.CPUPct = cpu[pid]
	return aggregate([]Sample{s}), nil
}

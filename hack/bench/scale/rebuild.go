package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/longhorn-go/longhorn/internal/procstat"
)

// Part 2, rebuild throughput: a volume of 3 replicas (processes, no
// cluster) holding D bytes of data in 64 KiB extents with 64 KiB holes
// between them (a 2D volume). One replica is replaced by an empty one and
// rebuilt (full), then dropped, 10 % of D rewritten, and brought back with
// the checksum-skipping rebuild (delta), while a 4 KiB random write load at
// depth 1 runs on the first eighth of the volume; its p99 is compared with
// the same load without a rebuild and with the same load while fio writes
// the full rebuild's bytes at its rate through the page cache (the
// machine's share of the p99, no rebuild code involved). The fill, the quiet window's client
// writes and the change are written back (sync) before the rebuilds: the replicas write through the page
// cache, and the rebuild's snapshot would otherwise time their write-back
// (the fdatasync of each head) as part of the rebuild. The CPU time of the
// volume's processes during each rebuild is reported with it (on a shared
// machine the most stable measure of the rebuild's cost). The physical limit is fio's sequential
// write of D bytes, direct=1, to a file in the same directory. Each size
// runs unlimited; on request (A/B, in the same run) again with the rebuild
// bandwidth limit -rebuild-limit (add-replica
// --replica-rebuilding-bandwidth-limit) and with a second binary.

// rebuildOptions are part 2's knobs.
type rebuildOptions struct {
	data  string        // comma-separated data sizes, bytes
	quiet time.Duration // length of the client load without a rebuild
	alt   string        // a second longhorn binary, measured after the first at each size (A/B)
	limit int64         // MB/s of the limited variant, 0 = none
	// counter adds a variant with the revision counter on (A/B against
	// the default, which runs without it unless -revision-counter).
	counter bool
	// profile, when set, is the length of the CPU profiles taken of the
	// volume's processes from the start of each rebuild (profile.go).
	profile time.Duration
}

// rebuildVariant is one measurement of a size: a binary and a limit.
type rebuildVariant struct {
	name, bin string
	limit     int64
	counter   bool // revision counter on
}

// variants lists the runs of one size: unlimited, limited (o.limit), alt,
// counter (o.counter).
func (o rebuildOptions) variants(bin string) []rebuildVariant {
	out := []rebuildVariant{{name: "default", bin: bin}}
	if o.limit > 0 {
		out = append(out, rebuildVariant{name: "limit", bin: bin, limit: o.limit})
	}
	if o.alt != "" {
		out = append(out, rebuildVariant{name: "alt", bin: o.alt})
	}
	if o.counter {
		out = append(out, rebuildVariant{name: "counter", bin: bin, counter: true})
	}
	return out
}

// RebuildRun is one data size's rebuild measurement.
type RebuildRun struct {
	DataBytes int64  `json:"data_bytes"`
	Binary    string `json:"binary"` // "default", "limit" (-rebuild-limit), "alt" (-longhorn-alt) or "counter" (-rebuild-counter)
	Counter   bool   `json:"revision_counter"`
	LimitMBps int64  `json:"limit_mb_per_s"` // rebuild bandwidth limit, 0 = none
	// Disk is fio's sequential write of the same bytes, direct=1; on a
	// virtual disk it lands in the host's write cache (1-4 GB/s here at
	// 1 GiB). DiskDurable is the same job ended with an fsync
	// (end_fsync=1), as the rebuild ends with one: the bytes reached
	// stable storage. The full rebuild's target is taken against it.
	Disk        FioResult `json:"disk_seqwrite"`
	DiskDurable FioResult `json:"disk_seqwrite_durable"`
	FullSecs    float64   `json:"full_s"`
	FullMiBps   float64   `json:"full_mib_per_s"`
	DeltaSecs   float64   `json:"delta_s"`
	FullCPU     float64   `json:"full_cpu_s"`   // CPU seconds of the engine and replica processes during the full rebuild
	DeltaCPU    float64   `json:"delta_cpu_s"`  // the same for the delta rebuild
	Quiet       FioResult `json:"client_quiet"` // QD1 randwrite, no rebuild
	DuringFull  FioResult `json:"client_full"`  // during the full rebuild
	DuringDelta FioResult `json:"client_delta"` // during the delta rebuild
	// DuringPlain is the client during a plain buffered write of the same
	// bytes at the full rebuild's rate (plainWriteUnderLoad): the p99
	// baseline.
	DuringPlain FioResult `json:"client_plain_write"`
	LoadAvg     string    `json:"loadavg"` // after the run
	Err         string    `json:"error,omitempty"`
}

// runRebuild runs part 2 for every data size.
func runRebuild(ctx context.Context, e *env, o rebuildOptions, w io.Writer) []RebuildRun {
	var out []RebuildRun
	for _, f := range strings.Split(o.data, ",") {
		d, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || d < 1<<20 || d%(128<<10) != 0 {
			out = append(out, RebuildRun{Err: fmt.Sprintf("-rebuild-data %q: want multiples of 131072 bytes, at least 1 MiB", f)})
			continue
		}
		for _, vr := range o.variants(e.longhorn) {
			fmt.Fprintf(w, "  part 2: %d MiB of data, %s (limit %d MB/s) ...", d>>20, vr.name, vr.limit)
			eb := *e
			eb.longhorn = vr.bin
			eb.revisionCounter = e.revisionCounter || vr.counter
			r := rebuildOnce(ctx, &eb, o, d, vr)
			r.Binary, r.LimitMBps, r.Counter = vr.name, vr.limit, eb.revisionCounter
			if r.Err != "" {
				fmt.Fprintf(w, " error: %s\n", r.Err)
			} else {
				fmt.Fprintf(w, " full %.1fs (%.0f MiB/s, disk %.0f MiB/s durable, %.0f direct), delta %.1fs (load %s)\n",
					r.FullSecs, r.FullMiBps, r.DiskDurable.MiBps, r.Disk.MiBps, r.DeltaSecs, r.LoadAvg)
			}
			out = append(out, r)
			if ctx.Err() != nil {
				return out
			}
		}
	}
	return out
}

// rebuildOnce measures one data size.
func rebuildOnce(ctx context.Context, e *env, o rebuildOptions, d int64, vr rebuildVariant) RebuildRun {
	r := RebuildRun{DataBytes: d}
	var err error
	if r.Disk, err = diskSeqWrite(ctx, e.dir, d, false); err == nil {
		r.DiskDurable, err = diskSeqWrite(ctx, e.dir, d, true)
	}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	vs, err := e.startVolumes(ctx, fmt.Sprintf("rb%d%s-v", d>>20, vr.name), 1, 3, 2*d, nil)
	if err == nil {
		err = rebuildMeasure(ctx, e, o, vs[0], &r, vr.limit)
	}
	if err != nil {
		r.Err = err.Error()
	}
	r.LoadAvg = loadAvg()
	stopVolumes(vs)
	return r
}

// diskSeqWrite is the physical limit: D bytes written sequentially with
// direct I/O to a new file in dir, with durable ended by an fsync (the
// time fio reports includes it).
func diskSeqWrite(ctx context.Context, dir string, d int64, durable bool) (FioResult, error) {
	f := filepath.Join(dir, "disk-seqwrite.img")
	defer removeLater(f)
	name := fmt.Sprintf("disk-%d", d>>20)
	endFsync := "0"
	if durable {
		name, endFsync = name+"-durable", "1"
	}
	return runFio(ctx, dir, name, false, 10*time.Minute, "--filename="+f, "--ioengine=libaio",
		"--direct=1", "--rw=write", "--bs=1M", "--iodepth=16", "--size="+strconv.FormatInt(d, 10), "--end_fsync="+endFsync)
}

// rebuildMeasure fills v, measures the quiet client, then the two rebuilds.
func rebuildMeasure(ctx context.Context, e *env, o rebuildOptions, v *volume, r *RebuildRun, limit int64) error {
	fill := append([]string{"--rw=write:64k", "--bs=64k", "--iodepth=16", "--size=" + strconv.FormatInt(2*r.DataBytes, 10)}, nbdArgs(v.uri)...)
	if _, err := runFio(ctx, e.dir, "fill", false, 20*time.Minute, fill...); err != nil {
		return err
	}
	syscall.Sync() // the rebuild's snapshot flushes the heads: not the fill's write-back

	client := clientArgs(v, r.DataBytes)
	var err error
	if r.Quiet, err = runFio(ctx, e.dir, "client-quiet", false, o.quiet+time.Minute, append(client, timed(o.quiet, time.Second)...)...); err != nil {
		return err
	}
	syscall.Sync() // nor the quiet window's (its length would set the full rebuild's write-back)
	// Full: the third replica is replaced by an empty one.
	old := v.replicas[2]
	if err := e.dropReplica(ctx, v, old); err != nil {
		return err
	}
	removeLater(old.dir)
	fresh, err := e.startReplica(ctx, old.Name+"-full", old.dir+"-full", 2*r.DataBytes, nil)
	if err != nil {
		return err
	}
	if r.FullSecs, r.FullCPU, r.DuringFull, err = e.rebuildUnderLoad(ctx, v, fresh, false, limit, client, o.profile); err != nil {
		return err
	}
	r.FullMiBps = float64(r.DataBytes) / (1 << 20) / r.FullSecs
	if r.DuringPlain, err = e.plainWriteUnderLoad(ctx, v, client, r.DataBytes, r.FullMiBps); err != nil {
		return err
	}
	// Delta: drop it, change 10 %, bring the same directory back.
	if err := e.dropReplica(ctx, v, fresh); err != nil {
		return err
	}
	change := append([]string{"--rw=randwrite", "--bs=64k", "--iodepth=16", "--size=" + strconv.FormatInt(2*r.DataBytes, 10),
		"--io_size=" + strconv.FormatInt(r.DataBytes/10, 10), "--randrepeat=0"}, nbdArgs(v.uri)...)
	if _, err := runFio(ctx, e.dir, "change", false, 10*time.Minute, change...); err != nil {
		return err
	}
	syscall.Sync()

	back, err := e.startReplica(ctx, old.Name+"-delta", fresh.dir, 2*r.DataBytes, nil)
	if err != nil {
		return err
	}
	r.DeltaSecs, r.DeltaCPU, r.DuringDelta, err = e.rebuildUnderLoad(ctx, v, back, true, limit, client, o.profile)
	return err
}

// clientArgs is the client load: 4 KiB random writes at depth 1 on the
// first eighth of the data.
func clientArgs(v *volume, d int64) []string {
	return append(randWrite4k(1, d/8), nbdArgs(v.uri)...)
}

// dropReplica removes rep from v's engine and stops its process.
func (e *env) dropReplica(ctx context.Context, v *volume, rep *replica) error {
	if err := e.ctl(ctx, v, "rm-replica", rep.addr); err != nil {
		return err
	}
	rep.Stop()
	for i, x := range v.replicas {
		if x == rep {
			v.replicas = append(v.replicas[:i], v.replicas[i+1:]...)
			break
		}
	}
	return nil
}

// rebuildUnderLoad adds rep to v (fast selects the checksum-skipping
// rebuild, limit its bandwidth limit in MB/s) while the client load runs,
// and returns the rebuild's time, the CPU seconds the volume's processes
// (engine, replicas) used meanwhile (the client's I/O included) and the
// client's result over it; with prof, CPU profiles of that length of each
// process from the start.
func (e *env) rebuildUnderLoad(ctx context.Context, v *volume, rep *replica, fast bool, limit int64, client []string,
	prof time.Duration) (float64, float64, FioResult, error) {
	if err := waitReplica(ctx, rep); err != nil {
		return 0, 0, FioResult{}, err
	}
	v.replicas = append(v.replicas, rep)
	return underLoad(ctx, e.dir, "client-"+rep.Name, client, v.pids(), func() error {
		waitProf := func() {}
		if prof > 0 {
			waitProf = profileProcs(ctx, e.dir, rep.Name, v.pprofAddrs(), prof)
		}
		defer waitProf()
		return addReplica(ctx, v, rep.addr, fast, limit)
	})
}

// clientStart is how long the client load runs before the action under
// it starts: fio's start and its NBD connection take about 0.1 s. It is
// short on purpose: the client's writes before a delta rebuild's
// ReplicaAdd are changes the returning replica lacks (at the ~26k IOPS of
// a QD1 client without the revision counter, 1.9 s of them rewrote another
// 10-15 % of the client's range and doubled what the 10 % delta moved).
const clientStart = 300 * time.Millisecond

// underLoad runs act while the client load (fio options, time-based, no
// ramp) runs under the name name, and returns act's time, the CPU seconds
// the processes pids used meanwhile (0 for none) and the client's result over the whole
// run (fio is interrupted when act returns).
func underLoad(ctx context.Context, dir, name string, client []string, pids []int, act func() error) (float64, float64, FioResult, error) {
	out := filepath.Join(dir, "fio-"+name+".json")
	args := append([]string{"--name=" + name, "--numjobs=1", "--percentile_list=50:99", "--output-format=json", "--output=" + out,
		"--time_based", "--runtime=1800"}, client...)
	fio := exec.CommandContext(ctx, "fio", args...)
	if err := fio.Start(); err != nil {
		return 0, 0, FioResult{}, err
	}
	stopFio := func() { _ = fio.Process.Signal(syscall.SIGINT); _ = fio.Wait() }
	if err := sleep(ctx, clientStart); err != nil {
		stopFio()
		return 0, 0, FioResult{}, err
	}
	cpu0 := cpuSeconds(pids)
	t0 := time.Now()
	err := act()
	secs := time.Since(t0).Seconds()
	cpu := cpuSeconds(pids) - cpu0
	stopFio()
	if err != nil {
		return 0, 0, FioResult{}, err
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return secs, cpu, FioResult{}, err
	}
	res, err := parseFio(data, false)
	return secs, cpu, res, err
}

// plainWriteUnderLoad is the p99 baseline of a rebuild: the client load
// while fio writes the rebuild's bytes (d) sequentially through the page
// cache (as the rebuild's receiver writes them, 1 MiB requests, fsync at
// the end) at the full rebuild's rate to a file in the same directory.
// What it does to the client's p99 is the machine's share of the
// rebuild's: the same bytes to the same disk at the same pace, without
// any of the rebuild's code.
func (e *env) plainWriteUnderLoad(ctx context.Context, v *volume, client []string, d int64, mibps float64) (FioResult, error) {
	f := filepath.Join(e.dir, "plain-write.img")
	defer removeLater(f)
	_, _, res, err := underLoad(ctx, e.dir, "client-plain-"+v.name, client, nil, func() error {
		_, err := runFio(ctx, e.dir, "plain-write-"+v.name, false, 10*time.Minute, "--filename="+f, "--ioengine=psync",
			"--rw=write", "--bs=1M", "--size="+strconv.FormatInt(d, 10), "--end_fsync=1",
			"--rate="+strconv.FormatInt(max(1, int64(mibps)), 10)+"m")
		return err
	})
	return res, err
}

// cpuSeconds is the CPU time (user and system) the processes used so far.
func cpuSeconds(pids []int) float64 {
	var ticks uint64
	for _, p := range pids {
		if t, err := cpuTicks(p); err == nil {
			ticks += t
		}
	}
	return float64(ticks) / procstat.ClockTicks
}

// ctl runs `longhorn engine ctl --url <v's engine> args...`.
func (e *env) ctl(ctx context.Context, v *volume, args ...string) error {
	args = append([]string{"engine", "ctl", "--url", v.ctlAddr, "--timeout", "20m"}, args...)
	if b, err := exec.CommandContext(ctx, e.longhorn, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("engine ctl %s: %w: %s", strings.Join(args[6:], " "), err, tail(b))
	}
	return nil
}

// Targets of issue 22 for part 2.
const (
	targetFullVsDisk  = 0.5 // full rebuild MiB/s vs the disk's sequential write
	targetDeltaVsFull = 0.2 // delta rebuild time vs the full one (10 % changed)
	targetP99         = 3.0 // client p99 during a rebuild vs without
)

// printRebuild prints part 2 and its targets.
func printRebuild(w io.Writer, runs []RebuildRun) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nPart 2: rebuild of 1 of 3 replicas (data in 64 KiB extents, 64 KiB holes; client 4 KiB randwrite QD1; revision counter %s)\n",
		onOff(runs[0].Counter, "on", "off (variant counter: on)"))
	fmt.Fprintf(w, "%8s %-7s %6s %12s %14s %9s %8s %10s %10s %10s %6s %10s | %s\n", "data", "variant", "MB/s", "disk MiB/s", "full s (MiB/s)", "x disk", "delta s",
		"x full", "p99 quiet", "full/delta", "plain", "cpu s f/d", "loadavg")
	for _, r := range runs {
		if r.Err != "" {
			fmt.Fprintf(w, "%6dMi error: %s\n", r.DataBytes>>20, r.Err)
			continue
		}
		xd, xf := r.FullMiBps/r.DiskDurable.MiBps, r.DeltaSecs/r.FullSecs
		pf, pd, pp := r.DuringFull.P99us/r.Quiet.P99us, r.DuringDelta.P99us/r.Quiet.P99us, r.DuringPlain.P99us/r.Quiet.P99us
		limit := "-"
		if r.LimitMBps > 0 {
			limit = strconv.FormatInt(r.LimitMBps, 10)
		}
		fmt.Fprintf(w, "%6dMi %-7s %6s %5.0f (%5.0f) %6.1f (%5.0f) %5.2f %-3s %7.1f %5.2f %-4s %8.0fus %4.1fx|%4.1fx %s %5.1fx %5.1f/%4.1f | %s\n",
			r.DataBytes>>20, r.Binary, limit, r.DiskDurable.MiBps, r.Disk.MiBps, r.FullSecs, r.FullMiBps, xd, mark(xd >= targetFullVsDisk), r.DeltaSecs, xf,
			mark(xf <= targetDeltaVsFull), r.Quiet.P99us, pf, pd, mark(pf <= targetP99 && pd <= targetP99), pp, r.FullCPU, r.DeltaCPU, r.LoadAvg)
	}
	fmt.Fprintf(w, "Targets: full >= %.1fx disk seq write (durable: fio direct=1 with end_fsync=1, as the rebuild ends with an fsync; in brackets without it), delta <= %.1fx full time, client p99 <= %.0fx without a rebuild\n",
		targetFullVsDisk, targetDeltaVsFull, targetP99)
	fmt.Fprintln(w, "plain: the client's p99 (x quiet) while fio writes the same bytes through the page cache at the full rebuild's rate, no rebuild (the machine's share)")
}

// onOff is on when b, else off.
func onOff(b bool, on, off string) string {
	if b {
		return on
	}
	return off
}

// mark is "ok" or "MISS" for a target.
func mark(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISS"
}

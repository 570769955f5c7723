package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// ratio returns a/b, or 0 when either is missing.
func ratio(a, b Result) float64 {
	if a.Err != "" || b.Err != "" || a.IOPS == 0 || b.IOPS == 0 {
		return 0
	}
	return a.IOPS / b.IOPS
}

func fmtRatio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// report prints one table per job and the target checks; it returns true when
// a row missed its target.
func report(w io.Writer, rows []*row, js []Job) (failed bool) {
	byKey := map[string]*row{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	for _, j := range js {
		reportJob(w, rows, byKey, j)
	}
	fmt.Fprintln(w, "\nTargets (throughput ratio to the row's baseline):")
	for _, r := range rows {
		failed = checkRow(w, r, byKey[r.Baseline], js) || failed
	}
	for _, r := range rows {
		if r.skip != "" {
			fmt.Fprintf(w, "  (%s) skipped: %s\n", r.Key, r.skip)
		}
	}
	return failed
}

// reportJob prints one job's table: each row's result with its ratios to
// its baseline and to row (0), then the rows' syscall counts and CPU costs.
func reportJob(w io.Writer, rows []*row, byKey map[string]*row, j Job) {
	fmt.Fprintf(w, "\n%s\n", j.Name)
	fmt.Fprintf(w, "  %-4s %-58s %10s %9s %9s %9s %8s %8s\n", "row", "target", "IOPS", "MiB/s", "p50 us", "p99 us", "x base", "x (0)")
	for _, r := range rows {
		if r.skip != "" {
			continue
		}
		res := r.results[j.Name]
		if res.Err != "" {
			fmt.Fprintf(w, "  %-4s %-58s error: %s\n", "("+r.Key+")", r.Name, res.Err)
			continue
		}
		var xb, x0 float64
		if b := byKey[r.Baseline]; b != nil && r.Baseline != "" {
			xb = ratio(res, b.results[j.Name])
		}
		if z := byKey["0"]; z != nil {
			x0 = ratio(res, z.results[j.Name])
		}
		fmt.Fprintf(w, "  %-4s %-58s %10.0f %9.1f %9.0f %9.0f %8s %8s\n", "("+r.Key+")", r.Name,
			res.IOPS, res.BW/(1<<20), res.P50us, res.P99us, fmtRatio(xb), fmtRatio(x0))
	}
	for _, r := range rows {
		if r.skip != "" {
			continue
		}
		res := r.results[j.Name]
		names := make([]string, 0, len(res.Syscalls))
		for n := range res.Syscalls {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "       (%s) %-11s syscalls per I/O: %s\n", r.Key, n, res.Syscalls[n])
		}
		printCosts(w, r.Key, res.Costs)
	}
}

// checkRow prints whether a row meets MinRead/MinWrite on every job.
func checkRow(w io.Writer, r *row, base *row, js []Job) (failed bool) {
	if r.MinRead == 0 && r.MinWrite == 0 || r.skip != "" {
		return false
	}
	if base == nil || base.skip != "" {
		fmt.Fprintf(w, "  (%s) not checked: baseline (%s) did not run\n", r.Key, r.Baseline)
		return false
	}
	var misses []string
	for _, j := range js {
		want := r.MinWrite
		if j.Read() {
			want = r.MinRead
		}
		x := ratio(r.results[j.Name], base.results[j.Name])
		if x < want {
			misses = append(misses, fmt.Sprintf("%s %s < %.2fx", j.Name, fmtRatio(x), want))
		}
	}
	if len(misses) == 0 {
		fmt.Fprintf(w, "  (%s) PASS: reads >= %.2fx, writes >= %.2fx of (%s) on every job\n", r.Key, r.MinRead, r.MinWrite, r.Baseline)
		return false
	}
	fmt.Fprintf(w, "  (%s) MISS: %s\n", r.Key, strings.Join(misses, "; "))
	return true
}

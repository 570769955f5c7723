package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// targetWall is the budget for parts 1-3 in one `make bench-scale`
// (on 2 cores).
const targetWall = 20 * time.Minute

// allParts are the parts the budget covers.
var allParts = []string{"1", "2", "3"}

// PartTime is the wall time of one part of the run.
type PartTime struct {
	Part string  `json:"part"`
	Secs float64 `json:"secs"`
	// Note says what the part ran or what part of its time went where
	// (part 3: the cluster's start), "" when nothing.
	Note string `json:"note,omitempty"`
	// Failed is set when a measurement of the part failed: its time then
	// says nothing about the budget.
	Failed bool `json:"failed,omitempty"`
}

// wallVerdict compares the run's total with targetWall: "met" or "MISSED"
// when every part of allParts ran and none failed, else why the budget does
// not apply.
func wallVerdict(parts []PartTime, total time.Duration) string {
	for _, p := range allParts {
		i := slices.IndexFunc(parts, func(t PartTime) bool { return t.Part == p })
		if i < 0 {
			return fmt.Sprintf("not comparable: part %s did not run", p)
		}
		if parts[i].Failed {
			return fmt.Sprintf("not comparable: part %s failed", p)
		}
	}
	return verdict(total < targetWall)
}

// printWall prints each part's wall time and the total against targetWall.
func printWall(w io.Writer, parts []PartTime, total time.Duration) {
	fmt.Fprintln(w, "\nWall time")
	for _, p := range parts {
		note := ""
		if p.Note != "" {
			note = " (" + p.Note + ")"
		}
		failed := ""
		if p.Failed {
			failed = ", FAILED"
		}
		fmt.Fprintf(w, "  part %s: %s%s%s\n", p.Part, fmtSecs(p.Secs), note, failed)
	}
	fmt.Fprintf(w, "  total (parts %s): %s; target parts %s < %s: %s\n", joinNames(parts, func(p PartTime) string { return p.Part }), fmtSecs(total.Seconds()),
		strings.Join(allParts, "-"), fmtSecs(targetWall.Seconds()), wallVerdict(parts, total))
}

// joinNames is "a,b,c" of name(x) for each x of xs, in their order.
func joinNames[T any](xs []T, name func(T) string) string {
	ns := make([]string, len(xs))
	for i, x := range xs {
		ns[i] = name(x)
	}
	return strings.Join(ns, ",")
}

// fmtSecs is s as "12m05s" (whole seconds).
func fmtSecs(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
}

// costFailed, rebuildFailed and cpFailed tell whether a measurement of
// part 1, 2 or 3 failed.
func costFailed(rs []CostRun) bool {
	return slices.ContainsFunc(rs, func(r CostRun) bool { return r.Err != "" })
}

func rebuildFailed(rs []RebuildRun) bool {
	return slices.ContainsFunc(rs, func(r RebuildRun) bool { return r.Err != "" })
}

func cpFailed(r CPRun) bool {
	return r.Err != "" || slices.ContainsFunc(r.Phases, func(l Latency) bool { return l.Failed > 0 }) ||
		r.Failover.Moved < r.Failover.Owned
}

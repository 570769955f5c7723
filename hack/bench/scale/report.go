package main

import (
	"fmt"
	"io"
)

// Targets of issue 22 for part 1 (MiB of RSS, idle).
const (
	targetReplicaMiB = 15
	targetEngineMiB  = 20
)

// printCost prints part 1: one line per N and variant, then the targets.
func printCost(w io.Writer, runs []CostRun) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nPart 1: cost per volume (1 replica per volume; replica | engine; MiB; idle unless marked)")
	fmt.Fprintf(w, "%4s %-8s %13s %13s %11s %11s %9s %9s %9s %11s %6s %5s | %-26s %9s | %s\n",
		"vols", "variant", "RSS max", "anon", "PSS", "USS(uniq)", "fds", "threads", "gorout", "CPU %core", "start", "stop",
		"under randwrite-4k-qd32", "IOPS", "loadavg idle / load")
	for _, r := range runs {
		if r.Err != "" {
			fmt.Fprintf(w, "%4d %-8s error: %s\n", r.Volumes, r.Variant, r.Err)
			continue
		}
		rp, en := r.IdleReplica, r.IdleEngine
		fmt.Fprintf(w, "%4d %-8s %6.1f|%6.1f %6.1f|%6.1f %5.1f|%5.1f %5.1f|%5.1f %4.0f|%4.0f %4.0f|%4.0f %4.0f|%4.0f %5.2f|%5.2f %5.1fs %4.1fs | RSS %5.1f|%5.1f anon %4.1f|%4.1f CPU %3.0f|%3.0f%% %7.0f | %s / %s\n",
			r.Volumes, r.Variant, rp.MaxRSSMiB, en.MaxRSSMiB, rp.AnonMiB, en.AnonMiB, rp.PSSMiB, en.PSSMiB, rp.USSMiB, en.USSMiB,
			rp.FDs, en.FDs, rp.Threads, en.Threads, rp.Goroutines, en.Goroutines, rp.CPUPct, en.CPUPct, r.StartSecs, r.StopSecs,
			r.LoadReplica.RSSMiB, r.LoadEngine.RSSMiB, r.LoadReplica.AnonMiB, r.LoadEngine.AnonMiB, r.LoadReplica.CPUPct, r.LoadEngine.CPUPct, r.Load.IOPS,
			r.LoadAvgIdle, r.LoadAvgLoaded)
	}
	printIM(w, runs)
	fmt.Fprintln(w, "Real cost per volume = unique (private) memory, about the anonymous memory: the trim drops only shared file pages of the binary from RSS.")
	fmt.Fprintln(w, "Targets (every N, every variant with the trim on): idle replica <= 15 MiB RSS, idle engine <= 20 MiB RSS")
	for _, r := range runs {
		if r.Variant == noTrimVariant || r.Err != "" {
			continue
		}
		fmt.Fprintf(w, "  %2d volumes, %-6s: replica max %5.1f MiB %s, engine max %5.1f MiB %s; per volume %.1f MiB RSS, %.1f MiB PSS, %.1f MiB unique\n",
			r.Volumes, r.Variant, r.IdleReplica.MaxRSSMiB, verdict(r.IdleReplica.MaxRSSMiB <= targetReplicaMiB),
			r.IdleEngine.MaxRSSMiB, verdict(r.IdleEngine.MaxRSSMiB <= targetEngineMiB),
			r.IdleReplica.RSSMiB+r.IdleEngine.RSSMiB, r.IdleReplica.PSSMiB+r.IdleEngine.PSSMiB,
			r.IdleReplica.USSMiB+r.IdleEngine.USSMiB)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// printIM prints the instance manager of the im variant at each N, and what
// it costs per instance it runs (its unique memory over the smallest N's).
func printIM(w io.Writer, runs []CostRun) {
	var first *CostRun
	for i := range runs {
		r := &runs[i]
		if r.Variant != imVariant || r.Err != "" {
			continue
		}
		if first == nil {
			fmt.Fprintln(w, "Instance manager (variant im; it runs every volume's engine and replica): MiB, idle | under the load")
			first = r
		}
		m, l := r.IdleIM, r.LoadIM
		per := ""
		if r.Volumes > first.Volumes {
			per = fmt.Sprintf("; +%.0f KiB unique per instance over %d volumes", (m.USSMiB-first.IdleIM.USSMiB)*1024/float64(2*(r.Volumes-first.Volumes)), first.Volumes)
		}
		fmt.Fprintf(w, "  %2d volumes: RSS %5.1f | %5.1f, unique %5.1f | %5.1f, fds %3.0f, threads %3.0f, CPU %5.2f | %5.2f %%core%s\n",
			r.Volumes, m.RSSMiB, l.RSSMiB, m.USSMiB, l.USSMiB, m.FDs, m.Threads, m.CPUPct, l.CPUPct, per)
	}
}

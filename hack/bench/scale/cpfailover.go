package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// killManager deletes node-1's longhorn-manager pod and times until every
// volume it owned (status.ownerID) has another owner, and until the
// DaemonSet's new pod is Ready.
func killManager(ctx context.Context, f *framework.Cluster, c *cluster.Config, tr *tracker) Failover {
	node := c.NodeName(1)
	fo := Failover{Node: node}
	owned := tr.owned(node)
	fo.Owned = len(owned)
	chans := make([]<-chan time.Time, len(owned))
	for i, n := range owned {
		chans[i] = tr.expect(n, notOwnedBy(node))
	}
	pl, err := f.Kube.CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=longhorn-manager"})
	if err != nil {
		cpLogf("manager kill: %v", err)
		return fo
	}
	var old *corev1.Pod
	for i := range pl.Items {
		if pl.Items[i].Spec.NodeName == node && pl.Items[i].DeletionTimestamp == nil {
			old = &pl.Items[i]
		}
	}
	if old == nil {
		cpLogf("manager kill: no manager pod on %s", node)
		return fo
	}
	t0 := time.Now()
	if err := f.Kube.CoreV1().Pods(framework.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		cpLogf("manager kill: %v", err)
		return fo
	}
	var lat []float64
	for _, ch := range chans {
		if d, err := await(ctx, ch, t0, 3*time.Minute, "new owner"); err == nil {
			lat = append(lat, d.Seconds())
		}
	}
	slices.Sort(lat)
	fo.Moved = len(lat)
	if len(lat) > 0 {
		fo.P50, fo.AllMovedSecs = percentile(lat, 0.5), lat[len(lat)-1]
	}
	_ = pollUntil(ctx, 500*time.Millisecond, 3*time.Minute, func() bool {
		pl, err := f.Kube.CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=longhorn-manager"})
		if err != nil {
			return false
		}
		for _, p := range pl.Items {
			if p.Spec.NodeName == node && p.UID != old.UID && podIsReady(&p) {
				return true
			}
		}
		return false
	})
	fo.PodReadySecs = time.Since(t0).Seconds()
	cpLogf("manager pod %s deleted: %d/%d owned volumes moved, all in %.1fs (p50 %.1fs); new pod Ready after %.1fs",
		old.Name, fo.Moved, fo.Owned, fo.AllMovedSecs, fo.P50, fo.PodReadySecs)
	return fo
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Targets of issue 22 for part 3.
const (
	targetAttachP99  = 2.0 // seconds, 300 volumes, 30 attached
	targetRestCPUPct = 5.0 // % of one core per manager, 300 volumes at rest
)

// printCPRun prints part 3's tables and the targets.
func printCPRun(w io.Writer, r CPRun) {
	fmt.Fprintf(w, "\nPart 3: control plane under load (%d volumes of %d replicas over 3 nodes, %d attached; cluster up %.0fs, part %.0fs)\n",
		r.Volumes, r.Replicas, r.Attached, r.UpSecs, r.Secs)
	if r.Err != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Err)
	}
	fmt.Fprintf(w, "%-26s %5s %7s %7s %7s %7s %6s\n", "phase (per volume)", "n", "p50 s", "p99 s", "max s", "wall s", "failed")
	for _, l := range r.Phases {
		fmt.Fprintf(w, "%-26s %5d %7.2f %7.2f %7.2f %7.1f %6d\n", l.Phase, l.N, l.P50, l.P99, l.Max, l.Wall, l.Failed)
	}
	fo := r.Failover
	fmt.Fprintf(w, "manager pod on %s deleted: %d/%d volumes it owned had a new owner after %.1fs (p50 %.1fs); new pod Ready after %.1fs\n",
		fo.Node, fo.Moved, fo.Owned, fo.AllMovedSecs, fo.P50, fo.PodReadySecs)
	printAttachSplit(w, r.AttachSplit, 8)
	fmt.Fprintln(w, "Managers per window: CPU % of one core | RSS MiB | API requests/s | reconciles/s (queue adds/s); busiest API calls and queues")
	fmt.Fprintf(w, "%-34s %6s %-9s %-26s %-26s %-26s %9s %7s %s\n", "window", "secs", "", "node-1", "node-2", "node-3", "apiserver", "depth", "loadavg")
	for _, win := range r.Windows {
		cells := make([]string, 3)
		for i := range cells {
			cells[i] = "-"
		}
		for i, m := range win.Managers {
			if i < 3 {
				cells[i] = fmt.Sprintf("%5.1f|%4.0f|%5.1f|%5.1f(%5.1f)", m.CPUPct, m.RSSMiB, m.APIPerSec, m.ReconPerSec, m.AddsPerSec)
			}
		}
		fmt.Fprintf(w, "%-34s %6.1f %-9s %-26s %-26s %-26s %9.1f %7.0f %s\n", win.Label, win.Secs, "cpu|rss|", cells[0], cells[1], cells[2],
			win.APIServerPerSec, win.DepthMax, win.LoadAvg)
		for _, m := range win.Managers {
			fmt.Fprintf(w, "    %s: api %s; queues %s\n", m.Node, rates(m.TopAPI), rates(m.TopQueues))
		}
	}
	printCPTargets(w, r)
}

func rates(rs []Rate) string {
	var s []string
	for _, r := range rs {
		s = append(s, fmt.Sprintf("%s %.2f/s", r.Name, r.PerSec))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// printCPTargets prints each target next to its number.
func printCPTargets(w io.Writer, r CPRun) {
	fmt.Fprintln(w, "Targets:")
	for _, l := range r.Phases {
		if strings.HasPrefix(l.Phase, "attach") {
			fmt.Fprintf(w, "  attach p99 <= %.0f s with %d volumes and %d attached: %.2f s %s\n", targetAttachP99, r.Volumes, l.N, l.P99,
				verdict(l.N > 0 && l.Failed == 0 && l.P99 <= targetAttachP99))
		}
	}
	for _, win := range r.Windows {
		if !strings.HasPrefix(win.Label, "rest") || false {
			continue
		}
		worst := 0.0
		for _, m := range win.Managers {
			worst = max(worst, m.CPUPct)
		}
		fmt.Fprintf(w, "  manager CPU at rest < %.0f %% of one core (%s): busiest manager %.2f %% %s\n", targetRestCPUPct, win.Label, worst,
			verdict(len(win.Managers) > 0 && worst < targetRestCPUPct))
	}
}

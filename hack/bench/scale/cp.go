package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// cpOptions are part 3's shape.
type cpOptions struct {
	volumes, attach, replicas, parallel, attachParallel int
	size                                                int64
	rest, restEmpty, settle                             time.Duration
	altImage                                            string // A/B: the managers' other image archive
	abExtra                                             int    // A/B: volumes created and deleted by each arm
	cluster                                             clusterOptions
}

// Latency is one phase's per-volume latencies in seconds.
type Latency struct {
	Phase  string  `json:"phase"`
	N      int     `json:"n"`
	P50    float64 `json:"p50_s"`
	P99    float64 `json:"p99_s"`
	Max    float64 `json:"max_s"`
	Wall   float64 `json:"wall_s"`
	Failed int     `json:"failed"`
}

// Failover is the manager-pod kill: how many volumes the node's manager
// owned, and the time from the pod deletion until each had another owner.
type Failover struct {
	Node         string  `json:"node"`
	Owned        int     `json:"owned"`
	AllMovedSecs float64 `json:"all_moved_s"`
	P50          float64 `json:"p50_s"`
	Moved        int     `json:"moved"`
	PodReadySecs float64 `json:"new_pod_ready_s"`
}

// CPRun is part 3's result.
type CPRun struct {
	Volumes  int       `json:"volumes"`
	Attached int       `json:"attached"`
	Replicas int       `json:"replicas"`
	UpSecs   float64   `json:"cluster_up_s"`
	Phases   []Latency `json:"phases"`
	Windows  []Window  `json:"windows"`
	Failover Failover  `json:"failover"`
	// AttachSplit is each attach's milestones (cpsplit.go).
	AttachSplit []AttachSplit `json:"attach_split,omitempty"`
	Err         string        `json:"error,omitempty"`
	Secs        float64       `json:"secs"`
}

// cpLogf prints a progress line of part 3.
func cpLogf(format string, args ...any) {
	fmt.Printf("  part 3 [%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// runControlPlane brings the cluster up, runs the phases and removes it.
func runControlPlane(ctx context.Context, longhornBin string, o cpOptions) (r CPRun) {
	r = CPRun{Volumes: o.volumes, Attached: o.attach, Replicas: o.replicas}
	t0 := time.Now()
	defer func() { r.Secs = time.Since(t0).Seconds() }()
	c, err := o.cluster.config(longhornBin)
	if o.altImage != "" {
		c.ImageArchives = append(c.ImageArchives, o.altImage)
	}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	unlock, err := lockIfShared(c.Name)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer unlock()
	if !o.cluster.keep {
		defer func() {
			if err := cluster.Down(c, func(string, ...any) {}); err != nil {
				cpLogf("cluster down: %v", err)
			}
		}()
	}
	f, err := clusterUp(ctx, &c, o.cluster, func(string, ...any) {})
	r.UpSecs = time.Since(t0).Seconds()
	if err != nil {
		r.Err = err.Error()
		return r
	}
	cpLogf("cluster %s up with Longhorn ready in %.0fs", c.Name, r.UpSecs)
	if err := runPhases(ctx, f, &c, o, &r); err != nil {
		r.Err = err.Error()
	}
	return r
}

// runPhases: rest (empty), create, rest, attach, rest, manager kill,
// detach, delete.
func runPhases(ctx context.Context, f *framework.Cluster, c *cluster.Config, o cpOptions, r *CPRun) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the tracker's informers stop before the cluster goes
	tr, err := startTracker(ctx, f.LH)
	if err != nil {
		return err
	}
	restFor := func(label string, d time.Duration) error {
		w, err := measure(ctx, f, label, d, nil)
		r.Windows = append(r.Windows, w)
		return err
	}
	rest := func(label string) error { return restFor(label, o.rest) }
	phase := func(label string, fn func() Latency) {
		var l Latency
		w, _ := measure(ctx, f, label, 0, func() error { l = fn(); return nil })
		r.Windows, r.Phases = append(r.Windows, w), append(r.Phases, l)
		cpLogf("%s: p50 %.2fs p99 %.2fs max %.2fs, wall %.1fs, %d failed", l.Phase, l.P50, l.P99, l.Max, l.Wall, l.Failed)
	}
	names := make([]string, o.volumes)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%03d", i)
	}
	if o.restEmpty > 0 {
		if err := restFor("after ready, 0 volumes", o.restEmpty); err != nil {
			return err
		}
	}
	var sched Latency
	phase("create", func() Latency {
		ready, s := createAll(ctx, f, tr, names, o)
		sched = s
		return ready
	})
	r.Phases = append(r.Phases, sched)
	if err := rest(fmt.Sprintf("rest, %d detached", o.volumes)); err != nil {
		return err
	}
	if o.altImage != "" {
		if err := runAB(ctx, f, c, tr, o, r, rest, phase); err != nil {
			return err
		}
	}
	att := names[:min(o.attach, len(names))]
	phase("attach", func() Latency {
		l, splits := attachAll(ctx, f, c, tr, att, o.attachParallel)
		r.AttachSplit = splits
		return l
	})
	if err := rest(fmt.Sprintf("rest, %d volumes, %d attached", o.volumes, len(att))); err != nil {
		return err
	}
	r.Failover = killManager(ctx, f, c, tr)
	phase("detach", func() Latency { return detachAll(ctx, f, tr, att, o.attachParallel) })
	phase("delete", func() Latency { return deleteAll(ctx, f, tr, names, o.parallel) })
	return nil
}

// fanOut runs fn for every name on n goroutines and returns each one's
// latency (negative: failed) and the wall time.
func fanOut(ctx context.Context, names []string, n int, fn func(name string) (time.Duration, error)) ([]float64, float64, int) {
	t0 := time.Now()
	lat := make([]float64, len(names))
	idx := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range max(n, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				d, err := fn(names[i])
				lat[i] = d.Seconds()
				if err != nil {
					mu.Lock()
					if failed == 0 {
						cpLogf("%s: %v", names[i], err)
					}
					failed++
					mu.Unlock()
					lat[i] = -1
				}
			}
		}()
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		idx <- i
	}
	close(idx)
	wg.Wait()
	return lat, time.Since(t0).Seconds(), failed
}

// summarize computes the percentiles of the successful latencies.
func summarize(phase string, lat []float64, wall float64, failed int) Latency {
	var ok []float64
	for _, l := range lat {
		if l >= 0 {
			ok = append(ok, l)
		}
	}
	slices.Sort(ok)
	l := Latency{Phase: phase, N: len(ok), Wall: wall, Failed: failed}
	if len(ok) > 0 {
		l.P50, l.P99, l.Max = percentile(ok, 0.50), percentile(ok, 0.99), ok[len(ok)-1]
	}
	return l
}

// percentile of sorted xs, nearest rank.
func percentile(xs []float64, p float64) float64 {
	i := int(p*float64(len(xs))+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// await waits for ch up to timeout and returns the latency from t0.
func await(ctx context.Context, ch <-chan time.Time, t0 time.Time, timeout time.Duration, what string) (time.Duration, error) {
	select {
	case at := <-ch:
		return at.Sub(t0), nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("%s: not after %v", what, timeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// createAll creates the volumes (o.parallel at a time) and returns the
// latencies from the create request to detached-ready and to Scheduled.
func createAll(ctx context.Context, f *framework.Cluster, tr *tracker, names []string, o cpOptions) (ready, sched Latency) {
	schedLat := make(map[string]float64, len(names))
	var mu sync.Mutex
	lat, wall, failed := fanOut(ctx, names, o.parallel, func(name string) (time.Duration, error) {
		sch, rdy := tr.expect(name, scheduled), tr.expect(name, detachedReady)
		t0 := time.Now()
		if _, err := f.CreateVolume(ctx, framework.NewVolume(name, o.size, o.replicas, longhorn.VolumeFrontendNBD)); err != nil {
			return 0, err
		}
		d, err := await(ctx, sch, t0, 3*time.Minute, "Scheduled")
		if err != nil {
			return 0, err
		}
		mu.Lock()
		schedLat[name] = d.Seconds()
		mu.Unlock()
		return await(ctx, rdy, t0, 3*time.Minute, "detached and scheduled")
	})
	s := make([]float64, 0, len(names))
	for _, n := range names {
		if v, ok := schedLat[n]; ok {
			s = append(s, v)
		}
	}
	return summarize("create -> detached-ready", lat, wall, failed), summarize("create -> Scheduled", s, wall, len(names)-len(s))
}

// setTicket sets (t != nil) or removes the bench's attachment ticket on the
// volume's VolumeAttachment, as the UI and API attach.
func setTicket(ctx context.Context, f *framework.Cluster, volume string, t *longhorn.AttachmentTicket) error {
	api := f.LH.LonghornV1beta2().VolumeAttachments(framework.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		va, err := api.Get(ctx, volume, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if t == nil {
			delete(va.Spec.AttachmentTickets, benchTicket)
		} else {
			if va.Spec.AttachmentTickets == nil {
				va.Spec.AttachmentTickets = map[string]*longhorn.AttachmentTicket{}
			}
			va.Spec.AttachmentTickets[benchTicket] = t
		}
		_, err = api.Update(ctx, va, metav1.UpdateOptions{})
		return err
	})
}

const benchTicket = "bench-scale"

// attachAll attaches names round-robin over the nodes (parallel at a time)
// and returns the latencies from the ticket update to a running engine
// with an endpoint on an attached volume.
// Each attach's milestones come back as its split.
func attachAll(ctx context.Context, f *framework.Cluster, c *cluster.Config, tr *tracker, names []string, parallel int) (Latency, []AttachSplit) {
	node := map[string]string{}
	for i, n := range names {
		node[n] = c.NodeName(1 + i%c.Nodes)
	}
	var mu sync.Mutex
	var splits []AttachSplit
	lat, wall, failed := fanOut(ctx, names, parallel, func(name string) (time.Duration, error) {
		ch := tr.expect(name, attachedOn(node[name]))
		t0 := time.Now()
		tr.arm(name, node[name], t0)
		err := setTicket(ctx, f, name, &longhorn.AttachmentTicket{ID: benchTicket, Type: longhorn.AttacherTypeLonghornAPI, NodeID: node[name],
			Parameters: map[string]string{longhorn.AttachmentParameterDisableFrontend: "false"}})
		if err != nil {
			return 0, err
		}
		d, err := await(ctx, ch, t0, 2*time.Minute, "attached with an endpoint")
		mu.Lock()
		splits = append(splits, tr.disarm(name, d))
		mu.Unlock()
		return d, err
	})
	return summarize("attach -> endpoint ready", lat, wall, failed), splits
}

// detachAll removes the tickets and times each volume until detached.
func detachAll(ctx context.Context, f *framework.Cluster, tr *tracker, names []string, parallel int) Latency {
	lat, wall, failed := fanOut(ctx, names, parallel, func(name string) (time.Duration, error) {
		ch := tr.expect(name, detached)
		t0 := time.Now()
		if err := setTicket(ctx, f, name, nil); err != nil {
			return 0, err
		}
		return await(ctx, ch, t0, 2*time.Minute, "detached")
	})
	return summarize("detach -> detached", lat, wall, failed)
}

// deleteAll deletes the volumes and times each until its object is gone.
func deleteAll(ctx context.Context, f *framework.Cluster, tr *tracker, names []string, parallel int) Latency {
	lat, wall, failed := fanOut(ctx, names, parallel, func(name string) (time.Duration, error) {
		ch := tr.expect(name, gone)
		t0 := time.Now()
		err := f.LH.LonghornV1beta2().Volumes(framework.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !framework.IsNotFound(err) {
			return 0, err
		}
		return await(ctx, ch, t0, 3*time.Minute, "deleted")
	})
	return summarize("delete -> gone", lat, wall, failed)
}

// printCP prints part 3 with the targets.
func printCP(w io.Writer, r *CPRun) {
	if r == nil {
		return
	}
	printCPRun(w, *r)
}

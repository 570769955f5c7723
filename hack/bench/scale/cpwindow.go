package main

import (
	"context"
	"sync"
	"time"

	"github.com/longhorn-go/longhorn/internal/procstat"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// Rate is a named per-second rate.
type Rate struct {
	Name   string  `json:"name"`
	PerSec float64 `json:"per_sec"`
}

// ManagerWindow is one manager over a window: CPU in % of one core, RSS at
// the end, Kubernetes API requests and finished reconciles (workqueue items)
// per second, with the busiest API verb/resource and queues.
type ManagerWindow struct {
	Node         string  `json:"node"`
	CPUPct       float64 `json:"cpu_pct"`
	RSSMiB       float64 `json:"rss_mib"`
	APIPerSec    float64 `json:"api_requests_per_sec"`
	TopAPI       []Rate  `json:"top_api"`
	ReconPerSec  float64 `json:"reconciles_per_sec"`
	TopQueues    []Rate  `json:"top_queues"`
	AddsPerSec   float64 `json:"queue_adds_per_sec"`
	ScrapeFailed string  `json:"scrape_failed,omitempty"`
}

// Window is the control plane over one phase or rest period.
type Window struct {
	Label    string          `json:"label"`
	Secs     float64         `json:"secs"`
	Managers []ManagerWindow `json:"managers"`
	// APIServerPerSec is every client's requests (apiserver_request_total).
	APIServerPerSec float64 `json:"apiserver_requests_per_sec"`
	// DepthMax is the largest sum of every manager's workqueue depths seen
	// (sampled every 2 s during a phase, at the start and the end of a rest
	// window: a scrape costs the manager CPU), DeepestQueue the deepest queue then.
	DepthMax     float64 `json:"workqueue_depth_max"`
	DeepestQueue string  `json:"deepest_queue"`
	LoadAvg      string  `json:"loadavg"`
}

// measure runs during (or sleeps d when nil) and reports the managers over
// that time.
func measure(ctx context.Context, f *framework.Cluster, label string, d time.Duration, during func() error) (Window, error) {
	ms, err := managerPods(ctx, f)
	if err != nil {
		return Window{Label: label}, err
	}
	before := make([]mgrSnap, len(ms))
	errs := make([]error, len(ms))
	for i, m := range ms {
		before[i], errs[i] = snapManager(ctx, f, m)
	}
	apiA, _ := apiserverMetrics(ctx, f)
	t0 := time.Now()
	w := Window{Label: label}
	var mu sync.Mutex
	interval := 2 * time.Second
	if during == nil {
		interval = d + time.Hour // the end sample only
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			tot, q, _ := depths(ctx, f, ms)
			mu.Lock()
			if tot > w.DepthMax {
				w.DepthMax, w.DeepestQueue = tot, q
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	var runErr error
	if during != nil {
		runErr = during()
	} else {
		select {
		case <-ctx.Done():
			runErr = ctx.Err()
		case <-time.After(d):
		}
	}
	close(stop)
	wg.Wait()
	if tot, q, _ := depths(ctx, f, ms); tot > w.DepthMax {
		w.DepthMax, w.DeepestQueue = tot, q
	}
	w.Secs = time.Since(t0).Seconds()
	for i, m := range ms {
		w.Managers = append(w.Managers, windowOf(ctx, f, m, before[i], errs[i], w.Secs))
	}
	if apiB, err := apiserverMetrics(ctx, f); err == nil && apiA != nil {
		w.APIServerPerSec = (series(apiB, "apiserver_request_total")[""] - series(apiA, "apiserver_request_total")[""]) / w.Secs
	}
	w.LoadAvg = loadAvg()
	return w, runErr
}

func windowOf(ctx context.Context, f *framework.Cluster, m managerPod, a mgrSnap, aErr error, secs float64) ManagerWindow {
	mw := ManagerWindow{Node: m.Node}
	b, err := snapManager(ctx, f, m)
	if err == nil {
		err = aErr
	}
	if err != nil {
		mw.ScrapeFailed = err.Error()
		return mw
	}
	mw.CPUPct = float64(b.ticks-a.ticks) / procstat.ClockTicks / secs * 100
	if mem, err := procstat.ReadMem(m.PID); err == nil {
		mw.RSSMiB = float64(mem.RSS) / 1024
	}
	api := delta(a.api, b.api, secs)
	rec := delta(a.reconcil, b.reconcil, secs)
	mw.APIPerSec, mw.ReconPerSec = sumRates(api), sumRates(rec)
	mw.AddsPerSec = sumRates(delta(a.adds, b.adds, secs))
	mw.TopAPI, mw.TopQueues = top(api, 3), top(rec, 3)
	return mw
}

func top(rs []Rate, n int) []Rate {
	if len(rs) > n {
		return rs[:n]
	}
	return rs
}

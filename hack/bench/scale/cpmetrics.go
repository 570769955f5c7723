package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/testbed/framework"
)

// managerPod is one longhorn-manager pod and its process on this machine
// (every node's processes live in the host's PID namespace).
type managerPod struct {
	Node, Name string
	PID        int
}

// managerPods finds the running manager pods and their processes: the
// `longhorn manager` process whose cgroup names the pod's UID (the pod IP
// alone is not unique: other clusters run on the same machine).
func managerPods(ctx context.Context, f *framework.Cluster) ([]managerPod, error) {
	pl, err := f.Kube.CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=longhorn-manager"})
	if err != nil {
		return nil, err
	}
	var out []managerPod
	for _, p := range pl.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		pid, err := podProcess(string(p.UID), "manager")
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		out = append(out, managerPod{Node: p.Spec.NodeName, Name: p.Name, PID: pid})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}

// podProcess returns the pid of `longhorn SUB` in pod uid's cgroup.
func podProcess(uid, sub string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	alt := strings.ReplaceAll(uid, "-", "_") // systemd-style cgroup names
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(string(cl), "\x00")
		if len(argv) < 2 || filepath.Base(argv[0]) != "longhorn" || argv[1] != sub {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err == nil && (bytes.Contains(cg, []byte(uid)) || bytes.Contains(cg, []byte(alt))) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no `longhorn %s` process in the pod's cgroup", sub)
}

// scrape reads a manager's /metrics through the API server's pod proxy.
func scrape(ctx context.Context, f *framework.Cluster, pod string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := f.Kube.CoreV1().Pods(framework.Namespace).ProxyGet("http", pod, "9500", "metrics", nil).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(b)
}

// apiserverMetrics reads the API server's own /metrics.
func apiserverMetrics(ctx context.Context, f *framework.Cluster) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := f.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(b)
}

func parseMetrics(b []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(bytes.NewReader(b))
}

// series sums family name by the values of labels (joined with "/"):
// counters, gauges and untyped samples.
func series(fams map[string]*dto.MetricFamily, name string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		var key []string
		for _, want := range labels {
			v := ""
			for _, l := range m.Label {
				if l.GetName() == want {
					v = l.GetValue()
				}
			}
			key = append(key, v)
		}
		val := m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		out[strings.Join(key, "/")] += val
	}
	return out
}

// mgrSnap is one manager's counters at one moment.
type mgrSnap struct {
	ticks    uint64
	api      map[string]float64 // verb/resource -> requests
	adds     map[string]float64 // queue -> adds
	reconcil map[string]float64 // queue -> finished items (work_duration count)
}

func snapManager(ctx context.Context, f *framework.Cluster, m managerPod) (mgrSnap, error) {
	t, err := cpuTicks(m.PID)
	if err != nil {
		return mgrSnap{}, err
	}
	fams, err := scrape(ctx, f, m.Name)
	if err != nil {
		return mgrSnap{}, err
	}
	s := mgrSnap{ticks: t, api: series(fams, "longhorn_manager_api_requests_total", "verb", "resource"),
		adds: series(fams, "workqueue_adds_total", "name"), reconcil: map[string]float64{}}
	if f := fams["workqueue_work_duration_seconds"]; f != nil {
		for _, mm := range f.Metric {
			for _, l := range mm.Label {
				if l.GetName() == "name" {
					s.reconcil[l.GetValue()] += float64(mm.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return s, nil
}

// depths returns the sum of workqueue_depth over every manager's queues
// and the deepest queue (manager/queue).
func depths(ctx context.Context, f *framework.Cluster, ms []managerPod) (total float64, deepest string, deepestN float64) {
	for _, m := range ms {
		fams, err := scrape(ctx, f, m.Name)
		if err != nil {
			continue
		}
		for q, d := range series(fams, "workqueue_depth", "name") {
			total += d
			if d > deepestN {
				deepest, deepestN = m.Node+"/"+q, d
			}
		}
	}
	return total, deepest, deepestN
}

// delta returns b-a per second for every key of b, largest first.
func delta(a, b map[string]float64, secs float64) []Rate {
	var out []Rate
	for k, v := range b {
		if d := v - a[k]; d > 0 {
			out = append(out, Rate{Name: k, PerSec: d / secs})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PerSec > out[j].PerSec })
	return out
}

func sumRates(rs []Rate) float64 {
	var s float64
	for _, r := range rs {
		s += r.PerSec
	}
	return s
}

package metrics

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// KubeRegistry holds the manager's Kubernetes client metrics: client-go's
// workqueue metrics (the names and labels of Kubernetes' component-base,
// which Longhorn's manager exposes too: workqueue_depth, workqueue_adds_total,
// workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
// workqueue_unfinished_work_seconds,
// workqueue_longest_running_processor_seconds, workqueue_retries_total, label
// name = the controller's queue) and the REST client's requests
// (rest_client_requests_total{code,method,host}, and
// longhorn_manager_api_requests_total{verb,resource}, the same requests by
// API verb and resource). Handler serves it beside the Longhorn collectors.
var KubeRegistry = prometheus.NewRegistry()

// RegisterKubeClientMetrics makes client-go report into KubeRegistry. Call
// it once, before the first workqueue and REST client are created (client-go
// takes the first provider only; later queues of an earlier provider keep
// reporting nowhere).
func RegisterKubeClientMetrics() {
	wq := newWorkqueueMetrics()
	rc := newRESTMetrics()
	KubeRegistry.MustRegister(wq.collectors()...)
	KubeRegistry.MustRegister(rc.results, rc.byResource)
	workqueue.SetProvider(wq)
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestResult: rc, RequestLatency: rc})
}

// workqueueMetrics is a workqueue.MetricsProvider over Prometheus vectors
// labelled by queue name.
type workqueueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

func newWorkqueueMetrics() *workqueueMetrics {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: name, Help: help}, []string{"name"})
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: name, Help: help}, []string{"name"})
	}
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: name, Help: help,
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12)}, []string{"name"})
	}
	return &workqueueMetrics{
		depth:      gauge("depth", "Current depth of workqueue"),
		unfinished: gauge("unfinished_work_seconds", "How many seconds of work has been done that is in progress and hasn't been observed by work_duration."),
		longest:    gauge("longest_running_processor_seconds", "How many seconds has the longest running processor for workqueue been running."),
		adds:       counter("adds_total", "Total number of adds handled by workqueue"),
		retries:    counter("retries_total", "Total number of retries handled by workqueue"),
		latency:    hist("queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested"),
		work:       hist("work_duration_seconds", "How long in seconds processing an item from workqueue takes."),
	}
}

func (m *workqueueMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.depth, m.unfinished, m.longest, m.adds, m.retries, m.latency, m.work}
}

func (m *workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

func (m *workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

func (m *workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

func (m *workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.work.WithLabelValues(name)
}

func (m *workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

func (m *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longest.WithLabelValues(name)
}

func (m *workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}

// restMetrics counts the REST client's requests: by result (client-go's
// RequestResult hook) and by verb and resource (its RequestLatency hook,
// which sees the URL).
type restMetrics struct {
	results, byResource *prometheus.CounterVec
}

func newRESTMetrics() *restMetrics {
	return &restMetrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total",
			Help: "Number of HTTP requests, partitioned by status code, method, and host."}, []string{"code", "method", "host"}),
		byResource: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "longhorn_manager_api_requests_total",
			Help: "Kubernetes API requests of this manager by API verb (get, list, watch, create, update, patch, delete) and resource (status and other subresources after a slash)"},
			[]string{"verb", "resource"}),
	}
}

// Increment implements clientmetrics.ResultMetric.
func (r *restMetrics) Increment(_ context.Context, code, method, host string) {
	r.results.WithLabelValues(code, method, host).Inc()
}

// Observe implements clientmetrics.LatencyMetric: it counts the request.
func (r *restMetrics) Observe(_ context.Context, method string, u url.URL, _ time.Duration) {
	verb, resource := APIVerbResource(method, u)
	r.byResource.WithLabelValues(verb, resource).Inc()
}

// APIVerbResource names a Kubernetes API request by verb and resource from
// its HTTP method and URL, as the API server's request info does:
// /api/v1/namespaces/NS/pods/NAME/status, PUT -> update, pods/status;
// /apis/GROUP/VERSION/RESOURCE, GET -> list (watch with ?watch=true);
// GET of a named object -> get. A path that is no resource path gives
// the method in lower case and resource "" (discovery, /version).
func APIVerbResource(method string, u url.URL) (verb, resource string) {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		parts = nil
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:] // namespaced resource; "namespaces/NAME" alone is the namespace itself
	}
	if parts == nil {
		return strings.ToLower(method), "" // not a resource (discovery, /version)
	}
	named := len(parts) >= 2
	if len(parts) > 0 {
		resource = parts[0]
		if len(parts) >= 3 {
			resource += "/" + parts[2]
		}
	}
	switch method {
	case http.MethodGet:
		verb = "get"
		if !named {
			verb = "list"
			if w := u.Query().Get("watch"); w == "true" || w == "1" {
				verb = "watch"
			}
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}

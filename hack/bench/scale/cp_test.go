package main

import "testing"

func TestSummarize(t *testing.T) {
	lat := []float64{0.5, -1, 0.1, 2.0, 0.3}
	l := summarize("attach", lat, 3, 1)
	if l.N != 4 || l.Failed != 1 || l.P50 != 0.3 || l.P99 != 2.0 || l.Max != 2.0 || l.Wall != 3 {
		t.Fatalf("summarize: %+v", l)
	}
	if got := summarize("x", nil, 0, 0); got.N != 0 || got.P99 != 0 {
		t.Fatalf("empty: %+v", got)
	}
	xs := make([]float64, 300)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	if p := percentile(xs, 0.99); p != 297 {
		t.Fatalf("p99 of 1..300 = %v, want 297", p)
	}
}

func TestSeriesAndDelta(t *testing.T) {
	fams, err := parseMetrics([]byte(`# TYPE longhorn_manager_api_requests_total counter
longhorn_manager_api_requests_total{verb="get",resource="pods"} 10
longhorn_manager_api_requests_total{verb="update",resource="volumes/status"} 4
# TYPE workqueue_depth gauge
workqueue_depth{name="longhorn-volume"} 3
workqueue_depth{name="longhorn-replica"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	api := series(fams, "longhorn_manager_api_requests_total", "verb", "resource")
	if api["get/pods"] != 10 || api["update/volumes/status"] != 4 {
		t.Fatalf("series: %v", api)
	}
	if d := series(fams, "workqueue_depth")[""]; d != 4 {
		t.Fatalf("sum of depths %v, want 4", d)
	}
	rs := delta(map[string]float64{"get/pods": 4}, api, 2)
	if len(rs) != 2 || rs[0].Name != "get/pods" || rs[0].PerSec != 3 || rs[1].PerSec != 2 {
		t.Fatalf("delta: %+v", rs)
	}
}

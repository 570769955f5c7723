package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
)

func TestAPIVerbResource(t *testing.T) {
	for _, c := range []struct {
		method, url, verb, resource string
	}{
		{"GET", "/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes", "list", "volumes"},
		{"GET", "/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?watch=true&resourceVersion=5", "watch", "volumes"},
		{"GET", "/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes/v1", "get", "volumes"},
		{"PUT", "/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes/v1/status", "update", "volumes/status"},
		{"POST", "/api/v1/namespaces/longhorn-system/events", "create", "events"},
		{"PATCH", "/api/v1/namespaces/longhorn-system/events/e1", "patch", "events"},
		{"DELETE", "/api/v1/namespaces/longhorn-system/pods/p", "delete", "pods"},
		{"DELETE", "/api/v1/namespaces/longhorn-system/pods", "deletecollection", "pods"},
		{"GET", "/api/v1/nodes", "list", "nodes"},
		{"GET", "/api/v1/nodes/n1", "get", "nodes"},
		{"GET", "/api/v1/namespaces/longhorn-system", "get", "namespaces"},
		{"GET", "/api/v1/namespaces", "list", "namespaces"},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "get", "leases"},
		{"GET", "/version", "get", ""},
		{"GET", "/apis", "get", ""},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		verb, res := APIVerbResource(c.method, *u)
		if verb != c.verb || res != c.resource {
			t.Errorf("%s %s: %s %q, want %s %q", c.method, c.url, verb, res, c.verb, c.resource)
		}
	}
}

// TestKubeClientMetrics: after RegisterKubeClientMetrics a named workqueue
// and a REST client report into the manager's /metrics.
func TestKubeClientMetrics(t *testing.T) {
	RegisterKubeClientMetrics()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "test-volume"})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
	}))
	defer api.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, Handler(Options{Source: fakeSource{}, NodeName: "n1"}))
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"workqueue_depth", map[string]string{"name": "test-volume"}, 2},
		{"workqueue_adds_total", map[string]string{"name": "test-volume"}, 2},
		{"rest_client_requests_total", map[string]string{"code": "200", "method": "GET"}, 3},
		{"longhorn_manager_api_requests_total", map[string]string{"verb": "list", "resource": "pods"}, 3},
	}
	for _, c := range checks {
		if v, ok := value(fams, c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
}

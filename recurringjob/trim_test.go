package recurringjob

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
)

// A filesystem-trim job POSTs the trimFilesystem action of each attached
// volume it selects to the manager; a detached volume is skipped (nothing
// mounted, so nothing to trim, even when detached volumes may be attached
// for jobs); the manager's error message comes back naming the volume.
func TestFilesystemTrimJob(t *testing.T) {
	ns := "longhorn-system"
	var (
		mu    sync.Mutex
		calls []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/broken") {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"type":"error","status":500,"code":"ServerError","message":"unable to trim filesystem for volume broken: no mounted filesystem"}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"x"}`))
	}))
	defer srv.Close()
	job := &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: "trim", Namespace: ns},
		Spec: longhorn.RecurringJobSpec{Name: "trim", Task: longhorn.RecurringJobTypeFilesystemTrim, Concurrency: 2, Groups: []string{"default"}}}
	vol := func(name string, state longhorn.VolumeState) *longhorn.Volume {
		return &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Status: longhorn.VolumeStatus{State: state}}
	}
	allow := &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: "allow-recurring-job-while-volume-detached", Namespace: ns}, Value: "true"}
	lh := fake.NewSimpleClientset(job, allow, vol("a", longhorn.VolumeStateAttached), vol("b", longhorn.VolumeStateAttached),
		vol("det", longhorn.VolumeStateDetached))
	r := &Runner{LH: lh, Namespace: ns, Log: logrus.New(), ManagerURL: srv.URL + "/v1/"}
	if err := r.Run(context.Background(), "trim"); err != nil {
		t.Fatal(err)
	}
	slices.Sort(calls)
	want := []string{"POST /v1/volumes/a?action=trimFilesystem", "POST /v1/volumes/b?action=trimFilesystem"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	if _, err := lh.LonghornV1beta2().Volumes(ns).Create(context.Background(), vol("broken", longhorn.VolumeStateAttached), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := r.Run(context.Background(), "trim")
	if err == nil || !strings.Contains(err.Error(), "volume broken") || !strings.Contains(err.Error(), "answered 500: unable to trim filesystem") {
		t.Fatalf("failing trim: %v", err)
	}
	bad := &Runner{LH: lh, Namespace: ns, Log: logrus.New(), ManagerURL: "longhorn-backend:9500"}
	if err := bad.trimFilesystem(context.Background(), "a"); err == nil || !strings.Contains(err.Error(), "manager URL") {
		t.Fatalf("bad manager URL: %v", err)
	}
}

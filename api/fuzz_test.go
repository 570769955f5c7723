package api

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1073741824", "1Gi", "2M", "0", "-1", "1e3", "0.5Ki", "9223372036854775807", "99999999999999999999Ei", " 5 ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize("size", s)
		if err == nil && n <= 0 {
			t.Fatalf("ParseSize(%q) = %d without error", s, n)
		}
		if err != nil && toAPIError(err).Status != http.StatusUnprocessableEntity {
			t.Fatalf("ParseSize(%q) error %v is not a 422", s, err)
		}
	})
}

func FuzzParseStreamPeriod(f *testing.F) {
	for _, s := range []string{"1s", "100ms", "-3h", "1.5s", "9999999999h", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseStreamPeriod(s)
		if err == nil && (d < 0 || d > maxStreamPeriod) {
			t.Fatalf("ParseStreamPeriod(%q) = %v outside [0, %v]", s, d, maxStreamPeriod)
		}
	})
}

// FuzzRequestBodies sends arbitrary bodies to every handler that decodes
// one: the answer is JSON with a status below 500 (no panic, no server
// error from bad input).
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{`{}`, `{"value":"3"}`, `{"name":"v","size":"1Gi"}`, `{"hostId":"n1"}`, `{"names":["a"]}`,
		`{"size":"2Gi"}`, `{"replicaCount":2}`, `{"disks":{"d":{"path":"/x"}}}`, `{"tags":["a"]}`, `[1,2]`, `nul`, "\x00\xff"} {
		f.Add(s)
	}
	e := newFakeEnv(f, Options{Snapshots: &fakeSnapshots{snaps: map[string]*engineapi.Snapshot{}}},
		testNode("n1"), testVolume("vol", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy))
	targets := []struct{ method, path string }{
		{"PUT", "/v1/settings/default-replica-count"}, {"POST", "/v1/volumes"},
		{"POST", "/v1/volumes/vol?action=attach"}, {"POST", "/v1/volumes/vol?action=detach"},
		{"POST", "/v1/volumes/vol?action=expand"}, {"POST", "/v1/volumes/vol?action=updateReplicaCount"},
		{"POST", "/v1/volumes/vol?action=snapshotCreate"}, {"POST", "/v1/nodes/n1?action=diskUpdate"}, {"PUT", "/v1/nodes/n1"},
	}
	client := &http.Client{Timeout: 10 * time.Second}
	f.Fuzz(func(t *testing.T, body string) {
		for _, tg := range targets {
			req, err := http.NewRequest(tg.method, e.srv.URL+tg.path, bytes.NewReader([]byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("%s %s with %q = %d", tg.method, tg.path, body, resp.StatusCode)
			}
		}
	})
}

package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	kubefake "k8s.io/client-go/kubernetes/fake"

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

// fuzzTargets are every route that decodes a body: the writes of each
// collection and every volume action.
func fuzzTargets() []struct{ method, path string } {
	targets := []struct{ method, path string }{
		{"PUT", "/v1/settings/default-replica-count"}, {"PUT", "/v1/settings/storage-network"}, {"POST", "/v1/volumes"},
		{"POST", "/v1/nodes/n1?action=diskUpdate"}, {"PUT", "/v1/nodes/n1"}, {"POST", "/v1/recurringjobs"},
		{"PUT", "/v1/recurringjobs/job"}, {"POST", "/v1/engineimages"}, {"POST", "/v1/backuptargets"},
		{"PUT", "/v1/backuptargets"}, {"POST", "/v1/backuptargets/default?action=backupTargetSync"},
		{"POST", "/v1/backuptargets/default?action=backupTargetUpdate"}, {"PUT", "/v1/backupvolumes"},
	}
	for _, name := range backupVolumeActionNames {
		targets = append(targets, struct{ method, path string }{"POST", "/v1/backupvolumes/vol?action=" + name})
	}
	for _, name := range volumeActionNames() {
		targets = append(targets, struct{ method, path string }{"POST", "/v1/volumes/vol?action=" + name})
	}
	return targets
}

// FuzzRequestBodies sends arbitrary bodies to every handler that decodes
// one: the answer is a gdapi JSON object with a 2xx or 4xx status, or 501
// for a feature that does not exist (no panic, no server error from bad
// input).
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{`{}`, `{"value":"3"}`, `{"name":"v","size":"1Gi"}`, `{"hostId":"n1"}`, `{"names":["a"]}`,
		`{"size":"2Gi"}`, `{"replicaCount":2}`, `{"disks":{"d":{"path":"/x"}}}`, `{"tags":["a"]}`, `[1,2]`, `nul`, "\x00\xff",
		`{"dataLocality":"best-effort"}`, `{"snapshotMaxCount":"x"}`, `{"snapshotMaxSize":"1Ti"}`, `{"name":"job","isGroup":true}`,
		`{"pvName":"pv","fsType":"xfs"}`, `{"namespace":"NS"}`, `{"name":"job","task":"snapshot","cron":"* * * * *","retain":1}`,
		`{"labels":{"a/b/c":"x"}}`, `{"frontend":"iscsi"}`, `{"accessMode":"rwx"}`, `{"name":"snap","backupMode":"full"}`,
		`{"name":"t2","backupTargetURL":"s3://b@us-east-1/","pollInterval":"300"}`, `{"pollInterval":"-1"}`, `{"syncBackupTarget":true}`,
		`{"syncAllBackupVolumes":true}`, `{"backupTargetName":"default"}`, `{"name":"backup-1"}`} {
		f.Add(s)
	}
	e := newFakeEnv(f, Options{Snapshots: &fakeSnapshots{snaps: map[string]*engineapi.Snapshot{}}, Kube: kubefake.NewClientset()},
		testNode("n1"), testVolume("vol", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy),
		testBackupTarget("default", true), testBackupVolume("vol", "default"))
	targets := fuzzTargets()
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
			var out map[string]any
			decErr := json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if (resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented) || decErr != nil {
				t.Fatalf("%s %s with %q = %d (%v) %v", tg.method, tg.path, body, resp.StatusCode, decErr, out)
			}
			if resp.StatusCode >= 400 && (out["type"] != "error" || out["message"] == "") {
				t.Fatalf("%s %s with %q = %d without a gdapi error: %v", tg.method, tg.path, body, resp.StatusCode, out)
			}
		}
	})
}

// FuzzRoutes sends arbitrary methods, paths and queries: every answer is a
// gdapi JSON object, never a plain-text 404 or a server error.
func FuzzRoutes(f *testing.F) {
	for _, s := range []string{"GET /v1/volumes", "GET /v1/volumes/", "GET /v1//volumes", "DELETE /v1/nodes/x", "GET /v1/ws/x/y/z",
		"POST /v1/volumes/vol?action=", "GET /v1/schemas/%00", "GET /v1/settings/auto-salvage?a=%zz", "PUT /", "GET /v1/apiversions/v2",
		"GET /v1/supportbundles/a/b/download", "OPTIONS /v1"} {
		f.Add(s)
	}
	e := newFakeEnv(f, Options{}, testNode("n1"), testVolume("vol", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown))
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	f.Fuzz(func(t *testing.T, line string) {
		method, target, ok := strings.Cut(line, " ")
		if !ok || method == "" || strings.ContainsAny(method, " \t\r\n()<>@,;:\\\"/[]?={}") || !strings.HasPrefix(target, "/") ||
			strings.HasPrefix(target, "/v1/ws/") {
			return
		}
		req, err := http.NewRequest(method, e.srv.URL+target, nil)
		if err != nil {
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil && method != "HEAD" && resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s %s = %d, not JSON: %v", method, target, resp.StatusCode, err)
		}
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented {
			t.Fatalf("%s %s = %d %v", method, target, resp.StatusCode, out)
		}
	})
}

// FuzzParseBackupTargetSpec: any input is a spec within the limits or a
// 422/501 naming the field.
func FuzzParseBackupTargetSpec(f *testing.F) {
	for _, s := range [][3]string{{"s3://b@us-east-1/p", "sec", "300"}, {"nfs://h:/e", "", "5m0s"}, {"cifs://h/s", "", ""},
		{"", "", "-1"}, {"x", "Bad_Name", "1e9"}, {"vfs:///d", "", "99999999999999"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, url, secret, poll string) {
		spec, err := ParseBackupTargetSpec(BackupTarget{BackupTargetURL: url, CredentialSecret: secret, PollInterval: poll})
		if err != nil {
			if st := toAPIError(err).Status; st != http.StatusUnprocessableEntity && st != http.StatusNotImplemented {
				t.Fatalf("%q %q %q: status %d: %v", url, secret, poll, st, err)
			}
			return
		}
		if d := spec.PollInterval.Duration; d < 0 || d > maxPollInterval {
			t.Fatalf("poll %q = %v out of range", poll, d)
		}
	})
}

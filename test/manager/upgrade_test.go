package manager_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// testPreUpgrade runs `longhorn pre-upgrade` against the cluster: it reads the
// version the running managers pinned in Setting current-longhorn-version (the
// test binary's own version, a development build here, so the path is reported as
// not checked) and a fresh namespace counts as a fresh install. The refusals
// themselves are table-tested in upgrade/ and app/.
func testPreUpgrade(t *testing.T, c *cluster) {
	s, err := c.lh.LonghornV1beta2().Settings(ns).Get(c.ctx, "current-longhorn-version", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Setting current-longhorn-version: %v", err)
	}
	run := func(namespace string) (string, error) {
		out, err := exec.Command(c.binary, "pre-upgrade", "--kubeconfig", env.KubeconfigPath, "--namespace", namespace,
			"--target-version", "v9.9.9").CombinedOutput()
		return string(out), err
	}
	out, err := run(ns)
	if s.Value == "" {
		t.Fatalf("current-longhorn-version is empty: the managers did not pin their version")
	}
	if !strings.Contains(out, s.Value) {
		t.Fatalf("pre-upgrade does not name the installed version %q (err %v):\n%s", s.Value, err, out)
	}
	t.Logf("pre-upgrade with %s installed: %v %s", s.Value, err, strings.TrimSpace(out))
	if out, err := run("no-such-namespace"); err != nil || !strings.Contains(out, "fresh install") {
		t.Fatalf("pre-upgrade in an empty namespace: %v\n%s", err, out)
	}
}

// testPostUpgrade runs `longhorn post-upgrade` against the cluster after
// testPreUpgrade: the managers run the binary's own version, so it does not
// wait; the installed version is a development build (recorded by
// pre-upgrade or not, depending on whether it is semver-shaped), older than
// every step, so every step runs and its writes pass the admission webhook;
// no record is left. The steps themselves are table-tested in upgrade/ on
// object fixtures.
func testPostUpgrade(t *testing.T, c *cluster) {
	out, err := exec.Command(c.binary, "post-upgrade", "--kubeconfig", env.KubeconfigPath, "--namespace", ns,
		"--wait", "30s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "steps [v1.7.x->v1.8.0 v1.9.x->v1.10.0]") || !strings.Contains(string(out), "objects migrated") {
		t.Fatalf("post-upgrade: %v\n%s", err, out)
	}
	t.Logf("post-upgrade: %s", strings.TrimSpace(string(out)))
	s, err := c.lh.LonghornV1beta2().Settings(ns).Get(c.ctx, "current-longhorn-version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Annotations["longhorn.io/upgrade-from-version"]; ok {
		t.Fatalf("post-upgrade left the record %q", v)
	}
}

// testUpgradePathRefused runs pre-upgrade and post-upgrade in a namespace of
// their own holding a release version (v1.8.2) in Setting
// current-longhorn-version, through the real API server and its admission
// webhook: a skipped minor (v1.10.0) exits non-zero naming the step to take
// and records nothing; the next minor (v1.9.0) is allowed and recorded;
// post-upgrade refuses while the managers of v1.9.0 do not run, then, once
// the setting holds v1.9.0, runs the one step newer than v1.8.2 and clears
// the record.
func testUpgradePathRefused(t *testing.T, c *cluster) {
	const space = "upgrade-path"
	if _, err := c.kube.CoreV1().Namespaces().Create(c.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.kube.CoreV1().Namespaces().Delete(context.Background(), space, metav1.DeleteOptions{}) })
	settings := c.lh.LonghornV1beta2().Settings(space)
	if _, err := settings.Create(c.ctx, &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: "current-longhorn-version"}, Value: "v1.8.2"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		out, err := exec.Command(c.binary, append(args, "--kubeconfig", env.KubeconfigPath, "--namespace", space)...).CombinedOutput()
		return string(out), err
	}
	recorded := func() string {
		s, err := settings.Get(c.ctx, "current-longhorn-version", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Annotations["longhorn.io/upgrade-from-version"]
	}
	if out, err := run("pre-upgrade", "--target-version", "v1.10.0"); err == nil || !strings.Contains(out, "upgrade to v1.9 first") {
		t.Fatalf("pre-upgrade v1.8.2 -> v1.10.0 (a skipped minor): %v\n%s", err, out)
	}
	if r := recorded(); r != "" {
		t.Fatalf("a refused upgrade recorded %q", r)
	}
	if out, err := run("pre-upgrade", "--target-version", "v1.9.0"); err != nil || !strings.Contains(out, "supported path") || recorded() != "v1.8.2" {
		t.Fatalf("pre-upgrade v1.8.2 -> v1.9.0: %v (recorded %q)\n%s", err, recorded(), out)
	}
	if out, err := run("post-upgrade", "--target-version", "v1.9.0", "--wait", "2s"); err == nil || !strings.Contains(out, "are not running") {
		t.Fatalf("post-upgrade before the managers of v1.9.0 run: %v\n%s", err, out)
	}
	s, err := settings.Get(c.ctx, "current-longhorn-version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Value = "v1.9.0" // as the new managers pin it
	if _, err := settings.Update(c.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := run("post-upgrade", "--target-version", "v1.9.0", "--wait", "30s")
	if err != nil || !strings.Contains(out, "steps [v1.9.x->v1.10.0]") || recorded() != "" {
		t.Fatalf("post-upgrade from v1.8.2: %v (record %q)\n%s", err, recorded(), out)
	}
}

// testConversionWebhook: a v1beta2 object round-trips through the API server
// (a RecurringJob written with the typed client, read back as raw JSON by
// kubectl with the same spec), and the conversion endpoint of a running
// manager (port 9501, /v1/webhook/conversion, over its TLS) answers a
// ConversionReview of it: the object back unchanged with the request's UID,
// and a request for v1beta1 refused, as Longhorn serves only v1beta2.
func testConversionWebhook(t *testing.T, c *cluster) {
	jobs := c.lh.LonghornV1beta2().RecurringJobs(ns)
	job := &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: "roundtrip"}, Spec: longhorn.RecurringJobSpec{
		Name: "roundtrip", Task: longhorn.RecurringJobTypeSnapshot, Cron: "0 0 * * *", Retain: 1, Concurrency: 1,
		Groups: []string{}, Labels: map[string]string{"k": "v"}}}
	created, err := jobs.Create(c.ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jobs.Delete(context.Background(), "roundtrip", metav1.DeleteOptions{}) })
	raw, err := c.kubectl("", "-n", ns, "get", "recurringjobs.longhorn.io", "roundtrip", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, raw)
	}
	var read longhorn.RecurringJob
	if err := json.Unmarshal([]byte(raw), &read); err != nil || read.APIVersion != "longhorn.io/v1beta2" || !reflect.DeepEqual(read.Spec, created.Spec) {
		t.Fatalf("round trip (%v): wrote %+v, read %s %+v", err, created.Spec, read.APIVersion, read.Spec)
	}
	post := func(desired string) *apiextv1.ConversionResponse {
		review := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"rt-1","desiredAPIVersion":%q,"objects":[%s]}}`,
			desired, raw)
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := client.Post("https://"+net.JoinHostPort(c.nodes[0].ip, "9501")+"/v1/webhook/conversion", "application/json", strings.NewReader(review))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out apiextv1.ConversionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
			t.Fatalf("conversion endpoint: status %d, %v", resp.StatusCode, err)
		}
		return out.Response
	}
	r := post("longhorn.io/v1beta2")
	if r.UID != "rt-1" || r.Result.Status != metav1.StatusSuccess || len(r.ConvertedObjects) != 1 {
		t.Fatalf("v1beta2 review: %+v", r)
	}
	var back longhorn.RecurringJob
	if err := json.Unmarshal(r.ConvertedObjects[0].Raw, &back); err != nil || !reflect.DeepEqual(back.Spec, created.Spec) || back.UID != created.UID {
		t.Fatalf("converted object differs (%v): %+v", err, back)
	}
	if r := post("longhorn.io/v1beta1"); r.Result.Status != metav1.StatusFailure || !strings.Contains(r.Result.Message, "serves only longhorn.io/v1beta2") {
		t.Fatalf("v1beta1 review: %+v", r)
	}
}

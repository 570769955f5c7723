package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func attachedOn(name, node string) *longhorn.Volume {
	v := testVolume(name, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy)
	v.Status.CurrentNodeID = node
	return v
}

// trimFilesystem on the attached node's manager trims there; on another
// manager it is forwarded to that one, whose answer (the volume, or its
// error) comes back; the action is listed for attached volumes only.
func TestTrimFilesystemLocalAndForwarded(t *testing.T) {
	var trimmed atomic.Value
	trimmed.Store("")
	fail := atomic.Bool{}
	trim := func(v string) (uint64, error) {
		if fail.Load() {
			return 0, errors.New("no mounted filesystem of device /dev/longhorn/" + v)
		}
		trimmed.Store(v)
		return 1 << 20, nil
	}
	vol := attachedOn("vol", "n1")
	n1 := newFakeEnv(t, Options{NodeName: "n1", Trim: trim}, vol.DeepCopy())
	n2 := newFakeEnv(t, Options{NodeName: "n2", ManagerAddress: func(_ context.Context, node string) (string, error) {
		if node != "n1" {
			return "", errors.New("unknown node " + node)
		}
		return strings.TrimPrefix(n1.srv.URL, "http://"), nil
	}}, vol.DeepCopy())
	var v Volume
	if st := n1.do("POST", "/v1/volumes/vol?action=trimFilesystem", map[string]any{}, &v); st != 200 || v.ID != "vol" || trimmed.Load() != "vol" {
		t.Fatalf("local trim = %d %+v, trimmed %q", st, v, trimmed.Load())
	}
	if _, listed := v.Actions[ActionTrimFilesystem]; !listed {
		t.Errorf("trimFilesystem is not listed for an attached volume: %v", v.Actions)
	}
	trimmed.Store("")
	v = Volume{}
	if st := n2.do("POST", "/v1/volumes/vol?action=trimFilesystem", map[string]any{}, &v); st != 200 || v.ID != "vol" || trimmed.Load() != "vol" {
		t.Fatalf("forwarded trim = %d %+v, trimmed %q", st, v, trimmed.Load())
	}
	if link := v.Links["self"]; !strings.HasPrefix(link, n2.srv.URL) {
		t.Errorf("forwarded answer's self link %q does not point at the manager asked (%s)", link, n2.srv.URL)
	}
	fail.Store(true)
	var apiErr Error
	if st := n2.do("POST", "/v1/volumes/vol?action=trimFilesystem", map[string]any{}, &apiErr); st != 500 ||
		!strings.Contains(apiErr.Message, "no mounted filesystem") {
		t.Fatalf("forwarded failing trim = %d %+v", st, apiErr)
	}
	// a request forwarded to the wrong manager is not forwarded again
	req, _ := http.NewRequest("POST", n2.srv.URL+"/v1/volumes/vol?action=trimFilesystem", strings.NewReader("{}"))
	req.Header.Set(forwardedHeader, "n2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("re-forwarded request = %d, want 502", resp.StatusCode)
	}
}

func TestTrimFilesystemRefusals(t *testing.T) {
	detached := testVolume("det", longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown)
	noFront := attachedOn("nofront", "n1")
	noFront.Status.FrontendDisabled = true
	iscsi := attachedOn("iscsi", "n1")
	iscsi.Spec.Frontend = longhorn.VolumeFrontendISCSI
	rwx := attachedOn("rwx", "n1")
	rwx.Spec.AccessMode = longhorn.AccessModeReadWriteMany
	elsewhere := attachedOn("far", "n3")
	e := newFakeEnv(t, Options{NodeName: "n1"}, detached, noFront, iscsi, rwx, elsewhere, attachedOn("here", "n1"))
	cases := []struct {
		vol    string
		status int
		want   string
	}{
		{"det", 409, "not available"},
		{"nofront", 409, "frontend disabled"},
		{"iscsi", 409, "frontend iscsi"},
		{"rwx", 501, "not supported yet"},
		{"far", 503, "node n3"},
		{"here", 503, "no trimmer"},
	}
	for _, c := range cases {
		var apiErr Error
		if st := e.do("POST", "/v1/volumes/"+c.vol+"?action=trimFilesystem", map[string]any{}, &apiErr); st != c.status ||
			!strings.Contains(apiErr.Message, c.want) {
			t.Errorf("%s: %d %q, want %d containing %q", c.vol, st, apiErr.Message, c.status, c.want)
		}
	}
}

// A trim that outlasts the request answers 504 and goes on.
func TestTrimFilesystemTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := runTrim(ctx, func(string) (uint64, error) { <-release; return 0, nil }, "vol", logrus.New())
	var he *httpError
	if !errors.As(err, &he) || he.status != http.StatusGatewayTimeout || !strings.Contains(he.msg, "still running") {
		t.Fatalf("slow trim: %v", err)
	}
}

// The manager of a node is its running longhorn-manager pod there.
func TestManagerPodAddress(t *testing.T) {
	pod := func(name, node string, phase corev1.PodPhase, ip string, age time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "longhorn-manager"},
			CreationTimestamp: metav1.NewTime(time.Now().Add(-age))},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase, PodIP: ip}}
	}
	kube := kubefake.NewSimpleClientset(pod("m1", "n1", corev1.PodRunning, "10.0.0.1", time.Hour),
		pod("m1b", "n1", corev1.PodPending, "", time.Minute), pod("m2", "n2", corev1.PodFailed, "10.0.0.2", time.Hour))
	find := ManagerPodAddress(kube, ns)
	if a, err := find(context.Background(), "n1"); err != nil || a != "10.0.0.1:9500" {
		t.Fatalf("n1: %q %v", a, err)
	}
	if _, err := find(context.Background(), "n2"); err == nil || !strings.Contains(err.Error(), "no running longhorn-manager pod on node n2") {
		t.Fatalf("n2 (failed pod): %v", err)
	}
}

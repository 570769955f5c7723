package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/longhorn-go/longhorn/datastore"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
	"github.com/longhorn-go/longhorn/types"
)

const ns = types.DefaultNamespace

// apiEnv is an API server over a started datastore.
type apiEnv struct {
	t      testing.TB
	server *Server
	srv    *httptest.Server
	ds     *datastore.DataStore
	client versioned.Interface
}

// newFakeEnv serves the API over a fake clientset holding objs (unit tests).
func newFakeEnv(t testing.TB, opts Options, objs ...runtime.Object) *apiEnv {
	t.Helper()
	return newEnv(t, fake.NewSimpleClientset(objs...), opts)
}

func newEnv(t testing.TB, client versioned.Interface, opts Options) *apiEnv {
	t.Helper()
	ds, err := datastore.New(ns, client, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ds.Start(ctx)
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if err := ds.WaitForCacheSync(sctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	server := newServer(ds, opts)
	srv := httptest.NewServer(server.handler)
	t.Cleanup(func() { srv.Close(); cancel() })
	return &apiEnv{t: t, server: server, srv: srv, ds: ds, client: client}
}

// do sends a request and decodes the JSON answer into out (if non-nil).
func (e *apiEnv) do(method, path string, body any, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %v\n%s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// eventually retries f (which reports success) for up to 10 s.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func objMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }

func testNode(name string) *longhorn.Node {
	return &longhorn.Node{ObjectMeta: objMeta(name), Spec: longhorn.NodeSpec{Name: name, AllowScheduling: true,
		Disks: map[string]longhorn.DiskSpec{"default-disk": {Type: longhorn.DiskTypeFilesystem, Path: "/var/lib/longhorn", AllowScheduling: true}}}}
}

func testVolume(name string, state longhorn.VolumeState, robustness longhorn.VolumeRobustness) *longhorn.Volume {
	return &longhorn.Volume{ObjectMeta: objMeta(name),
		Spec:   longhorn.VolumeSpec{Size: 1 << 30, NumberOfReplicas: 3, DataEngine: longhorn.DataEngineTypeV1, Frontend: longhorn.VolumeFrontendBlockDev},
		Status: longhorn.VolumeStatus{State: state, Robustness: robustness}}
}

var metavOpts = metav1.GetOptions{}

// Package rest_test drives the REST API (/v1) against a real kube-apiserver
// and etcd (testbed/testenv) with the manager's admission webhook serving
// in the test process, as in the product: every API write goes through the
// API server and the webhook. The calls are made with the schema-driven
// client (testbed/gdapi), which knows no paths: it bootstraps from /v1 and
// follows schema links, links.self and actions, as Longhorn's Python test
// client does. No controller runs here; where an action needs a volume in
// some state, the test writes that status as the volume controller would.
package rest_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/longhorn-go/longhorn/api"
	"github.com/longhorn-go/longhorn/datastore"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/testbed/gdapi"
	"github.com/longhorn-go/longhorn/testbed/testenv"
	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/webhook"
)

const (
	ns          = types.DefaultNamespace
	engineImage = "longhornio/longhorn:test"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}

// fixture is one test's API server, webhook and clients (tests do not run
// in parallel: the webhook configurations are cluster-wide).
type fixture struct {
	ctx    context.Context
	base   string
	lh     versioned.Interface
	kube   kubernetes.Interface
	ds     *datastore.DataStore
	events cache.SharedIndexInformer
	cli    *gdapi.Client
}

// setup starts the fixture for the test; cleanup stops its informers,
// webhook and API server.
func setup(t *testing.T) *fixture {
	t.Helper()
	env.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f, closeAPI, err := start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAPI)
	return f
}

func start(ctx context.Context) (*fixture, func(), error) {
	f, err := startFixture(ctx)
	if err != nil {
		return nil, nil, err
	}
	srv := httptest.NewServer(api.NewRouter(f.ds, api.Options{Kube: f.kube, Events: f.events, EngineImage: engineImage}))
	f.base = srv.URL
	// Bootstrap from /v1, not /v1/schemas: the client must find the schemas
	// through X-API-Schemas.
	if f.cli, err = gdapi.New(srv.URL + "/v1"); err != nil {
		srv.Close()
		return nil, nil, err
	}
	return f, srv.Close, nil
}

func startFixture(ctx context.Context) (*fixture, error) {
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	lh, err := versioned.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	ds, err := datastore.New(ns, lh, 0)
	if err != nil {
		return nil, err
	}
	ds.Start(ctx)
	events := api.NewEventInformer(kube, ns, 0)
	go events.Run(ctx.Done())
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := ds.WaitForCacheSync(sctx); err != nil {
		return nil, err
	}
	if !cache.WaitForCacheSync(sctx.Done(), events.HasSynced) {
		return nil, sctx.Err()
	}
	if err := startWebhook(ctx, kube, ds); err != nil {
		return nil, err
	}
	return &fixture{ctx: ctx, lh: lh, kube: kube, ds: ds, events: events}, nil
}

// startWebhook serves the manager's admission webhook on 127.0.0.1 and
// registers it with the API server, as app/manager.go does.
func startWebhook(ctx context.Context, kube kubernetes.Interface, ds *datastore.DataStore) error {
	ca, err := webhook.EnsureCA(ctx, kube, ns, time.Now())
	if err != nil {
		return err
	}
	cert, err := ca.ServingCert(time.Now(), webhook.ServiceDNSNames(webhook.ServiceName, ns), []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	reg := webhook.NewRegistryFor(ds, engineImage)
	srv, err := webhook.Listen(ctx, "127.0.0.1:0", cert, reg)
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(ctx) }()
	port := srv.Addr().(*net.TCPAddr).Port
	ep := webhook.Endpoint{Namespace: ns, Service: webhook.ServiceName, Port: int32(port), URL: "https://127.0.0.1:" + strconv.Itoa(port)}
	return reg.EnsureConfigurations(ctx, kube, ep, ca.CertPEM)
}

// eventually polls cond every 50 ms until it holds or 30 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// apiStatus is the HTTP status of a gdapi error (0 for no error).
func apiStatus(err error) int {
	if e, ok := err.(*gdapi.APIError); ok {
		return e.Status
	}
	return 0
}

var _ = http.StatusOK

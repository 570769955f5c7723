// Package api_test checks the longhorn.io/v1beta2 API against a real
// kube-apiserver: the generated CRDs install, every kind supports create,
// get, list, watch, update and status update through the generated
// clientset, the datastore's informers see the changes, the schema rejects
// bad enum values, kubectl prints Longhorn's columns, and the example Volume
// manifest applies.
package api_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/datastore"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/testbed/testenv"
	"github.com/longhorn-go/longhorn/types"
)

// env is the package's control plane (nil under -short or without binaries).
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}

const ns = types.DefaultNamespace

// clients returns a Longhorn clientset for the control plane, after making
// sure the longhorn-system namespace exists.
func clients(t *testing.T) versioned.Interface {
	t.Helper()
	env.Require(t)
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	lh, err := versioned.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return lh
}

// startDataStore starts a DataStore on the control plane for the test's lifetime.
func startDataStore(t *testing.T, lh versioned.Interface) *datastore.DataStore {
	t.Helper()
	ds, err := datastore.New(ns, lh, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ds.Start(ctx)
	syncCtx, syncCancel := context.WithTimeout(ctx, 60*time.Second)
	defer syncCancel()
	if err := ds.WaitForCacheSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	return ds
}

// eventually polls cond every 50 ms until it holds or 30 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

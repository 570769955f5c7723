package api

import (
	"os"
	"testing"

	"github.com/longhorn-go/longhorn/testbed/testenv"
)

// kubeEnv is a real kube-apiserver with the Longhorn CRDs for the
// integration tests (integration_test.go); nil under -short or without
// KUBEBUILDER_ASSETS. The handler unit tests use fake clientsets.
var kubeEnv *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &kubeEnv))
}

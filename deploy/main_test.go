package deploy

import (
	"os"
	"testing"

	"github.com/longhorn-go/longhorn/testbed/testenv"
)

// env is a real kube-apiserver for the apply tests; nil under -short or
// without KUBEBUILDER_ASSETS (see testenv.Run). The manifest installs the
// CRDs itself, so none are preinstalled.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{CRDDirectoryPaths: []string{}}, &env))
}

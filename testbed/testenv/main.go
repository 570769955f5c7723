package testenv

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// skipReason says why Run left the Env nil; Require reports it.
var skipReason = "testenv.Run was not called from TestMain"

// Run is the body of a package's TestMain: it starts one control plane for
// the package, stores it in *envp, runs the tests, stops it and returns the
// exit code for os.Exit.
//
// Without a control plane (go test -short, or KUBEBUILDER_ASSETS unset when
// LONGHORN_REQUIRE_TOOLS is not 1) *envp stays nil and the tests still run:
// tests that need the control plane call env.Require(t) and are skipped.
// Under `make test` (LONGHORN_REQUIRE_TOOLS=1) missing binaries or a failed
// start make Run print the error and return 1.
func Run(m *testing.M, opts Options, envp **Env) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	*envp = nil
	// controller-runtime (envtest, clients) logs through klog.
	ctrllog.SetLogger(klog.NewKlogr())
	if testing.Short() {
		skipReason = "-short: no control plane"
		return m.Run()
	}
	if _, err := Assets(); err != nil && !testutil.ToolsRequired() {
		skipReason = err.Error()
		return m.Run()
	}
	env, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	*envp = env
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Require skips the test when Run started no control plane (e is nil); it
// is safe to call on a nil *Env.
func (e *Env) Require(t testing.TB) {
	t.Helper()
	if e == nil {
		t.Skip("no control plane: " + skipReason)
	}
}

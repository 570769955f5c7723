// Package testenv starts a real control plane (etcd + kube-apiserver, and on
// request kube-controller-manager + kube-scheduler) for integration tests. It
// wraps controller-runtime's envtest with the project's conventions: binaries
// come from `make testbin` through KUBEBUILDER_ASSETS, the generated CRDs under
// k8s/crds are installed, an admin kubeconfig file is written for kubectl, and
// every process it starts dies with the test binary even when the test panics
// or times out.
//
// One control plane per test package, started from TestMain:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m, testenv.Options{}, &env)) }
//
//	func TestSomething(t *testing.T) {
//		env.Require(t)
//		cs := kubernetes.NewForConfigOrDie(env.Config)
//		...
//	}
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv is the environment variable naming the directory that holds the
// control-plane binaries (etcd, kube-apiserver, kubectl, and for
// StartControllers also kube-controller-manager and kube-scheduler).
// `make test` sets it; `make testbin-env` prints the export line.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// KeepEnv, when set to 1, keeps the scratch directory (logs, kubeconfig,
// certificates) after Stop for debugging.
const KeepEnv = "LONGHORN_TESTENV_KEEP"

// requiredAssets are the binaries Start needs in the assets directory.
var requiredAssets = []string{"etcd", "kube-apiserver", "kubectl"}

// ErrNoAssets is returned (wrapped) by Start when KUBEBUILDER_ASSETS is unset
// or misses a binary.
var ErrNoAssets = errors.New("control-plane binaries not available")

// Options configure Start. The zero value is the usual choice.
type Options struct {
	// CRDDirectoryPaths are directories (or files) of CRD YAML to install.
	// nil means <repo>/k8s/crds; an empty non-nil slice installs none.
	// Directories that do not exist are skipped, so a package can start
	// before any CRD has been generated.
	CRDDirectoryPaths []string
	// CRDs are extra CRD objects to install.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// APIServerArgs are extra kube-apiserver flags, name without "--" to
	// value (e.g. "feature-gates": "X=true"); they override the defaults.
	APIServerArgs map[string]string
	// StartTimeout bounds the start of each process; default 90 s (the
	// machine is shared and often loaded).
	StartTimeout time.Duration
}

// Env is a running control plane. Its exported fields are read-only.
type Env struct {
	// Config is an admin (system:masters) client config for the apiserver.
	Config *rest.Config
	// KubeconfigPath is an admin kubeconfig file (client certificate) for
	// kubectl or any process the test starts.
	KubeconfigPath string
	// Kubectl is the path of kubectl from the assets directory.
	Kubectl string
	// AssetsDir is the KUBEBUILDER_ASSETS directory in use.
	AssetsDir string
	// Dir is the scratch directory holding logs (etcd.log,
	// kube-apiserver.log, ...), the kubeconfig and wrapper scripts. It is
	// removed by Stop unless LONGHORN_TESTENV_KEEP=1.
	Dir string
	// Environment is the underlying envtest environment, for uses this
	// package does not cover.
	Environment *envtest.Environment

	spawner    *spawner
	logs       []*os.File
	components []*component
}

// Assets returns the assets directory from KUBEBUILDER_ASSETS after checking
// that it holds etcd, kube-apiserver and kubectl (and extra, if given). The
// error wraps ErrNoAssets and says how to get the binaries.
func Assets(extra ...string) (string, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		return "", fmt.Errorf("%w: %s is not set; run `make testbin` then `eval $(make -s testbin-env)` (make test does both)", ErrNoAssets, AssetsEnv)
	}
	var missing []string
	for _, b := range append(append([]string{}, requiredAssets...), extra...) {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: %s=%s lacks %s; run `make testbin`", ErrNoAssets, AssetsEnv, dir, strings.Join(missing, ", "))
	}
	return dir, nil
}

// RepoRoot returns the repository root (the directory holding go.mod) of the
// source tree this package was compiled from.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// DefaultCRDDir is where the generated CRD YAML lives: <repo>/k8s/crds.
func DefaultCRDDir() string { return filepath.Join(RepoRoot(), "k8s", "crds") }

// Start starts etcd and kube-apiserver from KUBEBUILDER_ASSETS, installs the
// CRDs and writes an admin kubeconfig. It takes a few seconds. The processes
// are killed when the test binary exits, even without Stop. Errors: ErrNoAssets
// (wrapped) when the binaries are missing; otherwise the start error with the
// tail of the failing process's log.
func Start(opts Options) (*Env, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "longhorn-testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv: scratch dir: %w", err)
	}
	e := &Env{AssetsDir: assets, Dir: dir, Kubectl: filepath.Join(assets, "kubectl"), spawner: newSpawner()}
	if err := e.start(opts); err != nil {
		if serr := e.stop(true); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, err
	}
	return e, nil
}

func (e *Env) start(opts Options) error {
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	etcdPath, err := e.pdeathWrapper(filepath.Join(e.AssetsDir, "etcd"))
	if err != nil {
		return err
	}
	apiPath, err := e.pdeathWrapper(filepath.Join(e.AssetsDir, "kube-apiserver"))
	if err != nil {
		return err
	}
	etcdLog, err := e.logFile("etcd.log")
	if err != nil {
		return err
	}
	apiLog, err := e.logFile("kube-apiserver.log")
	if err != nil {
		return err
	}
	crdPaths := opts.CRDDirectoryPaths
	if crdPaths == nil {
		crdPaths = []string{DefaultCRDDir()}
	}
	te := &envtest.Environment{
		CRDDirectoryPaths:        existing(crdPaths),
		CRDs:                     opts.CRDs,
		ErrorIfCRDPathMissing:    false,
		ControlPlaneStartTimeout: timeout,
		ControlPlaneStopTimeout:  30 * time.Second,
		BinaryAssetsDirectory:    e.AssetsDir,
	}
	te.ControlPlane.Etcd = &envtest.Etcd{Path: etcdPath, Out: etcdLog, Err: etcdLog}
	api := te.ControlPlane.GetAPIServer()
	api.Path = apiPath
	api.Out, api.Err = apiLog, apiLog
	// 1.37 refuses a loopback advertise address with the default endpoint
	// reconciler; nothing here needs the kubernetes Service endpoints.
	api.Configure().Set("endpoint-reconciler-type", "none")
	for k, v := range opts.APIServerArgs {
		api.Configure().Set(k, v)
	}
	te.ControlPlane.KubectlPath = e.Kubectl
	e.Environment = te
	var cfg *rest.Config
	if err := e.spawner.do(func() error { cfg, err = te.Start(); return err }); err != nil {
		return fmt.Errorf("testenv: starting control plane: %w\n--- kube-apiserver.log (tail)\n%s--- etcd.log (tail)\n%s",
			err, tail(filepath.Join(e.Dir, "kube-apiserver.log"), 20), tail(filepath.Join(e.Dir, "etcd.log"), 10))
	}
	e.Config = cfg
	e.KubeconfigPath = filepath.Join(e.Dir, "kubeconfig")
	if err := os.WriteFile(e.KubeconfigPath, te.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("testenv: writing kubeconfig: %w", err)
	}
	return nil
}

// Stop stops the components started with StartControllers, then
// kube-apiserver and etcd, and removes the scratch directory (unless
// LONGHORN_TESTENV_KEEP=1). It is safe on a nil Env and safe to call twice.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	return e.stop(os.Getenv(KeepEnv) != "1")
}

func (e *Env) stop(removeDir bool) error {
	var errs []error
	for i := len(e.components) - 1; i >= 0; i-- {
		if err := e.components[i].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	e.components = nil
	if e.Environment != nil {
		if err := e.Environment.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("testenv: stopping control plane: %w", err))
		}
		e.Environment = nil
	}
	for _, f := range e.logs {
		f.Close()
	}
	e.logs = nil
	if e.spawner != nil {
		e.spawner.close()
		e.spawner = nil
	}
	if removeDir && e.Dir != "" {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, err)
		}
	} else if e.Dir != "" {
		fmt.Fprintf(os.Stderr, "testenv: kept %s\n", e.Dir)
	}
	return errors.Join(errs...)
}

// KubectlCmd returns an exec.Cmd running kubectl with --kubeconfig set to the
// admin kubeconfig. The caller runs it (CombinedOutput, Run, ...).
func (e *Env) KubectlCmd(args ...string) *exec.Cmd {
	return exec.Command(e.Kubectl, append([]string{"--kubeconfig", e.KubeconfigPath}, args...)...)
}

// logFile creates a log file in the scratch dir, closed by Stop.
func (e *Env) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(e.Dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testenv: log file: %w", err)
	}
	e.logs = append(e.logs, f)
	return f, nil
}

// existing keeps the paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// tail returns the last n lines of a file ("" when unreadable).
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "") + "\n"
}

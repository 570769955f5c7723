// Package framework drives Longhorn on a running cluster (normally the local
// cluster of `make cluster`, package testbed/cluster) for `make demo` and the
// e2e tests: settings, volumes, attachment tickets, engine endpoints,
// replica lists, commands inside a node's namespaces, replica process kills
// and data sets written and verified through a volume's frontend with real
// clients (qemu-img, qemu-io, nbdfuse, losetup, mkfs.ext4).
//
// Every call takes a context and returns an error; nothing here takes a
// testing.T, so a test wraps the calls in t.Fatal and the demo prints them.
// Waits take an explicit timeout and, when it passes, return an error that
// wraps ErrTimeout and carries a dump of the volume's objects (Dump).
//
// Commands "inside a node" run with nsenter(1) in the mount and network
// namespaces of the node's instance-manager container process (see
// NodeExec for why), so the caller must be root on the machine that runs the
// cluster, as `make cluster` itself is.
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
)

// Namespace is where Longhorn's objects live.
const Namespace = "longhorn-system"

// ErrTimeout is wrapped by every error of a wait whose deadline passed.
var ErrTimeout = errors.New("timed out")

// Logf receives one progress line per call (no trailing newline needed).
type Logf func(format string, args ...any)

// Cluster is a connection to a cluster running Longhorn.
type Cluster struct {
	// Kubeconfig is the admin kubeconfig path the connection was made with.
	Kubeconfig string
	// Rest is the client configuration built from Kubeconfig.
	Rest *rest.Config
	// Kube is the core Kubernetes clientset.
	Kube kubernetes.Interface
	// LH is the generated longhorn.io/v1beta2 clientset.
	LH versioned.Interface
	// KubectlPath is the kubectl binary Kubectl runs: $KUBECTL, else
	// kubectl in $KUBEBUILDER_ASSETS, else kubectl on $PATH.
	KubectlPath string
	// Log, when set, receives progress lines of long waits.
	Log Logf
}

// Connect builds clients from a kubeconfig file (for the local cluster:
// cluster.Config.KubeconfigPath()) and checks the API server answers
// within 10 s.
func Connect(ctx context.Context, kubeconfig string) (*Cluster, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	rc.QPS, rc.Burst = 50, 100
	// The API server's warnings (e.g. on finalizer names) are for kubectl
	// users; a program printing its own progress drops them.
	rc.WarningHandler = rest.NoWarnings{}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	lh, err := versioned.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Kubeconfig: kubeconfig, Rest: rc, Kube: kube, LH: lh, KubectlPath: findKubectl()}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := kube.CoreV1().Namespaces().Get(pctx, Namespace, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("cluster at %s: namespace %s: %w", rc.Host, Namespace, err)
	}
	return c, nil
}

func findKubectl() string {
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		if p := filepath.Join(d, "kubectl"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	return "kubectl"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (c *Cluster) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

// Kubectl runs kubectl with the cluster's kubeconfig and returns its
// combined output; a non-zero exit is an error that includes the output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.KubectlPath, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return out, nil
}

// Setting returns the value of Longhorn setting name (e.g.
// "storage-minimal-available-percentage").
func (c *Cluster) Setting(ctx context.Context, name string) (string, error) {
	s, err := c.LH.LonghornV1beta2().Settings(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("setting %s: %w", name, err)
	}
	return s.Value, nil
}

// SetSetting sets Longhorn setting name to value as a user's `kubectl
// patch lhs` does (an update of .value, retried on conflict). The webhook
// rejects invalid values; that error is returned as is.
func (c *Cluster) SetSetting(ctx context.Context, name, value string) error {
	// Retried on conflicts, and while the API server cannot reach the
	// admission webhook (InternalError: a manager pod restarting, or its
	// connection cut by a test), for about 20 s.
	backoff := wait.Backoff{Steps: 40, Duration: 500 * time.Millisecond, Factor: 1}
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsInternalError(err) }
	err := retry.OnError(backoff, retriable, func() error {
		s, err := c.LH.LonghornV1beta2().Settings(Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Value == value {
			return nil
		}
		s.Value = value
		_, err = c.LH.LonghornV1beta2().Settings(Namespace).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("set setting %s=%q: %w", name, value, err)
	}
	return nil
}

// IsNotFound reports whether err is a Kubernetes NotFound error.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// poll calls cond every interval until it returns true, an error, or the
// timeout passes; then it returns an error wrapping ErrTimeout with the
// last message cond gave.
func poll(ctx context.Context, timeout, interval time.Duration, cond func(ctx context.Context) (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		ok, msg, err := cond(ctx)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if ok {
			return nil
		}
		if msg != "" {
			last = msg
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			if last == "" {
				last = "condition never held"
			}
			return fmt.Errorf("%w after %v: %s", ErrTimeout, timeout, last)
		case <-time.After(interval):
		}
	}
}

// retryConflict runs fn again (with client-go's default backoff) while it
// returns a Conflict error.
func retryConflict(fn func() error) error { return retry.RetryOnConflict(retry.DefaultRetry, fn) }

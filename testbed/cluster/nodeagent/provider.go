package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"
)

type (
	nodeutilNodeProvider = node.NodeProvider
	authTokenRequest     = authv1.TokenRequest
	execExitError        = exec.ExitError
)

func newMux() *http.ServeMux { return http.NewServeMux() }

// CreatePod starts running a pod (virtual-kubelet calls it for every pod
// bound to this node that the agent does not run yet).
func (a *Agent) CreatePod(_ context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.pods[key]; ok {
		if old.pod.UID == pod.UID {
			return nil
		}
		old.stop(0) // a stale pod of the same name
		go old.remove()
	}
	r := newPodRunner(a, pod)
	a.pods[key] = r
	klog.Infof("pod %s: starting (%d init, %d containers)", key, len(r.inits), len(r.ctrs))
	r.start()
	return nil
}

// UpdatePod accepts spec updates without acting on them: containers of a
// running pod are immutable apart from images, which are not re-pulled here.
func (a *Agent) UpdatePod(context.Context, *corev1.Pod) error { return nil }

// DeletePod stops the pod's containers (SIGTERM, SIGKILL after the grace
// period) and reports the terminal status; the pod's directory is removed.
func (a *Agent) DeletePod(_ context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	a.mu.Lock()
	r, ok := a.pods[key]
	a.mu.Unlock()
	if !ok || r.pod.UID != pod.UID {
		return errdefs.NotFoundf("pod %s (uid %s) is not running on this node", key, pod.UID)
	}
	klog.Infof("pod %s: deleting", key)
	r.stop(gracePeriod(pod, nil))
	go func() {
		<-r.done
		// Let the notifier report the final status before forgetting the pod.
		time.Sleep(time.Second)
		a.mu.Lock()
		if a.pods[key] == r {
			delete(a.pods, key)
		}
		a.mu.Unlock()
		r.remove()
	}()
	return nil
}

func (a *Agent) runner(ns, name string) (*podRunner, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.pods[ns+"/"+name]
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s not found on this node", ns, name)
	}
	return r, nil
}

// GetPod returns the pod with its current status.
func (a *Agent) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	r, err := a.runner(ns, name)
	if err != nil {
		return nil, err
	}
	return r.snapshot(), nil
}

// GetPodStatus returns the pod's current status.
func (a *Agent) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	p, err := a.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &p.Status, nil
}

// GetPods returns every pod the agent runs.
func (a *Agent) GetPods(context.Context) ([]*corev1.Pod, error) {
	a.mu.Lock()
	rs := make([]*podRunner, 0, len(a.pods))
	for _, r := range a.pods {
		rs = append(rs, r)
	}
	a.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.snapshot())
	}
	return out, nil
}

// NotifyPods registers the status callback (node.PodNotifier).
func (a *Agent) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	a.mu.Lock()
	a.notify = cb
	a.mu.Unlock()
}

// pickContainer finds a container by name; "" picks the only container.
func (r *podRunner) pickContainer(name string) (*container, error) {
	if name == "" && len(r.ctrs) == 1 {
		return r.ctrs[0], nil
	}
	if c := r.container(name); c != nil {
		return c, nil
	}
	return nil, errdefs.NotFoundf("pod %s has no container %q", r.key(), name)
}

// GetContainerLogs serves `kubectl logs` (tailLines, limitBytes,
// timestamps, follow, previous, sinceSeconds, sinceTime).
func (a *Agent) GetContainerLogs(ctx context.Context, ns, name, ctrName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	r, err := a.runner(ns, name)
	if err != nil {
		return nil, err
	}
	c, err := r.pickContainer(ctrName)
	if err != nil {
		return nil, err
	}
	// Run i logs to <i>.log; restartCount is the latest run (running,
	// exited, or in back-off after it).
	r.mu.Lock()
	run := c.restartCount
	r.mu.Unlock()
	if opts.Previous {
		run--
	}
	if run < 0 {
		return nil, errdefs.NotFoundf("container %q in pod %s has no previous run", c.spec.Name, r.key())
	}
	path := c.logPath(run)
	if _, err := os.Stat(path); err != nil {
		return nil, errdefs.NotFoundf("container %q in pod %s has no log for run %d yet", c.spec.Name, r.key(), run)
	}
	stillWriting := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return c.restartCount == run && c.state.Running != nil
	}
	pr, pw := io.Pipe()
	go func() {
		err := streamLogs(ctx, path, opts, newLimitWriter(pw, opts.LimitBytes), stillWriting)
		if errors.Is(err, errLimit) {
			err = nil
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// RunInContainer serves `kubectl exec` (without a TTY): the command runs in
// the container's mount namespace with its environment.
func (a *Agent) RunInContainer(ctx context.Context, ns, name, ctrName string, cmd []string, attach api.AttachIO) error {
	r, err := a.runner(ns, name)
	if err != nil {
		return err
	}
	c, err := r.pickContainer(ctrName)
	if err != nil {
		return err
	}
	r.mu.Lock()
	pid, env, running := c.pid, c.env, c.state.Running != nil
	r.mu.Unlock()
	if !running {
		return errdefs.InvalidInputf("container %q in pod %s is not running", c.spec.Name, r.key())
	}
	ex := a.nsenterCmd(ctx, pid, cmd, env)
	if in := attach.Stdin(); in != nil {
		ex.Stdin = in
	}
	if out := attach.Stdout(); out != nil {
		ex.Stdout = out
		defer out.Close()
	}
	if e := attach.Stderr(); e != nil {
		ex.Stderr = e
		defer e.Close()
	}
	err = ex.Run()
	var ee *execExitError
	if errors.As(err, &ee) {
		return utilexec.CodeExitError{Err: err, Code: ee.ExitCode()}
	}
	return err
}

// AttachToContainer is not supported: container stdio goes to log files.
func (a *Agent) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errdefs.InvalidInput("attach is not supported by the local cluster; use kubectl logs -f")
}

// GetStatsSummary returns a node-only summary (no per-pod accounting).
func (a *Agent) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: a.cfg.NodeName, StartTime: metav1.Now()}}, nil
}

// GetMetricsResource returns no metrics.
func (a *Agent) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) { return nil, nil }

// PortForward serves `kubectl port-forward`: pods listen on the node IP.
func (a *Agent) PortForward(ctx context.Context, ns, name string, port int32, stream io.ReadWriteCloser) error {
	if _, err := a.runner(ns, name); err != nil {
		return err
	}
	defer stream.Close()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.cfg.NodeIP, strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s:%d: %w", ns, name, port, err)
	}
	defer conn.Close()
	errc := make(chan error, 2)
	go func() { _, err := io.Copy(conn, stream); errc <- err }()
	go func() { _, err := io.Copy(stream, conn); errc <- err }()
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	return err
}

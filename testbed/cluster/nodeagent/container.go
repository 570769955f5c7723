package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

const (
	sigterm = syscall.SIGTERM
	sigkill = syscall.SIGKILL
)

// container is one container of a pod; its fields are guarded by the
// pod's mutex.
type container struct {
	r    *podRunner
	spec corev1.Container
	init bool

	restartCount int32
	state, last  corev1.ContainerState
	ready        bool
	started      bool
	pid          int
	env          []string // resolved environment of the current run
}

func newContainer(r *podRunner, spec corev1.Container, init bool) *container {
	return &container{r: r, spec: spec, init: init,
		state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
}

func (c *container) statusLocked() corev1.ContainerStatus {
	started := c.started
	s := corev1.ContainerStatus{
		Name:                 c.spec.Name,
		State:                *c.state.DeepCopy(),
		LastTerminationState: *c.last.DeepCopy(),
		Ready:                c.ready,
		RestartCount:         c.restartCount,
		Image:                c.spec.Image,
		ImageID:              "lhcluster://" + c.spec.Image,
		Started:              &started,
	}
	if c.pid > 0 {
		s.ContainerID = containerID(c.pid)
	}
	return s
}

// loop runs a main container and restarts it per the pod's restartPolicy
// with exponential back-off (reset after a run longer than 2x the maximum
// back-off), until the pod is deleted.
func (c *container) loop(ctx context.Context, vols map[string]string) {
	attempt := 0
	for {
		began := time.Now()
		code := c.runOnce(ctx, vols)
		if ctx.Err() != nil || !restartAfterExit(c.r.pod.Spec.RestartPolicy, code) {
			return
		}
		if time.Since(began) > 2*c.r.a.cfg.MaxBackoff {
			attempt = 0
		}
		if !c.waitRestart(ctx, attempt) {
			return
		}
		attempt++
	}
}

// waitRestart shows CrashLoopBackOff for the back-off delay, then counts
// the restart. False when the pod was deleted meanwhile.
func (c *container) waitRestart(ctx context.Context, attempt int) bool {
	d := backoff(attempt, c.r.a.cfg.MaxBackoff)
	c.r.mu.Lock()
	if c.state.Terminated != nil {
		c.last = corev1.ContainerState{Terminated: c.state.Terminated}
	}
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "CrashLoopBackOff", Message: fmt.Sprintf("back-off %v restarting failed container %s", d, c.spec.Name)}}
	c.r.mu.Unlock()
	c.r.notify()
	if !sleepCtx(ctx, d) {
		return false
	}
	c.r.mu.Lock()
	c.restartCount++
	c.r.mu.Unlock()
	return true
}

// runOnce starts the container process, waits for it to exit and records
// the termination. Configuration errors are retried (kubelet does too)
// until they resolve or the pod is deleted. Returns the exit code (-1 when
// the pod was deleted before the process ran).
func (c *container) runOnce(ctx context.Context, vols map[string]string) int32 {
	var spec *ExecSpec
	for attempt := 0; ; attempt++ {
		var err error
		if spec, err = c.build(vols); err == nil {
			break
		}
		klog.Warningf("pod %s container %s: %v", c.r.key(), c.spec.Name, err)
		c.r.setWaiting([]*container{c}, "CreateContainerConfigError", err.Error())
		if !sleepCtx(ctx, backoff(attempt, c.r.a.cfg.MaxBackoff)) {
			return -1
		}
	}
	if ctx.Err() != nil {
		return -1
	}
	proc, logs, cg, err := c.startProcess(spec)
	if err != nil {
		now := metav1.Now()
		c.r.mu.Lock()
		c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: now, FinishedAt: now}}
		c.r.mu.Unlock()
		c.r.notify()
		return 128
	}
	startedAt := metav1.Now()
	runCtx, stopProbes := context.WithCancel(ctx)
	c.r.mu.Lock()
	c.pid, c.env = proc.Pid, spec.Env
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}}
	c.started = c.spec.StartupProbe == nil
	c.ready = !c.init && c.spec.ReadinessProbe == nil
	c.r.mu.Unlock()
	c.r.notify()
	if !c.init {
		go c.probe(runCtx, proc.Pid)
	}
	code, reason := waitExit(proc)
	stopProbes()
	// As when a container's PID 1 exits: everything it started dies too.
	killTree(cg, proc.Pid)
	logs.wait()
	c.r.mu.Lock()
	c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, StartedAt: startedAt, FinishedAt: metav1.Now(), ContainerID: containerID(proc.Pid)}}
	c.ready = false
	c.r.mu.Unlock()
	c.r.notify()
	return code
}

// build resolves argv, environment and mounts for the next run.
func (c *container) build(vols map[string]string) (*ExecSpec, error) {
	a := c.r.a
	env, err := containerEnv(c.r.pod, &c.spec, a, a.podContext(), a.baseEnv(c.r.pod))
	if err != nil {
		return nil, err
	}
	em := envMap(env)
	cmd, args := expandAll(c.spec.Command, em), expandAll(c.spec.Args, em)
	argv, err := a.images.Argv(c.spec.Image, cmd, args, lookPathIn(em["PATH"]))
	if err != nil {
		return nil, err
	}
	mounts, err := containerMounts(c.r.pod, &c.spec, vols)
	if err != nil {
		return nil, err
	}
	return &ExecSpec{Argv: argv, Env: env, Dir: c.spec.WorkingDir, Mounts: mounts}, nil
}

func expandAll(ss []string, env map[string]string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = expand(s, env)
	}
	return out
}

// lookPathIn resolves a command name in the container's PATH.
func lookPathIn(path string) func(string) (string, error) {
	return func(name string) (string, error) {
		if strings.Contains(name, "/") {
			return exec.LookPath(name)
		}
		for _, d := range filepath.SplitList(path) {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%q not in PATH %s", name, path)
	}
}

// startProcess starts `unshare --mount --propagation unchanged -- <agent>
// pod-exec SPEC` in the container's cgroup and process group, with stdout
// and stderr going to this run's log file.
func (c *container) startProcess(spec *ExecSpec) (*os.Process, *logSink, *Cgroup, error) {
	dir := c.r.dir
	specPath := filepath.Join(dir, "exec", c.spec.Name+".json")
	if err := os.MkdirAll(filepath.Dir(specPath), 0o700); err != nil {
		return nil, nil, nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		return nil, nil, nil, err
	}
	c.r.mu.Lock()
	restarts := c.restartCount
	c.r.mu.Unlock()
	logs, err := newLogSink(c.logPath(restarts))
	if err != nil {
		return nil, nil, nil, err
	}
	cmd := exec.Command(c.r.a.unshare, "--mount", "--propagation", "unchanged", "--", c.r.a.cfg.AgentBinary, "pod-exec", specPath)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Stdout, cmd.Stderr = logs.stdoutW, logs.stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var cg *Cgroup
	if c.r.cg != nil {
		if cg, err = NewCgroup(filepath.Join(c.r.cg.Path, c.spec.Name)); err != nil {
			logs.closeWriters()
			return nil, nil, nil, err
		}
		fd, err := cg.Open()
		if err != nil {
			logs.closeWriters()
			return nil, nil, nil, err
		}
		defer fd.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(fd.Fd())
	}
	err = cmd.Start()
	logs.closeWriters() // the child holds its copies
	if err != nil {
		logs.wait()
		return nil, nil, nil, fmt.Errorf("start %s: %w", c.spec.Name, err)
	}
	return cmd.Process, logs, cg, nil
}

// logPath is the log file of the run after `restarts` restarts.
func (c *container) logPath(restarts int32) string {
	return filepath.Join(c.r.dir, "logs", c.spec.Name, strconv.Itoa(int(restarts))+".log")
}

// waitExit waits for the process and maps its end to an exit code the way
// a runtime reports it (128+signal when killed) and a reason.
func waitExit(p *os.Process) (int32, string) {
	st, err := p.Wait()
	if err != nil {
		return 128, "Error"
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	code := int32(st.ExitCode())
	if ok && ws.Signaled() {
		code = 128 + int32(ws.Signal())
	}
	if code == 0 {
		return 0, "Completed"
	}
	return code, "Error"
}

// killTree kills what is left of a container: its cgroup (removed, as a
// killed cgroup cannot take new processes), or its process group without
// cgroup2.
func killTree(cg *Cgroup, pid int) {
	if cg != nil {
		if err := cg.Remove(10 * time.Second); err != nil {
			klog.Warning(err)
		}
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// signal sends sig to the running container's process group.
func (c *container) signal(sig syscall.Signal) {
	c.r.mu.Lock()
	pid, running := c.pid, c.state.Running != nil
	c.r.mu.Unlock()
	if pid > 0 && running {
		if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			klog.Warningf("pod %s container %s: kill %v: %v", c.r.key(), c.spec.Name, sig, err)
		}
	}
}

// kill ends the current run (liveness or startup probe failure): SIGTERM,
// then SIGKILL after the pod's grace period (capped at 30 s).
func (c *container) kill(pid int) {
	c.signal(sigterm)
	deadline := time.Now().Add(gracePeriod(c.r.pod, nil))
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		c.r.mu.Lock()
		same := c.pid == pid && c.state.Running != nil
		c.r.mu.Unlock()
		if !same {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.signal(sigkill)
}

// gracePeriod is the deletion grace period, else the pod's
// terminationGracePeriodSeconds, else 30 s; never more than 30 s.
func gracePeriod(pod *corev1.Pod, override *int64) time.Duration {
	s := int64(30)
	switch {
	case override != nil:
		s = *override
	case pod.DeletionGracePeriodSeconds != nil:
		s = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		s = *pod.Spec.TerminationGracePeriodSeconds
	}
	if s > 30 {
		s = 30
	}
	if s < 0 {
		s = 0
	}
	return time.Duration(s) * time.Second
}

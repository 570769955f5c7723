package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// podRunner runs one pod: volumes, init containers in order, then every
// container in its own restart loop, until the pod is deleted.
type podRunner struct {
	a   *Agent
	dir string  // <node dir>/pods/<uid>
	cg  *Cgroup // nil without cgroup2

	mu        sync.Mutex
	pod       *corev1.Pod // spec as received; status is computed
	startTime metav1.Time
	conds     []corev1.PodCondition
	sandbox   bool // volumes prepared
	initDone  bool
	inits     []*container
	ctrs      []*container
	deleted   bool // DeletePod was called
	finished  bool // every process is gone after a delete or a terminal phase

	ctx    context.Context // canceled by stop
	cancel context.CancelFunc
	done   chan struct{}
	dirty  chan struct{} // status changed; the notifier sends it
}

func newPodRunner(a *Agent, pod *corev1.Pod) *podRunner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &podRunner{
		a: a, pod: pod.DeepCopy(), startTime: metav1.Now(),
		dir: filepath.Join(a.cfg.NodeDir, "pods", string(pod.UID)),
		ctx: ctx, cancel: cancel, done: make(chan struct{}), dirty: make(chan struct{}, 1),
	}
	if a.podsCgroup != "" {
		cg, err := NewCgroup(filepath.Join(a.podsCgroup, string(pod.UID)))
		if err != nil {
			klog.Warningf("pod %s/%s: no cgroup, killing by process group only: %v", pod.Namespace, pod.Name, err)
		}
		r.cg = cg
	}
	for i := range pod.Spec.InitContainers {
		r.inits = append(r.inits, newContainer(r, pod.Spec.InitContainers[i], true))
	}
	for i := range pod.Spec.Containers {
		r.ctrs = append(r.ctrs, newContainer(r, pod.Spec.Containers[i], false))
	}
	return r
}

func (r *podRunner) key() string { return r.pod.Namespace + "/" + r.pod.Name }

// start runs the pod in the background.
func (r *podRunner) start() {
	go r.notifier()
	go r.run()
}

// notify marks the status dirty; the notifier goroutine reports the latest
// status, so reports never go backwards.
func (r *podRunner) notify() {
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

func (r *podRunner) notifier() {
	for {
		select {
		case <-r.dirty:
			r.a.notifyPod(r.snapshot())
		case <-r.done:
			r.a.notifyPod(r.snapshot())
			return
		}
	}
}

func (r *podRunner) run() {
	defer close(r.done)
	defer r.finish()
	vols, ok := r.prepare()
	if !ok {
		return
	}
	for _, c := range r.inits {
		if !r.runInit(c, vols) {
			return
		}
	}
	r.mu.Lock()
	r.initDone = true
	r.mu.Unlock()
	r.notify()
	var wg sync.WaitGroup
	for _, c := range r.ctrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(r.ctx, vols)
		}()
	}
	wg.Wait()
}

// prepare materializes volumes, retrying (ConfigMaps and Secrets may not
// exist yet) until it works or the pod is deleted.
func (r *podRunner) prepare() (map[string]string, bool) {
	for attempt := 0; ; attempt++ {
		vols, err := prepareVolumes(r.ctx, r.pod, r.dir, r.a.volumeEnv())
		if err == nil {
			r.mu.Lock()
			r.sandbox = true
			r.mu.Unlock()
			r.notify()
			return vols, true
		}
		klog.Warningf("pod %s: %v", r.key(), err)
		r.setWaiting(append(append([]*container{}, r.inits...), r.ctrs...), "CreateContainerConfigError", err.Error())
		if !sleepCtx(r.ctx, backoff(attempt, r.a.cfg.MaxBackoff)) {
			return nil, false
		}
	}
}

// runInit runs an init container until it succeeds; false means the pod
// failed (restartPolicy Never) or was deleted.
func (r *podRunner) runInit(c *container, vols map[string]string) bool {
	for attempt := 0; ; attempt++ {
		code := c.runOnce(r.ctx, vols)
		if r.ctx.Err() != nil {
			return false
		}
		if code == 0 {
			return true
		}
		if r.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return false
		}
		c.waitRestart(r.ctx, attempt)
	}
}

func (r *podRunner) setWaiting(cs []*container, reason, msg string) {
	r.mu.Lock()
	for _, c := range cs {
		if c.state.Running == nil {
			c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
		}
	}
	r.mu.Unlock()
	r.notify()
}

// stop asks every container to end: SIGTERM, then after the grace period
// (capped at 30 s) SIGKILL of everything in the pod's cgroup.
func (r *podRunner) stop(grace time.Duration) {
	r.mu.Lock()
	if r.deleted {
		r.mu.Unlock()
		return
	}
	r.deleted = true
	r.mu.Unlock()
	r.cancel()
	for _, c := range append(append([]*container{}, r.inits...), r.ctrs...) {
		c.signal(sigterm)
	}
	go func() {
		select {
		case <-r.done:
		case <-time.After(grace):
			r.killAll()
		}
	}()
}

func (r *podRunner) killAll() {
	if r.cg != nil {
		if err := r.cg.Kill(10 * time.Second); err != nil {
			klog.Warningf("pod %s: %v", r.key(), err)
		}
	}
	for _, c := range append(append([]*container{}, r.inits...), r.ctrs...) {
		c.signal(sigkill)
	}
}

// finish runs when every container loop has ended: kill leftovers (children
// a container left behind), remove the cgroup and mark containers
// terminated.
func (r *podRunner) finish() {
	r.killAll()
	if r.cg != nil {
		if err := r.cg.Remove(10 * time.Second); err != nil {
			klog.Warningf("pod %s: %v", r.key(), err)
		}
	}
	now := metav1.Now()
	r.mu.Lock()
	for _, c := range append(append([]*container{}, r.inits...), r.ctrs...) {
		if c.state.Terminated == nil {
			c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "Killed", Message: "pod deleted", FinishedAt: now,
			}}
			c.ready = false
		}
	}
	r.finished = true
	r.mu.Unlock()
}

// remove deletes the pod's directory (volumes, logs) after it finished.
func (r *podRunner) remove() {
	<-r.done
	if err := os.RemoveAll(r.dir); err != nil {
		klog.Warningf("pod %s: removing %s: %v", r.key(), r.dir, err)
	}
}

// snapshot returns a copy of the pod with its current status.
func (r *podRunner) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pod.DeepCopy()
	p.Status = r.statusLocked()
	return p
}

func (r *podRunner) statusLocked() corev1.PodStatus {
	var inits, ctrs []corev1.ContainerStatus
	for _, c := range r.inits {
		inits = append(inits, c.statusLocked())
	}
	for _, c := range r.ctrs {
		ctrs = append(ctrs, c.statusLocked())
	}
	phase := podPhase(r.pod.Spec.RestartPolicy, inits, ctrs, r.initDone)
	if r.finished && phase != corev1.PodSucceeded {
		phase = corev1.PodFailed
		if r.deleted && allZero(ctrs) {
			phase = corev1.PodSucceeded
		}
	}
	r.conds = podConditions(r.conds, r.initDone, r.sandbox && !r.finished, ctrs, phase, metav1.Now())
	ip := r.a.cfg.NodeIP
	return corev1.PodStatus{
		Phase:                 phase,
		Conditions:            append([]corev1.PodCondition(nil), r.conds...),
		HostIP:                ip,
		HostIPs:               []corev1.HostIP{{IP: ip}},
		PodIP:                 ip,
		PodIPs:                []corev1.PodIP{{IP: ip}},
		StartTime:             &r.startTime,
		InitContainerStatuses: inits,
		ContainerStatuses:     ctrs,
		QOSClass:              r.pod.Status.QOSClass,
	}
}

func allZero(ss []corev1.ContainerStatus) bool {
	for _, s := range ss {
		if t := s.State.Terminated; t == nil || t.ExitCode != 0 {
			return false
		}
	}
	return true
}

func (r *podRunner) container(name string) *container {
	for _, c := range append(append([]*container{}, r.inits...), r.ctrs...) {
		if c.spec.Name == name {
			return c
		}
	}
	return nil
}

// backoff is the restart delay after n failures: 1 s doubling to max.
func backoff(n int, max time.Duration) time.Duration {
	d := time.Second
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// sleepCtx sleeps d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func containerID(pid int) string { return fmt.Sprintf("lhcluster://%d", pid) }

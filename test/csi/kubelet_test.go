package csi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podProc is a pod's container run as a local process.
type podProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// kubelet runs the instance-manager pod of n1 as a local process and
// reports it Running; a deleted pod's process group is stopped.
func (n *node) kubelet() {
	procs := map[string]*podProc{}
	defer func() {
		for _, p := range procs {
			stopProc(p)
		}
	}()
	for n.ctx.Err() == nil {
		pods, err := n.kube.CoreV1().Pods(ns).List(n.ctx, metav1.ListOptions{})
		if err == nil {
			for i := range pods.Items {
				n.syncPod(&pods.Items[i], procs)
			}
		}
		select {
		case <-n.ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (n *node) syncPod(pod *corev1.Pod, procs map[string]*podProc) {
	if pod.Spec.NodeName != n.name || len(pod.Spec.Containers) == 0 {
		return
	}
	p := procs[pod.Name]
	switch {
	case pod.DeletionTimestamp != nil:
		if p != nil {
			stopProc(p)
			delete(procs, pod.Name)
		}
		zero := int64(0)
		_ = n.kube.CoreV1().Pods(ns).Delete(n.ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	case p == nil && (pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending):
		if p = n.startPodProcess(pod); p != nil {
			procs[pod.Name] = p
			n.setPodStatus(pod, corev1.PodRunning)
		}
	case p != nil && pod.Status.Phase == corev1.PodRunning:
		select {
		case <-p.exited:
			n.setPodStatus(pod, corev1.PodFailed)
		default:
		}
	}
}

// startPodProcess runs the pod's command in a private mount namespace
// whose /var/run/longhorn (NBD sockets, blockdev FUSE mounts and records) is
// the node's own directory, with the blockdev device nodes in n.devDir.
func (n *node) startPodProcess(pod *corev1.Pod) *podProc {
	ctr := pod.Spec.Containers[0]
	args := make([]string, 0, len(ctr.Args))
	for _, a := range ctr.Args {
		args = append(args, strings.ReplaceAll(a, "$(POD_IP)", n.ip))
	}
	for i, a := range args {
		if a == "--data-root" && i+1 < len(args) {
			args[i+1] = filepath.Join(n.dir, "instance-manager")
		}
	}
	run := filepath.Join(n.dir, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		n.t.Errorf("pod %s: %v", pod.Name, err)
		return nil
	}
	log, err := os.OpenFile(filepath.Join(n.dir, "instance-manager.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.t.Errorf("pod %s log: %v", pod.Name, err)
		return nil
	}
	defer log.Close()
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c",
		`mkdir -p /var/run/longhorn && mount --bind "$0" /var/run/longhorn && exec "$@"`, run, n.binary}, args...)...)
	cmd.Env = append(os.Environ(), "LONGHORN_BLOCKDEV_DEV_DIR="+n.devDir)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		n.t.Errorf("pod %s: %v", pod.Name, err)
		return nil
	}
	p := &podProc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p
}

func (n *node) setPodStatus(pod *corev1.Pod, phase corev1.PodPhase) {
	ready := corev1.ConditionTrue
	if phase != corev1.PodRunning {
		ready = corev1.ConditionFalse
	}
	pod.Status.Phase, pod.Status.PodIP, pod.Status.HostIP = phase, n.ip, n.ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: n.ip}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()}}
	if _, err := n.kube.CoreV1().Pods(ns).UpdateStatus(n.ctx, pod, metav1.UpdateOptions{}); err != nil && n.ctx.Err() == nil {
		n.t.Logf("pod %s status: %v", pod.Name, err)
	}
}

// stopProc sends SIGTERM to the process group (the instance manager stops
// its engines, which remove their devices), then SIGKILL after 15 s.
func stopProc(p *podProc) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

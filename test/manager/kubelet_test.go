package manager_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podProc is the process the test kubelet runs for a pod.
type podProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	ip     string
}

// kubelet plays the kubelet of the three simulated nodes for the
// instance-manager pods until the cluster context ends: it starts the pod's
// container command (our longhorn binary, $(POD_IP) expanded to the pod's
// address: the node's own for the first pod of a node, another loopback
// address of the node's /24 for a second pod running beside it, as the
// instance managers of two images during an upgrade), marks the pod Running
// and Ready with that IP, marks it Failed
// when the process exits, and on deletion kills the process group and
// removes the pod.
func (c *cluster) kubelet() {
	procs := map[string]*podProc{}
	defer func() {
		for _, p := range procs {
			stopProc(p)
		}
	}()
	for c.ctx.Err() == nil {
		pods, err := c.kube.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{})
		if err == nil {
			for i := range pods.Items {
				c.syncPod(&pods.Items[i], procs)
			}
		}
		select {
		case <-c.ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) nodeByName(name string) *simNode {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func (c *cluster) syncPod(pod *corev1.Pod, procs map[string]*podProc) {
	n := c.nodeByName(pod.Spec.NodeName)
	if n == nil || len(pod.Spec.Containers) == 0 {
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
		_ = c.kube.CoreV1().Pods(ns).Delete(c.ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	case p == nil && (pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending):
		p = c.startPodProcess(pod, n, podIP(n, procs))
		if p == nil {
			return
		}
		procs[pod.Name] = p
		c.setPodStatus(pod, corev1.PodRunning, p.ip)
	case p != nil && pod.Status.Phase == corev1.PodRunning:
		select {
		case <-p.exited:
			c.setPodStatus(pod, corev1.PodFailed, p.ip)
		default:
		}
	}
}

// podIP picks the address of a new pod on node n: the node's own when no
// live pod holds it, else 127.R.S.(i+10k) for the first k no live pod holds.
func podIP(n *simNode, procs map[string]*podProc) string {
	used := map[string]bool{}
	for _, p := range procs {
		select {
		case <-p.exited:
		default:
			used[p.ip] = true
		}
	}
	dot := strings.LastIndex(n.ip, ".")
	prefix := n.ip[:dot+1]
	i, _ := strconv.Atoi(n.ip[dot+1:])
	for k := 0; ; k++ {
		ip := prefix + strconv.Itoa(i+10*k)
		if !used[ip] {
			return ip
		}
	}
}

func (c *cluster) startPodProcess(pod *corev1.Pod, n *simNode, ip string) *podProc {
	ctr := pod.Spec.Containers[0]
	args := make([]string, 0, len(ctr.Args))
	for _, a := range ctr.Args {
		args = append(args, strings.ReplaceAll(a, "$(POD_IP)", ip))
	}
	for i, a := range args {
		// The pod mounts the node's data path; here the instance manager's
		// files go under the node's own directory.
		if a == "--data-root" && i+1 < len(args) {
			args[i+1] = filepath.Join(c.dir, n.name, "instance-manager")
		}
		if a == "--tls-dir" && i+1 < len(args) {
			args[i+1] = c.secretVolume(n, "longhorn-grpc-tls")
		}
	}
	log, err := os.Create(filepath.Join(c.dir, pod.Name+".log"))
	if err != nil {
		c.t.Errorf("pod %s log: %v", pod.Name, err)
		return nil
	}
	defer log.Close()
	// Like the pod's own mount namespace: the node's /var/run/longhorn
	// (engine NBD sockets, blockdev FUSE mounts and owner records) and
	// /dev/longhorn (blockdev device nodes) are its own directories, so
	// engines of volumes with the same name on other nodes or in other test
	// runs on this machine never share a socket or a device node. With
	// /dev/longhorn shared, a concurrent run's engine replaced this run's
	// /dev/longhorn/<volume> and the test wrote into the other run's volume.
	run, dev := c.nodeRunDir(n), c.nodeDevDir(n)
	for _, d := range []string{run, dev} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.t.Errorf("pod %s: %v", pod.Name, err)
			return nil
		}
	}
	script := `mkdir -p ` + podRunDir + ` ` + podDevDir + ` && mount --bind "$0" ` + podRunDir +
		` && mount --bind "$1" ` + podDevDir + ` && shift && exec "$@"`
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, run, dev, c.binary}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Errorf("pod %s: %v", pod.Name, err)
		return nil
	}
	p := &podProc{cmd: cmd, exited: make(chan struct{}), ip: ip}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p
}

// secretVolume materializes the optional Secret volume name for a pod of
// node n (its keys as files; an empty directory without the Secret) and
// returns the directory.
func (c *cluster) secretVolume(n *simNode, name string) string {
	dir := filepath.Join(c.dir, n.name, "secret-"+name)
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.t.Errorf("secret volume %s: %v", name, err)
		return dir
	}
	s, err := c.kube.CoreV1().Secrets(ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return dir
	}
	for k, v := range s.Data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			c.t.Errorf("secret volume %s: %v", name, err)
		}
	}
	return dir
}

// podRunDir is where engines put their NBD sockets
// (engine/frontend/nbd DefaultSocketDir's parent).
const podRunDir = "/var/run/longhorn"

// podDevDir is where engines with frontend blockdev make the device node
// (engine/frontend/blockdev DefaultDevDir).
const podDevDir = "/dev/longhorn"

// nodeRunDir is the host directory node n's pods see as podRunDir.
func (c *cluster) nodeRunDir(n *simNode) string { return filepath.Join(c.dir, n.name, "run") }

// nodeDevDir is the host directory node n's pods see as podDevDir.
func (c *cluster) nodeDevDir(n *simNode) string { return filepath.Join(c.dir, n.name, "dev") }

// hostEndpoint turns an engine endpoint on node into one this process can
// open: a unix socket under podRunDir or a device node under podDevDir moves
// to the node's directory.
func (c *cluster) hostEndpoint(node, endpoint string) string {
	n := c.node(node)
	if strings.HasPrefix(endpoint, podDevDir+"/") {
		return filepath.Join(c.nodeDevDir(n), strings.TrimPrefix(endpoint, podDevDir+"/"))
	}
	return strings.Replace(endpoint, "socket="+podRunDir+"/", "socket="+c.nodeRunDir(n)+"/", 1)
}

func (c *cluster) setPodStatus(pod *corev1.Pod, phase corev1.PodPhase, ip string) {
	ready := corev1.ConditionTrue
	if phase != corev1.PodRunning {
		ready = corev1.ConditionFalse
	}
	pod.Status.Phase, pod.Status.PodIP, pod.Status.HostIP = phase, ip, ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()}}
	if _, err := c.kube.CoreV1().Pods(ns).UpdateStatus(c.ctx, pod, metav1.UpdateOptions{}); err != nil && c.ctx.Err() == nil {
		c.t.Logf("pod %s status: %v", pod.Name, err)
	}
}

// stopProc sends SIGTERM to the process group (the instance manager stops
// its engines and replicas), then SIGKILL after 15 s.
func stopProc(p *podProc) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

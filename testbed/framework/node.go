package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/internal/procstat"
	"github.com/longhorn-go/longhorn/testbed/cluster/nodeagent"
	"github.com/longhorn-go/longhorn/types"
)

// ErrNoProcess is wrapped when a node's instance manager or an instance's
// process cannot be found on this machine.
var ErrNoProcess = errors.New("process not found")

// InstanceManagerPod returns the running v1 instance-manager pod of node.
func (c *Cluster) InstanceManagerPod(ctx context.Context, node string) (*corev1.Pod, error) {
	pl, err := c.Kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: types.LonghornLabelComponent + "=" + types.LonghornComponentInstanceManager,
		FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return nil, fmt.Errorf("instance-manager pods on %s: %w", node, err)
	}
	for i := range pl.Items {
		p := &pl.Items[i]
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: no running instance-manager pod on node %s (%d pods)", ErrNoProcess, node, len(pl.Items))
}

// InstanceManagerPID returns the host PID of node's instance-manager
// process (the container's main process), found through the pod's cgroup
// (<cgroup2>/lhcluster-*/NODE/pods/UID, as the node agent makes it) or,
// without cgroups, as the `longhorn instance-manager` process listening on
// the pod IP.
func (c *Cluster) InstanceManagerPID(ctx context.Context, node string) (int, error) {
	pod, err := c.InstanceManagerPod(ctx, node)
	if err != nil {
		return 0, err
	}
	procs, err := readProcs()
	if err != nil {
		return 0, err
	}
	var inCgroup map[int]bool
	if root := nodeagent.Cgroup2Root(); root != "" {
		// One pod directory per UID; its container cgroups are below it.
		matches, _ := filepath.Glob(filepath.Join(root, "lhcluster-*", node, "pods", string(pod.UID)))
		for _, m := range matches {
			pids, err := (&nodeagent.Cgroup{Path: m}).Procs()
			if err != nil || len(pids) == 0 {
				continue
			}
			inCgroup = map[int]bool{}
			for _, p := range pids {
				inCgroup[p] = true
			}
		}
	}
	if inCgroup == nil {
		inCgroup = v1PodProcs(procs, string(pod.UID))
	}
	pid, err := findInstanceManager(procs, inCgroup, pod.Status.PodIP)
	if err != nil {
		return 0, fmt.Errorf("node %s, pod %s: %w", node, pod.Name, err)
	}
	return pid, nil
}

// v1PodProcs returns the `longhorn instance-manager` processes whose
// /proc/PID/cgroup places them in pod uid's cgroup (kubelet's cgroupfs
// layout on cgroup v1: .../kubepods/<qos>/pod<UID>/<container>), or nil
// when none does (node agent mode). The pod IP alone is not enough: every
// cluster on this machine shares the host's PID namespace, and another
// cluster (or an old sandbox) may use the same pod IP.
func v1PodProcs(procs []proc, uid string) map[int]bool {
	var in map[int]bool
	for _, p := range procs {
		if !isLonghorn(p.Argv, "instance-manager") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "cgroup"))
		if err != nil || !inPodCgroup(string(b), uid) {
			continue
		}
		if in == nil {
			in = map[int]bool{}
		}
		in[p.PID] = true
	}
	return in
}

// inPodCgroup reports whether a /proc/PID/cgroup text names pod uid's
// cgroup (a path element "pod<UID>") in any hierarchy.
func inPodCgroup(cgroup, uid string) bool {
	for _, line := range strings.Split(cgroup, "\n") {
		// "9:name=systemd:/lhcluster-lh/node-1/kubepods/burstable/pod<UID>/<cid>"
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[2], "/"), "pod"+uid) {
			return true
		}
	}
	return false
}

// NodeExec runs argv inside node: in the mount and network namespaces of
// the node's instance-manager container, where the engine's NBD sockets and
// iSCSI portals are, nbdfuse/losetup/mount work, and node addresses are
// local. It returns stdout; a failure returns an error with stderr.
//
// nsenter(1) from the host rather than `kubectl exec`: the demo and tests
// already run as root on the machine that runs the local cluster (they
// kill replica processes, which kubectl cannot), nsenter keeps exit codes
// and binary stdin/stdout exact without the API server's streaming, and a
// command can outlive the call (NodeStart) when it must keep a FUSE mount.
func (c *Cluster) NodeExec(ctx context.Context, node string, stdin io.Reader, argv ...string) ([]byte, error) {
	cmd, err := c.nodeCmd(ctx, node, argv)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("on %s: %s: %w\n%s", node, strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// NodeShell runs a /bin/sh script inside node (see NodeExec).
func (c *Cluster) NodeShell(ctx context.Context, node, script string) ([]byte, error) {
	return c.NodeExec(ctx, node, nil, "sh", "-c", script)
}

// NodeCommand returns the command argv inside node (as NodeExec runs it:
// the node's mount namespace and the instance manager's network namespace),
// not started; the caller sets its input and output. It ends with ctx.
func (c *Cluster) NodeCommand(ctx context.Context, node string, argv ...string) (*exec.Cmd, error) {
	return c.nodeCmd(ctx, node, argv)
}

func (c *Cluster) nodeCmd(ctx context.Context, node string, argv []string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("node command: empty argv")
	}
	pid, err := c.InstanceManagerPID(ctx, node)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "nsenter", append(nsenterArgs(pid), argv...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	return cmd, nil
}

// nsenterArgs are nsenter's options for a command "inside the node" of
// the instance-manager process pid. On a real node (the process runs in a
// container: its root is another file system) that is the node's mount
// namespace, where containerd's shim runs (host tools, the node's
// /var/lib/longhorn), joined with the pod's network namespace; with the
// node agent (pods are host processes) the process's own namespaces.
func nsenterArgs(pid int) []string {
	if ppid, ok := containerParent(pid); ok {
		return []string{"--mount=/proc/" + strconv.Itoa(ppid) + "/ns/mnt", "--net=/proc/" + strconv.Itoa(pid) + "/ns/net", "--"}
	}
	return []string{"-t", strconv.Itoa(pid), "-m", "-n", "--"}
}

// containerParent reports whether pid runs in a container (its root
// directory is not the host's) and returns its parent (the shim) then.
func containerParent(pid int) (int, bool) {
	var root, host syscall.Stat_t
	if syscall.Stat("/proc/"+strconv.Itoa(pid)+"/root/", &root) != nil || syscall.Stat("/", &host) != nil {
		return 0, false
	}
	if root.Dev == host.Dev && root.Ino == host.Ino {
		return 0, false
	}
	st, err := procstat.Read(pid)
	if err != nil || st.PPID <= 1 {
		return 0, false
	}
	return st.PPID, true
}

// NodeLocalPath returns the path under which a command inside node (see
// NodeExec) finds path p of the node's instance-manager container: p
// itself with the node agent, /proc/PID/root/p on a real node (the
// engine's NBD sockets live in the container's file system).
func (c *Cluster) NodeLocalPath(ctx context.Context, node, p string) (string, error) {
	pid, err := c.InstanceManagerPID(ctx, node)
	if err != nil {
		return "", err
	}
	if _, ok := containerParent(pid); ok {
		root := "/proc/" + strconv.Itoa(pid) + "/root"
		return root + resolveIn(root, p), nil
	}
	return p, nil
}

// resolveIn resolves the symbolic links of the directories of p (an
// absolute path) inside root, as the container sees them: an absolute
// link target starts again at root (/var/run -> /run in a Debian image),
// not at the host's /. The last element is kept as is (a socket).
func resolveIn(root, p string) string {
	parts := strings.Split(strings.Trim(filepath.Clean(p), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0 && hops < 40; {
		next := filepath.Join(cur, parts[0])
		parts = parts[1:]
		if len(parts) == 0 {
			return next
		}
		t, err := os.Readlink(root + next)
		if err != nil {
			cur = next
			continue
		}
		hops++
		if filepath.IsAbs(t) {
			cur = "/"
		}
		parts = append(strings.Split(strings.Trim(filepath.Clean(t), "/"), "/"), parts...)
	}
	return filepath.Join(append([]string{cur}, parts...)...)
}

// NodeProcess is a long-running command started inside a node by NodeStart.
type NodeProcess struct {
	// PID is the host PID of the command (nsenter execs it in place).
	PID  int
	cmd  *exec.Cmd
	done chan error
}

// NodeStart starts argv inside node (see NodeExec) in a session of its own,
// with stdout and stderr appended to logPath (a host path), and returns at
// once. Stop ends it.
func (c *Cluster) NodeStart(ctx context.Context, node, logPath string, argv ...string) (*NodeProcess, error) {
	cmd, err := c.nodeCmd(context.WithoutCancel(ctx), node, argv)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("on %s: start %s: %w", node, strings.Join(argv, " "), err)
	}
	p := &NodeProcess{PID: cmd.Process.Pid, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// Exited reports whether the process has ended (without waiting).
func (p *NodeProcess) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the process to end and returns its exit
// error (nil for status 0); after timeout it returns an error wrapping
// ErrTimeout and leaves the process running.
func (p *NodeProcess) Wait(timeout time.Duration) error {
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(timeout):
		return fmt.Errorf("pid %d: %w after %v", p.PID, ErrTimeout, timeout)
	}
}

// Stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (p *NodeProcess) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		err := <-p.done
		p.done <- err
	}
}

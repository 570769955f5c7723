package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/internal/procstat"
)

// proc is one process of /proc: pid, parent, command line.
type proc struct {
	PID, PPID int
	Argv      []string
}

// readProcs reads every process's pid, ppid and argv from /proc; processes
// that vanish meanwhile are skipped.
func readProcs() ([]proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		st, err := procstat.Parse(string(stat))
		if err != nil {
			continue
		}
		ppid := st.PPID
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cl) == 0 {
			continue
		}
		out = append(out, proc{PID: pid, PPID: ppid, Argv: strings.Split(strings.TrimRight(string(cl), "\x00"), "\x00")})
	}
	return out, nil
}

// isLonghorn reports whether argv runs `longhorn SUB...` with sub as its
// first words (the binary may have any path).
func isLonghorn(argv []string, sub ...string) bool {
	if len(argv) < 1+len(sub) || filepath.Base(argv[0]) != "longhorn" {
		return false
	}
	return slices.Equal(argv[1:1+len(sub)], sub)
}

// flagValue returns the value of --name (as "--name v" or "--name=v").
func flagValue(argv []string, name string) (string, bool) {
	for i, a := range argv {
		if a == "--"+name && i+1 < len(argv) {
			return argv[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// findInstanceManager picks the `longhorn instance-manager` process: the
// one in inCgroup when that is known, else the one whose --listen address
// is on podIP.
func findInstanceManager(procs []proc, inCgroup map[int]bool, podIP string) (int, error) {
	var found []int
	for _, p := range procs {
		if !isLonghorn(p.Argv, "instance-manager") {
			continue
		}
		if inCgroup != nil {
			if inCgroup[p.PID] {
				found = append(found, p.PID)
			}
			continue
		}
		if l, ok := flagValue(p.Argv, "listen"); ok && podIP != "" && strings.HasPrefix(l, podIP+":") {
			found = append(found, p.PID)
		}
	}
	found = withoutForkedChildren(procs, found)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return 0, fmt.Errorf("%w: no `longhorn instance-manager` process (pod IP %s) on this machine", ErrNoProcess, podIP)
	}
	return 0, fmt.Errorf("%w: %d instance-manager processes match (pids %v)", ErrNoProcess, len(found), found)
}

// findInstance returns the PID of the child of imPID running
// `longhorn engine replica|controller` with --<flag> name (flag is
// replica-instance-name or engine-instance-name).
func findInstance(procs []proc, imPID int, kind, flag, name string) (int, error) {
	for _, p := range procs {
		if p.PPID != imPID || !isLonghorn(p.Argv, "engine", kind) {
			continue
		}
		if v, ok := flagValue(p.Argv, flag); ok && v == name {
			return p.PID, nil
		}
	}
	return 0, fmt.Errorf("%w: no `longhorn engine %s --%s %s` under instance manager pid %d", ErrNoProcess, kind, flag, name, imPID)
}

// KillReplica kills the OS process of replica name with SIGKILL on its node
// (as a crash would) and waits until it is gone. It returns the PID killed.
func (c *Cluster) KillReplica(ctx context.Context, name string) (int, error) {
	r, err := c.LH.LonghornV1beta2().Replicas(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("replica %s: %w", name, err)
	}
	return c.killInstance(ctx, r.Spec.NodeID, "replica", "replica-instance-name", name)
}

// KillEngine kills the OS process of engine name with SIGKILL on its node
// and waits until it is gone. It returns the PID killed.
func (c *Cluster) KillEngine(ctx context.Context, name string) (int, error) {
	e, err := c.LH.LonghornV1beta2().Engines(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("engine %s: %w", name, err)
	}
	return c.killInstance(ctx, e.Spec.NodeID, "controller", "engine-instance-name", name)
}

func (c *Cluster) killInstance(ctx context.Context, node, kind, flag, name string) (int, error) {
	im, err := c.InstanceManagerPID(ctx, node)
	if err != nil {
		return 0, err
	}
	procs, err := readProcs()
	if err != nil {
		return 0, err
	}
	pid, err := findInstance(procs, im, kind, flag, name)
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", node, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return pid, fmt.Errorf("kill -9 %d (%s): %w", pid, name, err)
	}
	err = poll(ctx, 10*time.Second, 50*time.Millisecond, func(context.Context) (bool, string, error) {
		return !procstat.Alive(pid), fmt.Sprintf("pid %d still alive", pid), nil
	})
	return pid, err
}

// withoutForkedChildren drops the pids whose parent is also in pids: a
// child the instance manager has forked but not yet exec'd shows its
// parent's argv for a moment (seen in e2e: "2 instance-manager processes
// match" while replicas were being created).
func withoutForkedChildren(procs []proc, pids []int) []int {
	in := map[int]bool{}
	for _, p := range pids {
		in[p] = true
	}
	var out []int
	for _, p := range procs {
		if in[p.PID] && !in[p.PPID] {
			out = append(out, p.PID)
		}
	}
	return out
}

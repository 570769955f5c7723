package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Down removes everything the cluster made: every process (node agents and
// their pods; kube-proxies, kubelets, containerd, its shims and
// containers; control plane), mounts (the nodes' mount namespace files
// among them) and loop devices backed by files under the state directory,
// the node namespaces (with the iptables rules kube-proxy made in them),
// veths, bridge, service and pod routes, the cgroups (v2 and v1), and the
// state directory except logs/. It works from
// the state file, or from c when there is none; missing pieces are skipped.
func Down(c Config, out Printf) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if st, err := LoadState(c.StateDir); err == nil {
		c = st.Config
		stopAll(&c, st, out)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	} else {
		stopAll(&c, &State{Config: c, Procs: map[string]Proc{}}, out)
	}
	var errs []error
	if n, err := detachLoops(c.StateDir); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		out("loop devices: detached %d", n)
	}
	if n, err := unmountUnder(c.StateDir); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		out("mounts: unmounted %d under %s", n, c.StateDir)
	}
	if err := TeardownNetwork(&c); err != nil {
		errs = append(errs, err)
	} else {
		out("network: removed bridge %s and %d node namespaces", c.Bridge(), c.Nodes)
	}
	if cg := clusterCgroup(&c); cg != nil {
		if err := cg.Remove(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if n, err := removeV1Cgroups(c.CgroupName(), 10*time.Second); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		out("cgroups: removed %d cgroup v1 directories of %s", n, c.CgroupName())
	}
	if err := removeState(c.StateDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// stopAll stops node agents (they stop their pods), kube-proxies and
// kubelets, then containerd, then the control plane, then kills whatever
// is left in the cluster's cgroup (container shims and processes).
func stopAll(c *Config, st *State, out Printf) {
	var names []string
	for _, prefix := range []string{"agent/", kindKubeProxy + "/", kindKubelet + "/", kindContainerd + "/"} {
		var group []string
		for n := range st.Procs {
			if strings.HasPrefix(n, prefix) {
				group = append(group, n)
			}
		}
		sort.Strings(group)
		names = append(names, group...)
	}
	names = append(names, compKCM, compScheduler, compAPIServer, compEtcd)
	for _, n := range names {
		p, ok := st.Procs[n]
		if ok && p.Alive() {
			stopProc(p, 15*time.Second)
			out("%-24s stopped (pid %d)", n, p.PID)
		}
	}
	if cg := clusterCgroup(c); cg != nil {
		if pids, _ := cg.Procs(); len(pids) > 0 {
			out("cgroup %s: killing %d leftover processes (container shims and containers)", cg.Path, len(pids))
			if err := cg.Kill(10 * time.Second); err != nil {
				out("warning: %v", err)
			}
		}
	}
}

// countLoops counts loop devices whose backing file is under dir.
func countLoops(dir string) (int, error) { return loopsUnder(dir, false) }

// detachLoops detaches loop devices whose backing file is under dir.
func detachLoops(dir string) (int, error) { return loopsUnder(dir, true) }

func loopsUnder(dir string, detach bool) (int, error) {
	b, err := exec.Command("losetup", "--json", "--list").Output()
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return 0, nil // no loop devices (losetup prints nothing)
	}
	var l struct {
		Loops []struct {
			Name     string `json:"name"`
			BackFile string `json:"back-file"`
		} `json:"loopdevices"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return 0, fmt.Errorf("losetup --json: %w", err)
	}
	n := 0
	var errs []error
	for _, d := range l.Loops {
		if under(strings.TrimSuffix(d.BackFile, " (deleted)"), dir) {
			if !detach {
				n++
				continue
			}
			if out, err := exec.Command("losetup", "-d", d.Name).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("losetup -d %s: %v: %s", d.Name, err, out))
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

// unmountUnder unmounts (lazily, deepest first) every mount of the root
// mount namespace under dir.
func unmountUnder(dir string) (int, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 5 && under(fs[4], dir) {
			points = append(points, fs[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("umount %s: %w", p, err))
		}
	}
	return len(points), errors.Join(errs...)
}

func under(p, dir string) bool {
	dir = filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// removeState removes the state directory's contents except logs/.
func removeState(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if e.Name() == "logs" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

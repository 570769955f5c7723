package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Leftovers lists what of cluster c still exists on this machine after
// Down: processes of its cgroup (containers, shims, daemons), live
// processes it recorded, network namespaces, the bridge, routes of its
// service and pod ranges, mounts under its state directory (mount
// namespace files among them), cgroup v1 and v2 directories, and loop
// devices backed by files under the state directory. An empty list means
// Down removed everything.
func Leftovers(c Config) []string {
	var out []string
	if st, err := LoadState(c.StateDir); err == nil {
		for name, p := range st.Procs {
			if p.Alive() {
				out = append(out, fmt.Sprintf("process %s (pid %d)", name, p.PID))
			}
		}
	}
	if cg := clusterCgroup(&c); cg != nil && exists(cg.Path) {
		pids, _ := cg.Procs()
		out = append(out, fmt.Sprintf("cgroup %s (%d processes)", cg.Path, len(pids)))
	}
	for _, mnt := range v1Hierarchies() {
		if d := filepath.Join(mnt, c.CgroupName()); exists(d) {
			out = append(out, "cgroup v1 "+d)
		}
	}
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), c.Name+"-node-") {
			out = append(out, "netns "+e.Name())
		}
	}
	for _, br := range []string{c.Bridge(), c.StorageBridge()} {
		if linkExists(br) {
			out = append(out, "bridge "+br)
		}
	}
	for _, l := range linkNames(c.Name + "sn") {
		out = append(out, "link "+l)
	}
	out = append(out, leftoverRoutes(c)...)
	out = append(out, leftoverMounts(c)...)
	if n, _ := countLoops(c.StateDir); n > 0 {
		out = append(out, fmt.Sprintf("%d loop devices backed by files under %s", n, c.StateDir))
	}
	return out
}

// leftoverRoutes lists the routes of the cluster's service and pod CIDRs.
func leftoverRoutes(c Config) []string {
	var out []string
	r, _ := ip("route", "show")
	for _, line := range strings.Split(r, "\n") {
		if line != "" && (strings.Contains(line, c.ServiceCIDR.String()) || c.PodCIDR.IsValid() && strings.Contains(line, c.PodCIDR.String())) {
			out = append(out, "route "+strings.TrimSpace(line))
		}
	}
	return out
}

// leftoverMounts lists the mounts under the cluster's state directory.
func leftoverMounts(c Config) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 5 && under(fs[4], c.StateDir) {
			out = append(out, "mount "+fs[4])
		}
	}
	return out
}

package cgroup

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// v1Controllers are the cgroup v1 hierarchies a process group is made in.
var v1Controllers = []string{"cpu", "memory", "blkio"}

// v2Controllers are the cgroup v2 controllers a process group uses.
var v2Controllers = []string{"cpu", "memory", "io"}

// Layout is where the calling process's control groups are: on cgroup v1 one
// directory per controller hierarchy, on cgroup v2 one directory.
type Layout struct {
	// Version is 1 or 2.
	Version int
	// V1 maps a controller ("cpu", "memory", "blkio") to the caller's cgroup
	// directory in that hierarchy; only mounted ones are present.
	V1 map[string]string
	// V2 is the caller's cgroup directory in the unified hierarchy.
	V2 string
}

type mount struct {
	root, point, fstype string
	opts                []string
}

// parseMountinfo returns the cgroup and cgroup2 mounts of a
// /proc/self/mountinfo text, parsed with github.com/moby/sys/mountinfo
// ("30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup
// rw,cpu": root, mount point, type and super options). A malformed line is
// an error.
func parseMountinfo(b []byte) ([]mount, error) {
	infos, err := mountinfo.GetMountsFromReader(bytes.NewReader(b), mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	out := make([]mount, 0, len(infos))
	for _, in := range infos {
		out = append(out, mount{root: in.Root, point: in.Mountpoint, fstype: in.FSType, opts: strings.Split(in.VFSOptions, ",")})
	}
	return out, nil
}

// parseSelfCgroup maps each controller of a /proc/self/cgroup text to the
// caller's cgroup path; the cgroup v2 entry has the key "".
func parseSelfCgroup(b []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// under joins a mount point and the part of path below the mount's root;
// false when path is not below root.
func under(m mount, path string) (string, bool) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.Join(m.point, rel), true
}

// DetectLayout finds the caller's control groups from a /proc/self/mountinfo
// and a /proc/self/cgroup text; every path is prefixed with root (""
// on a real host, a fake cgroupfs tree in tests). cgroup v1 wins when any of
// the cpu, memory or blkio hierarchies is mounted (a hybrid host's empty
// cgroup2 mount is ignored).
func DetectLayout(mountinfo, selfCgroup []byte, root string) (Layout, error) {
	mounts, err := parseMountinfo(mountinfo)
	if err != nil {
		return Layout{}, err
	}
	self := parseSelfCgroup(selfCgroup)
	l := Layout{Version: 1, V1: map[string]string{}}
	for _, c := range v1Controllers {
		for _, m := range mounts {
			if m.fstype != "cgroup" || !slices.Contains(m.opts, c) {
				continue
			}
			if p, ok := under(m, self[c]); ok && self[c] != "" {
				l.V1[c] = filepath.Join(root, p)
				break
			}
		}
	}
	if len(l.V1) > 0 {
		return l, nil
	}
	for _, m := range mounts {
		if m.fstype != "cgroup2" {
			continue
		}
		if p, ok := under(m, self[""]); ok && self[""] != "" {
			return Layout{Version: 2, V2: filepath.Join(root, p)}, nil
		}
	}
	return Layout{}, fmt.Errorf("no cgroup v1 cpu, memory or blkio hierarchy and no cgroup2 mount holds this process")
}

// DetectHostLayout is DetectLayout on the running process.
func DetectHostLayout() (Layout, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Layout{}, err
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Layout{}, err
	}
	return DetectLayout(mi, cg, "")
}

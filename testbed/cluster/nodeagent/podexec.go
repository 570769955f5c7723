package nodeagent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExecSpec is what pod-exec needs to turn itself into a container process:
// written by the agent as JSON, read by RunPodExec.
type ExecSpec struct {
	Argv   []string `json:"argv"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir,omitempty"`
	Mounts []Mount  `json:"mounts,omitempty"`
}

// RunPodExec is the body of `lhcluster pod-exec SPEC`. It runs in a mount
// namespace of its own that unshare(1) copied from the node's with
// propagation unchanged; it makes every mount a slave of the node's
// (Bidirectional targets stay shared), bind-mounts the container's volumes,
// changes to the working directory and execs the container command. It
// returns only on error.
func RunPodExec(specPath string) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var spec ExecSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("pod-exec: %s: %w", specPath, err)
	}
	if len(spec.Argv) == 0 {
		return errors.New("pod-exec: empty argv")
	}
	if err := isolateMounts(spec.Mounts); err != nil {
		return err
	}
	if err := bindMounts(spec.Mounts); err != nil {
		return err
	}
	dir := spec.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("pod-exec: workingDir: %w", err)
	}
	return fmt.Errorf("pod-exec: exec %s: %w", spec.Argv[0], syscall.Exec(spec.Argv[0], spec.Argv, spec.Env))
}

// isolateMounts makes every mount point a slave (receives the node's mount
// events, sends none), except mounts at or under a Bidirectional target.
func isolateMounts(ms []Mount) error {
	var shared []string
	for _, m := range ms {
		if m.Bidirectional {
			shared = append(shared, m.Target)
		}
	}
	points, err := mountPoints()
	if err != nil {
		return err
	}
	for _, p := range points {
		if under(p, shared) {
			continue
		}
		if err := unix.Mount("", p, "", unix.MS_SLAVE, ""); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("pod-exec: make %s slave: %w", p, err)
		}
	}
	return nil
}

func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// mountPoints lists this mount namespace's mount points.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 5 {
			out = append(out, unescapeMountinfo(fs[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMountinfo decodes the octal escapes (\040 for space) of mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// bindMounts binds each Source on its Target, parents first, creating the
// target (directory, or empty file for a file source) when missing.
func bindMounts(ms []Mount) error {
	sorted := append([]Mount(nil), ms...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return strings.Count(sorted[i].Target, "/") < strings.Count(sorted[j].Target, "/")
	})
	for _, m := range sorted {
		if m.Source == m.Target {
			continue
		}
		st, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("pod-exec: mount source: %w", err)
		}
		if err := ensureTarget(m.Target, st.IsDir()); err != nil {
			return err
		}
		if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("pod-exec: bind %s on %s: %w", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := unix.Mount("", m.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("pod-exec: read-only %s: %w", m.Target, err)
			}
		}
	}
	return nil
}

func ensureTarget(target string, dir bool) error {
	if dir {
		return os.MkdirAll(target, 0o755)
	}
	if _, err := os.Stat(target); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// SetupNodeMounts is run by the node agent at start, inside the node's
// private mount namespace (the cluster tool starts it under unshare): it bind-mounts
// each Source on its Target (/var/lib/longhorn from the node's directory)
// and makes every mount shared within the node, so pods see each other's
// Bidirectional mounts. hostMountNS is the host's mount namespace
// ("mnt:[N]", recorded by the cluster tool); it refuses to run there.
func SetupNodeMounts(ms []Mount, hostMountNS string) error {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("node mounts: %w", err)
	}
	if hostMountNS == "" {
		hostMountNS, _ = os.Readlink("/proc/1/ns/mnt")
	}
	if hostMountNS == "" || self == hostMountNS {
		return fmt.Errorf("node mounts: the agent runs in the host mount namespace (%s) or it is unknown; start it with `unshare --mount` (refusing to mount over host paths)", self)
	}
	if err := bindMounts(ms); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("node mounts: make / rshared: %w", err)
	}
	return nil
}

package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/longhorn-go/longhorn/internal/procstat"
	"github.com/longhorn-go/longhorn/testbed/cluster/nodeagent"
)

// Proc identifies a daemon the cluster started. Start (the process start
// time in clock ticks since boot, /proc/PID/stat field 22) guards against
// pid reuse.
type Proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Log   string `json:"log"`
}

// State is what `up` records in <StateDir>/state.json for status and down.
type State struct {
	Config Config          `json:"config"`
	Procs  map[string]Proc `json:"procs"`
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// LoadState reads the state file; a missing file is fs.ErrNotExist.
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(statePath(dir))
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("cluster state %s: %w", statePath(dir), err)
	}
	if st.Procs == nil {
		st.Procs = map[string]Proc{}
	}
	return &st, nil
}

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(s.Config.StateDir) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(s.Config.StateDir))
}

// Alive reports whether the recorded process still runs (not a zombie,
// same start time).
func (p Proc) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	st, err := procstat.Read(p.PID)
	return err == nil && st.StartTime == p.Start && st.State != "Z"
}

// startDaemon starts argv detached (own session, stdin /dev/null, output
// appended to logPath) inside cg when given (CLONE_INTO_CGROUP), and
// returns its Proc. The caller does not wait for it.
func startDaemon(argv []string, logPath string, cg *nodeagent.Cgroup, env []string) (Proc, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return Proc{}, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Proc{}, err
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cg != nil {
		fd, err := cg.Open()
		if err != nil {
			return Proc{}, err
		}
		defer fd.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(fd.Fd())
	}
	fmt.Fprintf(logf, "=== %s start: %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		return Proc{}, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := Proc{PID: cmd.Process.Pid, Log: logPath}
	if st, err := procstat.Read(p.PID); err == nil {
		p.Start = st.StartTime
	}
	// Reap it if it dies while we run; afterwards init adopts it.
	go func() { _, _ = cmd.Process.Wait() }()
	return p, nil
}

// stopProc sends SIGTERM, waits up to grace, then SIGKILL.
func stopProc(p Proc, grace time.Duration) {
	if !p.Alive() {
		return
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.Alive() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	for i := 0; i < 100 && p.Alive(); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// clusterCgroup is the cgroup holding everything of the cluster, or nil
// without cgroup2.
func clusterCgroup(c *Config) *nodeagent.Cgroup {
	root := nodeagent.Cgroup2Root()
	if root == "" {
		return nil
	}
	return &nodeagent.Cgroup{Path: filepath.Join(root, c.CgroupName())}
}

// subCgroup returns a fresh cgroup under the cluster's for a process about
// to start (nil without cgroup2). An existing one without processes is
// removed first: a cgroup that was ever killed kills every process later
// placed in it (see nodeagent.Cgroup.Kill).
func subCgroup(c *Config, parts ...string) (*nodeagent.Cgroup, error) {
	top := clusterCgroup(c)
	if top == nil {
		return nil, nil
	}
	cg := &nodeagent.Cgroup{Path: filepath.Join(append([]string{top.Path}, parts...)...)}
	if exists(cg.Path) {
		if pids, _ := cg.Procs(); len(pids) == 0 {
			if err := cg.Remove(10 * time.Second); err != nil {
				return nil, err
			}
		}
	}
	return nodeagent.NewCgroup(cg.Path)
}

// freshClusterCgroup removes the cluster's cgroup tree when nothing of the
// cluster runs (left over by an interrupted down).
func freshClusterCgroup(c *Config) error {
	top := clusterCgroup(c)
	if top == nil || !exists(top.Path) {
		return nil
	}
	return top.Remove(10 * time.Second)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/longhorn-go/longhorn/hack/bench/internal/benchproc"
)

// Target is one row of the benchmark: something fio can drive. Rows register
// themselves from init functions (targets_*.go), so another frontend (iSCSI:
// a tgtd baseline and our iSCSI target) adds rows in its own file without
// editing the harness.
type Target struct {
	// Key is the short id used by -targets and in the tables: "0", "a", "b", ...
	Key string
	// Order sorts rows in the tables (ascending).
	Order int
	// Name describes the row, e.g. "nbdkit file (peer baseline)".
	Name string
	// Baseline is the key of the row this one is compared with ("a" for NBD
	// rows; an iSCSI row would name the tgtd row). Empty: only compared to "0".
	Baseline string
	// MinRead and MinWrite are the acceptance ratios to Baseline for read and
	// write jobs (0: no check).
	MinRead, MinWrite float64
	// Start prepares and starts the target; a returned error wrapping
	// errUnavailable skips the row with its reason instead of failing the run.
	Start func(ctx context.Context, env *Env) (*Endpoint, error)
	// Optional rows run only when named in -targets (e.g. the A/B rows of
	// -longhorn-alt).
	Optional bool
}

// Endpoint tells fio how to reach a started target.
type Endpoint struct {
	// FioBinary is the fio to run ("" = fio from PATH; an iSCSI row may need
	// a fio built with the libiscsi engine).
	FioBinary string
	// FioArgs select the engine and the target, e.g. --ioengine=nbd --uri=...
	FioArgs []string
	// Processes are the server processes (for -syscalls); Stop ends them.
	Processes []Process
	// Pids are server processes without a name (reported as "pid N").
	Pids []int
	// Data are the files or directories holding the row's data, read before
	// each job (warm) so every row starts with its data cached.
	Data []string
	Stop func()
}

// processes returns Processes plus the unnamed Pids.
func (e *Endpoint) processes() []Process {
	out := append([]Process(nil), e.Processes...)
	for _, p := range e.Pids {
		out = append(out, Process{Name: fmt.Sprintf("pid %d", p), Pid: p})
	}
	return out
}

// Process names one server process of a row.
type Process struct {
	Name string // e.g. "controller", "replica0"
	Pid  int
}

// Env is what a target gets to start: a private directory on the benchmark
// disk, the size of the benchmarked range, the longhorn binary, and a process
// group that is torn down at exit.
type Env struct {
	Dir      string
	Size     int64
	Longhorn string
	// LonghornAlt is a second longhorn binary for A/B rows (-longhorn-alt).
	LonghornAlt string
	// Tag prefixes the names of the processes a row starts ("alt-").
	Tag   string
	Procs *benchproc.Procs
	// ReplicaFlags and ControllerFlags are appended to the engine commands
	// (-replica-flags, -controller-flags), for experiments.
	ReplicaFlags, ControllerFlags []string
	// RevisionCounter runs the engine rows with the revision counter on
	// (-revision-counter). Off by default: Longhorn's product default for
	// v1 volumes is disable-revision-counter = true.
	RevisionCounter bool
}

// engineFlags returns the flags every engine process of a row gets before
// extra: --disable-revision-counter unless RevisionCounter is set (the
// replica and the controller must agree).
func (e *Env) engineFlags(extra []string) []string {
	var out []string
	if !e.RevisionCounter {
		out = append(out, "--disable-revision-counter")
	}
	return append(out, extra...)
}

// errUnavailable marks a row that cannot run here (tool or engine missing).
var errUnavailable = errors.New("unavailable")

var registry = map[string]Target{}

// registerTarget adds a row; a duplicate key is a programming error.
func registerTarget(t Target) {
	if _, dup := registry[t.Key]; dup {
		panic("duplicate benchmark target " + t.Key)
	}
	registry[t.Key] = t
}

// sortedTargets returns the registered rows in table order.
func sortedTargets() []Target {
	out := make([]Target, 0, len(registry))
	for _, t := range registry {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out
}

func init() {
	registerTarget(Target{Key: "0", Order: 0, Name: "fio libaio direct=1 on a preallocated file (physical limit)", Start: startDirect})
	registerTarget(Target{Key: "a", Order: 10, Name: "nbdkit file over a unix socket (peer baseline)", Start: startNbdkit})
}

// needTool returns the path of a program or an errUnavailable error.
func needTool(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s not in PATH", errUnavailable, name)
	}
	return p, nil
}

// preallocate creates a file of size bytes with its blocks allocated.
func preallocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		return fmt.Errorf("fallocate %s: %w", path, err)
	}
	return nil
}

// startDirect is row (0): fio with libaio and O_DIRECT on a file on the same disk.
func startDirect(_ context.Context, env *Env) (*Endpoint, error) {
	path := filepath.Join(env.Dir, "direct.img")
	if err := preallocate(path, env.Size); err != nil {
		return nil, err
	}
	return &Endpoint{
		FioArgs: []string{"--ioengine=libaio", "--direct=1", "--filename=" + path},
		Stop:    func() { _ = os.Remove(path) },
	}, nil
}

// startNbdkit is row (a): nbdkit's file plugin serving a preallocated file.
func startNbdkit(ctx context.Context, env *Env) (*Endpoint, error) {
	bin, err := needTool("nbdkit")
	if err != nil {
		return nil, err
	}
	img := filepath.Join(env.Dir, "nbdkit.img")
	if err := preallocate(img, env.Size); err != nil {
		return nil, err
	}
	sock := filepath.Join(env.Dir, "nbdkit.sock")
	p, err := env.Procs.Start("nbdkit", nil, bin, "-f", "--exit-with-parent", "--unix", sock, "file", img)
	if err != nil {
		return nil, err
	}
	uri := "nbd+unix:///?socket=" + sock
	if err := benchproc.WaitNBD(ctx, uri, 30*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return &Endpoint{
		FioArgs:   []string{"--ioengine=nbd", "--uri=" + uri},
		Processes: []Process{{"nbdkit", p.Pid()}},
		Data:      []string{img},
		Stop:      func() { p.Stop(); _ = os.Remove(img) },
	}, nil
}

// freePortRange returns the first of n consecutive TCP ports on 127.0.0.1
// that were free a moment ago.
func freePortRange(n int) (int, error) {
	for attempt := 0; attempt < 50; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		base := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if base+n > 65535 {
			continue
		}
		ok := true
		var ls []net.Listener
		for i := 0; i < n && ok; i++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			ok = err == nil
			if ok {
				ls = append(ls, l)
			}
		}
		for _, l := range ls {
			_ = l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports", n)
}

// waitTCP waits until addr accepts TCP connections.
func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not listening after %v", addr, timeout)
}

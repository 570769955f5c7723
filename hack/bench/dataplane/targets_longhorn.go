package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/nbd"

	"github.com/longhorn-go/longhorn/hack/bench/internal/benchproc"
)

// Rows for this project's data path:
//
//	(f) our NBD frontend in-process over a plain file: the frontend's own cost,
//	    compared with nbdkit doing the same job;
//	(b) the engine with one replica, (c) with three, through the NBD frontend.
func init() {
	registerTarget(Target{Key: "f", Order: 20, Name: "longhorn NBD frontend over a plain file (no engine)",
		Baseline: "a", MinRead: 0.7, MinWrite: 0.7, Start: startFrontendFile})
	registerTarget(Target{Key: "b", Order: 30, Name: "longhorn engine, 1 replica, NBD frontend",
		Baseline: "a", MinRead: 0.7, MinWrite: 0.7, Start: engineStarter(1)})
	registerTarget(Target{Key: "c", Order: 40, Name: "longhorn engine, 3 replicas, NBD frontend",
		Baseline: "a", MinRead: 0.5, MinWrite: 0.3, Start: engineStarter(3)})
	// A/B rows: (b) and (c) with the -longhorn-alt binary, measured in the
	// same run, so a change can be judged against the same machine load.
	registerTarget(Target{Key: "B", Order: 31, Name: "(b) with the -longhorn-alt binary",
		Baseline: "a", MinRead: 0.7, MinWrite: 0.7, Start: altEngine(1), Optional: true})
	registerTarget(Target{Key: "C", Order: 41, Name: "(c) with the -longhorn-alt binary",
		Baseline: "a", MinRead: 0.5, MinWrite: 0.3, Start: altEngine(3), Optional: true})
}

// altEngine is engineStarter(n) with the -longhorn-alt binary.
func altEngine(n int) func(context.Context, *Env) (*Endpoint, error) {
	return withAlt(engineStarter(n))
}

// withAlt runs start with the -longhorn-alt binary in a directory of its own.
func withAlt(start func(context.Context, *Env) (*Endpoint, error)) func(context.Context, *Env) (*Endpoint, error) {
	return func(ctx context.Context, env *Env) (*Endpoint, error) {
		if env.LonghornAlt == "" {
			return nil, fmt.Errorf("%w: no -longhorn-alt binary", errUnavailable)
		}
		alt := *env
		alt.Longhorn = env.LonghornAlt
		alt.Tag = "alt-"
		alt.Dir = filepath.Join(env.Dir, "alt")
		if err := os.MkdirAll(alt.Dir, 0o755); err != nil {
			return nil, err
		}
		return start(ctx, &alt)
	}
}

// fileBackend is a frontend.Backend on one preallocated file: pread, pwrite,
// hole punching and fdatasync, what a single local replica does at best.
type fileBackend struct {
	f    *os.File
	size int64
}

func (b *fileBackend) ReadAt(p []byte, off int64) (int, error)  { return b.f.ReadAt(p, off) }
func (b *fileBackend) WriteAt(p []byte, off int64) (int, error) { return b.f.WriteAt(p, off) }
func (b *fileBackend) UnmapAt(length uint32, off int64) (int, error) {
	const punchHole = 0x02 | 0x01 // FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
	if err := syscall.Fallocate(int(b.f.Fd()), punchHole, off, int64(length)); err != nil {
		return 0, err
	}
	return int(length), nil
}
func (b *fileBackend) Flush() error { return syscall.Fdatasync(int(b.f.Fd())) }
func (b *fileBackend) Size() int64  { return b.size }

var _ frontend.Backend = (*fileBackend)(nil)

// startFrontendFile is row (f): the NBD frontend of this repository, served
// from the harness process itself over a plain file.
func startFrontendFile(ctx context.Context, env *Env) (*Endpoint, error) {
	img := filepath.Join(env.Dir, "frontend.img")
	if err := preallocate(img, env.Size); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(env.Dir, "frontend.sock")
	srv, err := nbd.New(nbd.Config{Listen: "unix:" + sock})
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := srv.Startup(ctx, "vol", env.Size, &fileBackend{f: f, size: env.Size}); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &Endpoint{
		FioArgs:   []string{"--ioengine=nbd", "--uri=" + srv.Endpoint()},
		Processes: []Process{{"harness", os.Getpid()}},
		Data:      []string{img},
		Stop: func() {
			_ = srv.Shutdown()
			_ = f.Close()
			_ = os.Remove(img)
		},
	}, nil
}

// engineAvailable checks that the longhorn binary has the engine commands.
func engineAvailable(ctx context.Context, longhorn string) error {
	if longhorn == "" {
		return fmt.Errorf("%w: no longhorn binary (-longhorn)", errUnavailable)
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, sub := range []string{"replica", "controller"} {
		if out, err := exec.CommandContext(c, longhorn, "engine", sub, "--help").CombinedOutput(); err != nil {
			return fmt.Errorf("%w: `longhorn engine %s` not in this binary: %v %s", errUnavailable, sub, err, firstLine(out))
		}
	}
	return nil
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// replicaPorts is how many consecutive ports a replica gets (control, data,
// sync agent, transfer ports).
const replicaPorts = 10

// engineStarter returns the Start function of an engine row with n replicas:
// n `longhorn engine replica` processes and one `longhorn engine controller`
// with the NBD frontend on a private unix socket.
func engineStarter(n int) func(context.Context, *Env) (*Endpoint, error) {
	return func(ctx context.Context, env *Env) (*Endpoint, error) {
		if err := engineAvailable(ctx, env.Longhorn); err != nil {
			return nil, err
		}
		size := strconv.FormatInt(env.Size, 10)
		var started []*benchproc.Proc
		var dirs []string
		stop := func() {
			for i := len(started) - 1; i >= 0; i-- {
				started[i].Stop()
			}
		}
		ctlArgs := []string{"engine", "controller", "vol", "--size", size, "--frontend", "nbd"}
		for i := range n {
			dir := filepath.Join(env.Dir, fmt.Sprintf("engine%d-replica%d", n, i))
			dirs = append(dirs, dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			port, err := freePortRange(replicaPorts)
			if err != nil {
				return nil, err
			}
			addr := "127.0.0.1:" + strconv.Itoa(port)
			args := append([]string{"engine", "replica", dir, "--size", size, "--listen", addr}, env.engineFlags(env.ReplicaFlags)...)
			p, err := env.Procs.Start(fmt.Sprintf("%sengine%d-replica%d", env.Tag, n, i), nil, env.Longhorn, args...)
			if err != nil {
				stop()
				return nil, err
			}
			started = append(started, p)
			if err := waitTCP(ctx, "127.0.0.1:"+strconv.Itoa(port+1), 30*time.Second); err != nil {
				stop()
				return nil, fmt.Errorf("replica %d: %w (see %s.log)", i, err, p.Name)
			}
			ctlArgs = append(ctlArgs, "--replica", "tcp://"+addr)
		}
		ctlPort, err := freePortRange(1)
		if err != nil {
			stop()
			return nil, err
		}
		sock := filepath.Join(env.Dir, fmt.Sprintf("engine%d.sock", n))
		ctlArgs = append(ctlArgs, "--nbd-listen", "unix:"+sock, "--listen", "127.0.0.1:"+strconv.Itoa(ctlPort))
		ctlArgs = append(ctlArgs, env.engineFlags(env.ControllerFlags)...)
		ctl, err := env.Procs.Start(fmt.Sprintf("%sengine%d-controller", env.Tag, n), nil, env.Longhorn, ctlArgs...)
		if err != nil {
			stop()
			return nil, err
		}
		started = append(started, ctl)
		uri := "nbd+unix:///vol?socket=" + sock
		if err := benchproc.WaitNBD(ctx, uri, 60*time.Second); err != nil {
			stop()
			return nil, fmt.Errorf("controller: %w (see %s.log)", err, ctl.Name)
		}
		ps := make([]Process, len(started))
		for i, p := range started {
			ps[i] = Process{Name: strings.TrimPrefix(p.Name, fmt.Sprintf("%sengine%d-", env.Tag, n)), Pid: p.Pid()}
		}
		return &Endpoint{FioArgs: []string{"--ioengine=nbd", "--uri=" + uri}, Processes: ps, Stop: stop, Data: dirs}, nil
	}
}

// Package benchproc starts and stops the server processes of the
// benchmarks in hack/bench (nbdkit, tgtd, the product's engine and replica
// processes): each in its own session with its output in a log file, every
// one stopped on exit, on error and on Ctrl-C.
package benchproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Procs tracks the processes started with Start; Dir holds their logs.
type Procs struct {
	Dir string
	mu  sync.Mutex
	all []*Proc
}

// Proc is one started process in its own session (setsid, SIGKILL when the
// harness dies), its output in Dir/<Name>.log.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// Start runs bin with args and the extra environment variables env (added
// to the harness's) in a new session. Errors: the log file's, exec's.
func (ps *Procs) Start(name string, env []string, bin string, args ...string) (*Proc, error) {
	log, err := os.Create(filepath.Join(ps.Dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = log.Close(); close(p.done) }()
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p, nil
}

// Pid is the process ID.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after 10 s, and
// waits for the process to end. Safe to call more than once.
func (p *Proc) Stop() {
	p.once.Do(func() {
		pgid := p.Cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
	})
}

// StopAll stops every process started so far, all at once.
func (ps *Procs) StopAll() {
	ps.mu.Lock()
	all := ps.all
	ps.all = nil
	ps.mu.Unlock()
	StopEach(all)
}

// StopEach stops ps concurrently (50 volumes stop in seconds, not minutes).
func StopEach(ps []*Proc) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop() }()
	}
	wg.Wait()
}

// WaitNBD polls the NBD server at uri with nbdinfo until it answers.
// Errors: ctx's, or the last nbdinfo output after timeout.
func WaitNBD(ctx context.Context, uri string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last []byte
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := exec.CommandContext(c, "nbdinfo", "--size", uri).CombinedOutput()
		cancel()
		if err == nil {
			return nil
		}
		last = out
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("NBD server %s not ready after %v: %s", uri, timeout, last)
}

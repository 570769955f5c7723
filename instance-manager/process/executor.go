package process

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Command is one process to start.
type Command struct {
	// Binary is a path or a name looked up in PATH.
	Binary string
	Args   []string
	// Output receives stdout and stderr.
	Output io.Writer
}

// Running is a started OS process.
type Running interface {
	// PID is the OS process id.
	PID() int
	// Signal sends sig; it returns nil when the process already exited.
	Signal(sig syscall.Signal) error
	// Wait blocks until the process exited and its output was copied; it
	// returns nil for exit status 0, else an error describing the exit.
	// It is called exactly once.
	Wait() error
}

// Executor starts processes. The Manager uses OSExecutor; tests inject fakes.
type Executor interface {
	// Start starts cmd. An error wrapping exec.ErrNotFound, fs.ErrNotExist or
	// fs.ErrPermission means the binary cannot be run (an invalid request).
	Start(cmd Command) (Running, error)
}

// HealthChecker probes whether a process serves its ports.
type HealthChecker interface {
	// Ready reports whether every address accepts a TCP connection now. It must
	// return within the context's deadline.
	Ready(ctx context.Context, addrs []string) bool
}

// OSExecutor starts real processes. Each child gets its own process group and
// is killed by the kernel when the instance manager dies (PR_SET_PDEATHSIG), so
// a crashed instance manager leaves no orphans.
type OSExecutor struct {
	// WaitDelay bounds how long Wait keeps copying output after the process
	// exited (a grandchild may hold the pipe). Zero means 2 s.
	WaitDelay time.Duration
}

// Start implements Executor.
func (e OSExecutor) Start(c Command) (Running, error) {
	cmd := exec.Command(c.Binary, c.Args...)
	cmd.Stdout, cmd.Stderr = c.Output, c.Output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = e.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &osRunning{cmd: cmd}, nil
}

type osRunning struct {
	cmd    *exec.Cmd
	exited atomic.Bool
}

func (r *osRunning) PID() int { return r.cmd.Process.Pid }

func (r *osRunning) Signal(sig syscall.Signal) error {
	if r.exited.Load() {
		return nil
	}
	// os.Process signals through a pidfd, so a reaped pid is never hit.
	err := r.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	if sig == syscall.SIGKILL && !r.exited.Load() {
		// Take down anything the process started in its group as well.
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}

func (r *osRunning) Wait() error {
	err := r.cmd.Wait()
	r.exited.Store(true)
	return err
}

// TCPHealthChecker is the HealthChecker of real processes: a port is ready
// when a TCP connect to it succeeds.
type TCPHealthChecker struct {
	// DialTimeout bounds each connect; zero means 500 ms.
	DialTimeout time.Duration
}

// Ready implements HealthChecker.
func (h TCPHealthChecker) Ready(ctx context.Context, addrs []string) bool {
	timeout := h.DialTimeout
	if timeout == 0 {
		timeout = 500 * time.Millisecond
	}
	d := net.Dialer{Timeout: timeout}
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", a)
		if err != nil {
			return false
		}
		_ = c.Close()
	}
	return true
}

// HostPortFree reports whether nothing on the host listens on port (it binds
// and closes it on all addresses). Use it as the PortAllocator probe so ports
// held by other programs are skipped.
func HostPortFree(port int32) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(int(port))))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

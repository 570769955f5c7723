package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// procs tracks the processes the harness started, so every one is stopped
// on exit, on error and on Ctrl-C.
type procs struct {
	dir string
	mu  sync.Mutex
	all []*proc
}

// proc is one started process in its own session, output in dir/<name>.log.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// pid is the process ID.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// start runs bin with args and extra environment in a new session.
func (ps *procs) start(name string, env []string, bin string, args ...string) (*proc, error) {
	log, err := os.Create(filepath.Join(ps.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = log.Close(); close(p.done) }()
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p, nil
}

// stop sends SIGTERM to the process group, then SIGKILL after 10 s.
func (p *proc) stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
	})
}

// stopAll stops every process still running, all at once.
func (ps *procs) stopAll() {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.all = nil
	ps.mu.Unlock()
	stopEach(all)
}

// stopEach stops ps concurrently (50 volumes stop in seconds, not minutes).
func stopEach(ps []*proc) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// ports hands out loopback TCP ports that are free now and were not handed
// out before in this run (the processes bind them later). They come from
// below the kernel's ephemeral range (ip_local_port_range starts at 32768
// by default), so outgoing connections do not take them in between.
type ports struct {
	mu   sync.Mutex
	used map[int]bool
	next int
}

// Port range scanned by ports.rangeOf.
const (
	portLow  = 20000
	portHigh = 32000
)

// rangeOf returns the first of n consecutive such ports.
func (pp *ports) rangeOf(n int) (int, error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.used == nil {
		pp.used = map[int]bool{}
		pp.next = portLow + rand.IntN(portHigh-portLow)
	}
	for tried := 0; tried < portHigh-portLow; tried += n {
		base := pp.next
		if pp.next += n; pp.next+n > portHigh {
			pp.next = portLow
		}
		if base+n > portHigh || !pp.free(base, n) {
			continue
		}
		for i := 0; i < n; i++ {
			pp.used[base+i] = true
		}
		return base, nil
	}
	return 0, fmt.Errorf("no %d consecutive free ports in %d-%d", n, portLow, portHigh)
}

// free reports whether base..base+n-1 are unused here and bindable now.
func (pp *ports) free(base, n int) bool {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		if pp.used[base+i] {
			return false
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
		if err != nil {
			return false
		}
		ls = append(ls, l)
	}
	return true
}

// waitTCP waits until addr accepts connections.
func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s not listening after %v", addr, timeout)
}

// waitNBD waits until the NBD server at uri answers (nbdinfo).
func waitNBD(ctx context.Context, uri string, timeout time.Duration) error {
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
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("NBD server %s not ready after %v: %s", uri, timeout, last)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

package process

import (
	"context"
	"fmt"
	"strings"
	"syscall"
)

// ParseSignal maps a terminate signal name ("SIGHUP", "HUP", "SIGTERM",
// "SIGINT", "SIGKILL"; "" = SIGHUP, Longhorn's default for ProcessReplace).
func ParseSignal(s string) (syscall.Signal, error) {
	switch strings.TrimPrefix(strings.ToUpper(s), "SIG") {
	case "", "HUP":
		return syscall.SIGHUP, nil
	case "TERM":
		return syscall.SIGTERM, nil
	case "INT":
		return syscall.SIGINT, nil
	case "KILL":
		return syscall.SIGKILL, nil
	}
	return 0, invalid("terminate_signal %q: want SIGHUP, SIGTERM, SIGINT or SIGKILL", s)
}

// Replace starts a new run of spec.Name with a new spec and new ports, waits
// until it is running, then makes it the visible process and stops the old run
// with sig (its ports are freed when it exited). If the new run fails or ctx
// ends first, the new run is stopped and the old one stays. Errors:
// ErrInvalidArgument, ErrNotFound, ErrFailedPrecondition (already being
// replaced or deleted), ErrPortsExhausted, ErrShuttingDown, ctx's error, or an
// error describing the new run's exit.
func (m *Manager) Replace(ctx context.Context, spec Spec, meta Meta, sig syscall.Signal) (Info, error) {
	if err := ValidateSpec(spec, m.cfg.MaxPortCount); err != nil {
		return Info{}, err
	}
	spec = cloneSpec(spec)
	np, old, err := m.startReplacement(spec, meta)
	if err != nil {
		return Info{}, err
	}
	select {
	case <-np.ready:
	case <-np.exited:
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, np)
	old.replacing = false
	failure := ""
	switch {
	case np.state != StateRunning:
		failure = fmt.Sprintf("new process did not become ready: state %s %s", np.state, np.errMsg)
		if ctx.Err() != nil {
			failure += ": " + ctx.Err().Error()
		}
	case old.deleting || m.procs[spec.Name] != old:
		failure = "the process was deleted during the replace"
	case m.closing:
		failure = ErrShuttingDown.Error()
	}
	if failure != "" {
		m.stopLocked(np, syscall.SIGKILL)
		return Info{}, fmt.Errorf("%w: replace %q: %s", ErrFailedPrecondition, spec.Name, failure)
	}
	np.orphan = false
	old.orphan = true
	m.procs[spec.Name] = np
	select {
	case <-old.exited:
		m.removeLocked(old)
	default:
		m.stopLocked(old, sig)
	}
	m.publishLocked(np.infoLocked())
	return np.infoLocked(), nil
}

// startReplacement starts the new run as an orphan (not visible, its exit not
// reported) and marks the old run as being replaced.
func (m *Manager) startReplacement(spec Spec, meta Meta) (np, old *proc, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return nil, nil, ErrShuttingDown
	}
	old, ok := m.procs[spec.Name]
	if !ok {
		return nil, nil, fmt.Errorf("%w: process %q", ErrNotFound, spec.Name)
	}
	if old.replacing || old.deleting {
		return nil, nil, fmt.Errorf("%w: process %q is being replaced or deleted", ErrFailedPrecondition, spec.Name)
	}
	np, err = m.startLocked(spec, meta)
	if err != nil {
		return nil, nil, err
	}
	np.orphan = true
	old.replacing = true
	m.pending[np] = struct{}{}
	return np, old, nil
}

// Shutdown stops every process (SIGTERM, SIGKILL after the stop timeout),
// refuses new ones, waits until all exited and their ports are free or ctx
// ends, and closes every subscription. It returns ctx's error if processes
// were still running.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closing = true
	for _, p := range m.procs {
		if p.deleting {
			continue
		}
		p.deleting = true
		select {
		case <-p.exited:
			m.removeLocked(p)
		default:
			m.stopLocked(p, syscall.SIGTERM)
			info := p.infoLocked()
			info.Deleted = true
			m.publishLocked(info)
		}
	}
	for np := range m.pending {
		m.stopLocked(np, syscall.SIGTERM)
	}
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.live.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("process manager shutdown: processes still running: %w", ctx.Err())
	}
	m.mu.Lock()
	m.closed = true
	for s := range m.subs {
		m.closeSubLocked(s, false)
	}
	m.mu.Unlock()
	return err
}

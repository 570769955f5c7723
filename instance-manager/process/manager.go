// Package process is the instance manager's process manager: it allocates
// ports, starts engine and replica processes through an injected Executor,
// marks them running once an injected HealthChecker finds their ports open,
// reports every change to watchers, stops them on request, and keeps each
// one's output in a size-capped log file. The gRPC services in
// instance-manager/server are thin layers over Manager.
package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
	"github.com/longhorn-go/longhorn/instance-manager/logfile"
)

// Config configures a Manager. Zero values take the documented defaults.
type Config struct {
	// PortRange is where process ports come from; default DefaultPortRange.
	PortRange PortRange
	// PortProbe reports whether a port is free on the host (see HostPortFree);
	// nil trusts the range to be private.
	PortProbe func(port int32) bool
	// MaxPortCount bounds Spec.PortCount; default DefaultMaxPortCount.
	MaxPortCount int32
	// LogDir holds one log per process, <name>.log; required.
	LogDir string
	// LogMaxSize (bytes) and LogMaxFiles bound each log; defaults from logfile.
	LogMaxSize  int64
	LogMaxFiles int
	// Executor starts processes; default OSExecutor{}.
	Executor Executor
	// HealthChecker decides when a process is running; default TCPHealthChecker{}.
	HealthChecker HealthChecker
	// HealthInterval is the pause between readiness probes; default 100 ms.
	HealthInterval time.Duration
	// StopTimeout is how long a stop signal may take before SIGKILL; default 10 s.
	StopTimeout time.Duration
	// WatchBuffer is how many events a watcher may fall behind before it is
	// dropped (its channel closed with Overflowed set); default 1024.
	WatchBuffer int
	// Logger; default logrus.StandardLogger().
	Logger logrus.FieldLogger
	// OnExit, when set, runs after a process's OS process ended and before
	// the exit is recorded and published, so that what it cleans up (the
	// blockdev frontend's device of a dead engine) is gone before anyone
	// sees the process stopped. It must not call the Manager.
	OnExit func(Info)
	// Cgroups, when set, gives every process its own control group below
	// the instance manager's, with the Spec's Limits. Without it a Spec with
	// limits is refused (ErrFailedPrecondition, CgroupsUnavailable as the reason).
	Cgroups *cgroup.Manager
	// CgroupsUnavailable says why Cgroups is nil (for the refusal message).
	CgroupsUnavailable string
}

func (c *Config) setDefaults() error {
	if c.LogDir == "" {
		return errors.New("process manager: log directory is required")
	}
	if c.PortRange == (PortRange{}) {
		c.PortRange = DefaultPortRange
	}
	if c.PortRange.Start < 1 || c.PortRange.End > 65535 || c.PortRange.Start > c.PortRange.End {
		return fmt.Errorf("process manager: port range %s invalid", c.PortRange)
	}
	if c.MaxPortCount == 0 {
		c.MaxPortCount = DefaultMaxPortCount
	}
	c.MaxPortCount = min(c.MaxPortCount, c.PortRange.Size())
	if c.LogMaxSize == 0 {
		c.LogMaxSize = logfile.DefaultMaxSize
	}
	if c.LogMaxFiles == 0 {
		c.LogMaxFiles = logfile.DefaultMaxFiles
	}
	if c.Executor == nil {
		c.Executor = OSExecutor{}
	}
	if c.HealthChecker == nil {
		c.HealthChecker = TCPHealthChecker{}
	}
	if c.HealthInterval == 0 {
		c.HealthInterval = 100 * time.Millisecond
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 10 * time.Second
	}
	if c.WatchBuffer == 0 {
		c.WatchBuffer = 1024
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	return nil
}

// Manager owns the processes of one instance manager. All methods are safe
// for concurrent use.
type Manager struct {
	cfg Config

	mu      sync.Mutex
	procs   map[string]*proc // the visible process of each name
	ports   *PortAllocator
	pending map[*proc]struct{} // replacement runs not yet visible
	subs    map[*Subscription]struct{}
	closing bool           // Shutdown started: no new processes
	closed  bool           // Shutdown finished: no new subscriptions
	live    sync.WaitGroup // one per started OS process until its ports are released
}

// proc is one run of a process (a replace makes a second run of the same name).
// All fields except the channels' closing are guarded by Manager.mu.
type proc struct {
	spec      Spec
	meta      Meta
	state     State
	errMsg    string
	portStart int32
	portEnd   int32
	uuid      string
	pid       int
	run       Running
	log       *logfile.Writer
	cgroup    *cgroup.Group // nil without Config.Cgroups

	ready  chan struct{} // closed when running
	exited chan struct{} // closed when the OS process exited
	done   chan struct{} // closed to end the health check (stop asked or exited)

	stopAsked bool // a stop signal was sent (done is closed)
	deleting  bool // remove from procs once exited
	replacing bool // a ProcessReplace runs for this name
	orphan    bool // no longer (or never) visible: exit is not reported
}

// NewManager returns a Manager; it creates cfg.LogDir.
func NewManager(cfg Config) (*Manager, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("process manager: log directory: %w", err)
	}
	return &Manager{
		cfg:     cfg,
		procs:   map[string]*proc{},
		pending: map[*proc]struct{}{},
		ports:   NewPortAllocator(cfg.PortRange, cfg.PortProbe),
		subs:    map[*Subscription]struct{}{},
	}, nil
}

// MaxPortCount is the largest PortCount a Spec may ask for.
func (m *Manager) MaxPortCount() int32 { return m.cfg.MaxPortCount }

// PortsInUse returns the number of allocated ports (for tests and metrics).
func (m *Manager) PortsInUse() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ports.InUse()
}

// Create starts a process. It returns at once, in state starting. A create
// repeating a live process's spec and meta returns that process; a record
// whose process has exited (stopped or error) is replaced by the new start,
// whatever its spec; a live process or one being deleted with that name is
// ErrAlreadyExists. Errors: ErrInvalidArgument (spec, or a binary that cannot
// be run), ErrAlreadyExists, ErrPortsExhausted, ErrShuttingDown. On error
// nothing changed, except that an exited record may be gone.
func (m *Manager) Create(spec Spec, meta Meta) (Info, error) {
	if err := ValidateSpec(spec, m.cfg.MaxPortCount); err != nil {
		return Info{}, err
	}
	spec = cloneSpec(spec)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return Info{}, ErrShuttingDown
	}
	if p, ok := m.procs[spec.Name]; ok {
		switch {
		case p.deleting:
			return Info{}, fmt.Errorf("%w: process %q is being deleted", ErrAlreadyExists, spec.Name)
		case exitedLocked(p):
			// A dead record (the process exited: state stopped or error)
			// must not block a new start: it is replaced.
			fmt.Fprintf(p.log, "=== %s instance manager: replacing the exited record (state %s) with a new start\n", time.Now().UTC().Format(time.RFC3339), p.state)
			p.deleting = true
			m.removeLocked(p)
		case sameRequest(p.spec, p.meta, spec, meta):
			return p.infoLocked(), nil
		default:
			return Info{}, fmt.Errorf("%w: process %q runs with a different spec", ErrAlreadyExists, spec.Name)
		}
	}
	p, err := m.startLocked(spec, meta)
	if err != nil {
		return Info{}, err
	}
	m.procs[spec.Name] = p
	m.publishLocked(p.infoLocked())
	return p.infoLocked(), nil
}

// startLocked allocates ports, starts the OS process and its supervisors.
// On error it releases what it took.
func (m *Manager) startLocked(spec Spec, meta Meta) (*proc, error) {
	start, end, err := m.ports.Allocate(spec.PortCount)
	if err != nil {
		return nil, fmt.Errorf("process %q: %w", spec.Name, err)
	}
	log, err := logfile.Open(m.logPath(spec.Name), m.cfg.LogMaxSize, m.cfg.LogMaxFiles)
	if err != nil {
		_ = m.ports.Release(start, end)
		return nil, fmt.Errorf("process %q: log: %w", spec.Name, err)
	}
	uuid := newUUID()
	grp, err := m.isolate(spec, uuid)
	if err != nil {
		fmt.Fprintf(log, "=== start refused: %v\n", err)
		_ = log.Close()
		_ = m.ports.Release(start, end)
		return nil, err
	}
	args := BuildArgs(spec, start)
	fmt.Fprintf(log, "=== %s instance manager: starting %s %q (ports %d-%d)\n", time.Now().UTC().Format(time.RFC3339), spec.Binary, args, start, end)
	run, err := m.cfg.Executor.Start(Command{Binary: spec.Binary, Args: args, Output: log})
	if err == nil && grp != nil {
		grp, err = m.joinCgroup(run, grp, spec, log)
	}
	if err != nil {
		fmt.Fprintf(log, "=== start failed: %v\n", err)
		_ = log.Close()
		_ = m.ports.Release(start, end)
		if grp != nil {
			_ = grp.Remove()
		}
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			return nil, invalid("binary %q cannot be run: %v", spec.Binary, err)
		}
		return nil, fmt.Errorf("process %q: start: %w", spec.Name, err)
	}
	p := &proc{
		spec: spec, meta: meta, state: StateStarting,
		portStart: start, portEnd: end, uuid: uuid, pid: run.PID(), run: run, log: log, cgroup: grp,
		ready: make(chan struct{}), exited: make(chan struct{}), done: make(chan struct{}),
	}
	m.live.Add(1)
	go m.wait(p)
	go m.healthCheck(p, ReadyAddresses(spec, start))
	return p, nil
}

// wait reaps the OS process and applies EventExit.
func (m *Manager) wait(p *proc) {
	err := p.run.Wait()
	if p.cgroup != nil {
		if rerr := p.cgroup.Remove(); rerr != nil {
			m.cfg.Logger.WithError(rerr).WithField("process", p.spec.Name).Warn("removing the process's cgroup")
		}
	}
	if m.cfg.OnExit != nil {
		m.cfg.OnExit(Info{Spec: cloneSpec(p.spec), Meta: p.meta})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	close(p.exited)
	if !p.stopAsked {
		close(p.done)
		p.stopAsked = true // nothing left to signal
	}
	prev := p.state
	p.state, p.pid = Next(p.state, EventExit), 0
	if p.state == StateError {
		p.errMsg = exitMessage(prev, err)
	}
	fmt.Fprintf(p.log, "=== %s instance manager: process exited (%v), state %s\n", time.Now().UTC().Format(time.RFC3339), exitText(err), p.state)
	m.cfg.Logger.WithFields(logrus.Fields{"process": p.spec.Name, "uuid": p.uuid, "state": p.state}).Infof("process exited: %v", exitText(err))
	if p.deleting || p.orphan {
		m.removeLocked(p)
		return
	}
	m.publishLocked(p.infoLocked())
}

// exitedLocked reports whether p's OS process has exited.
func exitedLocked(p *proc) bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// removeLocked forgets an exited process and frees its ports.
func (m *Manager) removeLocked(p *proc) {
	if err := m.ports.Release(p.portStart, p.portEnd); err != nil {
		m.cfg.Logger.WithError(err).WithField("process", p.spec.Name).Error("releasing ports")
	}
	_ = p.log.Close()
	if m.procs[p.spec.Name] == p {
		delete(m.procs, p.spec.Name)
		info := p.infoLocked()
		info.Deleted = true
		m.publishLocked(info)
	}
	m.live.Done()
}

// healthCheck probes the ready addresses until they all answer, then applies
// EventReady. It ends early when the process exits or is asked to stop.
func (m *Manager) healthCheck(p *proc, addrs []string) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok := m.cfg.HealthChecker.Ready(ctx, addrs)
		cancel()
		if ok {
			m.markReady(p)
			return
		}
		t.Reset(m.cfg.HealthInterval)
	}
}

func (m *Manager) markReady(p *proc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if next := Next(p.state, EventReady); next != p.state {
		p.state = next
		close(p.ready)
		if !p.orphan && m.procs[p.spec.Name] == p {
			m.publishLocked(p.infoLocked())
		}
	}
}

// stopLocked applies EventStop: it signals the process and arms the SIGKILL
// escalation. The exit is handled by wait.
func (m *Manager) stopLocked(p *proc, sig syscall.Signal) {
	p.state = Next(p.state, EventStop)
	if p.stopAsked {
		return
	}
	p.stopAsked = true
	close(p.done)
	fmt.Fprintf(p.log, "=== %s instance manager: stopping with %v\n", time.Now().UTC().Format(time.RFC3339), sig)
	if err := p.run.Signal(sig); err != nil {
		m.cfg.Logger.WithError(err).WithField("process", p.spec.Name).Warn("stop signal failed")
	}
	go func() {
		t := time.NewTimer(m.cfg.StopTimeout)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			m.cfg.Logger.WithField("process", p.spec.Name).Warnf("no exit %v after %v; sending SIGKILL", m.cfg.StopTimeout, sig)
			_ = p.run.Signal(syscall.SIGKILL)
		}
	}()
}

// Delete stops the named process and frees its ports once it exited (at once
// when it already had). It returns at once with Deleted set. uuid, when not
// empty, must match the current run. Deleting a process already being
// deleted returns its status again. Errors: ErrInvalidArgument, ErrNotFound,
// ErrFailedPrecondition (uuid mismatch).
func (m *Manager) Delete(name, uuid string) (Info, error) {
	if err := ValidateName(name); err != nil {
		return Info{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.procs[name]
	if !ok {
		return Info{}, fmt.Errorf("%w: process %q", ErrNotFound, name)
	}
	if uuid != "" && uuid != p.uuid {
		return Info{}, fmt.Errorf("%w: process %q runs as uuid %s, not %s", ErrFailedPrecondition, name, p.uuid, uuid)
	}
	info := p.infoLocked()
	info.Deleted = true
	if p.deleting {
		return info, nil
	}
	p.deleting = true
	select {
	case <-p.exited:
		p.state = Next(p.state, EventStop)
		info = p.infoLocked()
		info.Deleted = true
		m.removeLocked(p)
		return info, nil
	default:
	}
	m.stopLocked(p, syscall.SIGTERM)
	info = p.infoLocked()
	info.Deleted = true
	m.publishLocked(info)
	return info, nil
}

// Get returns the named process. Errors: ErrInvalidArgument, ErrNotFound.
func (m *Manager) Get(name string) (Info, error) {
	if err := ValidateName(name); err != nil {
		return Info{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.procs[name]
	if !ok {
		return Info{}, fmt.Errorf("%w: process %q", ErrNotFound, name)
	}
	return p.infoLocked(), nil
}

// List returns every process, sorted by name.
func (m *Manager) List() []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Info, 0, len(m.procs))
	for _, p := range m.procs {
		out = append(out, p.infoLocked())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Name < out[j].Spec.Name })
	return out
}

// ReadLog calls fn for each line of the named process's log, oldest first.
// Errors: ErrInvalidArgument, ErrNotFound, fn's error, ctx's error.
func (m *Manager) ReadLog(ctx context.Context, name string, fn func(line string) error) error {
	if _, err := m.Get(name); err != nil {
		return err
	}
	return logfile.ReadLines(ctx, m.logPath(name), m.cfg.LogMaxFiles, fn)
}

func (m *Manager) logPath(name string) string { return filepath.Join(m.cfg.LogDir, name+".log") }

func (p *proc) infoLocked() Info {
	return Info{
		Spec: cloneSpec(p.spec),
		Meta: p.meta,
		Status: Status{
			State: p.state, ErrorMsg: p.errMsg, PortStart: p.portStart, PortEnd: p.portEnd,
			UUID: p.uuid, PID: p.pid,
		},
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func exitMessage(prev State, err error) string {
	if prev == StateStarting {
		return "process exited before its ports were ready: " + exitText(err)
	}
	return "process exited unexpectedly: " + exitText(err)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

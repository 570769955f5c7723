package process

import (
	"io"
	"os"

	"context"
	"fmt"
	"github.com/sirupsen/logrus"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeExec is an Executor whose processes exit when the test says so or when
// signalled (unless the signal is ignored).
type fakeExec struct {
	mu       sync.Mutex
	runs     []*fakeRun
	startErr error
	ignore   map[syscall.Signal]bool
	output   string // written to Output on start
}

func (f *fakeExec) Start(c Command) (Running, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return nil, f.startErr
	}
	r := &fakeRun{pid: 1000 + len(f.runs), cmd: c, exit: make(chan error, 1), ignore: f.ignore}
	f.runs = append(f.runs, r)
	if f.output != "" {
		fmt.Fprint(c.Output, f.output)
	}
	return r, nil
}

func (f *fakeExec) run(i int) *fakeRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[i]
}

type fakeRun struct {
	pid    int
	cmd    Command
	exit   chan error
	once   sync.Once
	ignore map[syscall.Signal]bool

	mu   sync.Mutex
	sigs []syscall.Signal
}

func (r *fakeRun) PID() int { return r.pid }

func (r *fakeRun) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	r.sigs = append(r.sigs, sig)
	r.mu.Unlock()
	if !r.ignore[sig] {
		r.exitWith(fmt.Errorf("signal: %v", sig))
	}
	return nil
}

func (r *fakeRun) signals() []syscall.Signal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]syscall.Signal(nil), r.sigs...)
}

func (r *fakeRun) exitWith(err error) { r.once.Do(func() { r.exit <- err }) }

func (r *fakeRun) Wait() error { return <-r.exit }

// fakeHealth reports an address ready once the test marked it.
type fakeHealth struct {
	mu    sync.Mutex
	ready map[string]bool
	all   bool
}

func (h *fakeHealth) Ready(_ context.Context, addrs []string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range addrs {
		if !h.all && !h.ready[a] {
			return false
		}
	}
	return true
}

func (h *fakeHealth) setAll(v bool) {
	h.mu.Lock()
	h.all = v
	h.mu.Unlock()
}

func newFakeManager(t *testing.T, mod func(*Config)) (*Manager, *fakeExec, *fakeHealth) {
	t.Helper()
	fe := &fakeExec{}
	fh := &fakeHealth{ready: map[string]bool{}}
	cfg := Config{
		PortRange: PortRange{20000, 20099}, LogDir: t.TempDir(),
		Executor: fe, HealthChecker: fh, HealthInterval: 5 * time.Millisecond,
		StopTimeout: 100 * time.Millisecond, Logger: testLogger(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fh.setAll(true)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return m, fe, fh
}

// waitEvent reads sub until an event satisfies cond, failing after 5 s.
func waitEvent(t *testing.T, sub *Subscription, what string, cond func(Info) bool) Info {
	t.Helper()
	return waitEvents(t, sub, what, cond)[0]
}

// waitEvents waits up to 5 s for one event matching each of conds, in any
// order, and returns them in the order of conds.
func waitEvents(t *testing.T, sub *Subscription, what string, conds ...func(Info) bool) []Info {
	t.Helper()
	out, seen := make([]Info, len(conds)), make([]bool, len(conds))
	left := len(conds)
	timeout := time.After(5 * time.Second)
	for left > 0 {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatalf("waiting for %s: subscription closed", what)
			}
			for i, c := range conds {
				if !seen[i] && c(ev) {
					out[i], seen[i] = ev, true
					left--
					break
				}
			}
		case <-timeout:
			t.Fatalf("waiting for %s: timeout (seen %v)", what, seen)
		}
	}
	return out
}

func named(name string, st State, deleted bool) func(Info) bool {
	return func(i Info) bool { return i.Spec.Name == name && i.Status.State == st && i.Deleted == deleted }
}

func testLogger(t *testing.T) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if testing.Verbose() {
		l.SetOutput(os.Stderr)
	}
	return l
}

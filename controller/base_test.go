package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// recorder is a reconcile function scripted per call.
type recorder struct {
	mu    sync.Mutex
	calls map[string]int
	step  func(key string, call int) (Result, error)
	seen  chan string
}

func newRecorder(step func(string, int) (Result, error)) *recorder {
	return &recorder{calls: map[string]int{}, step: step, seen: make(chan string, 100)}
}

func (r *recorder) reconcile(ctx context.Context, key string) (Result, error) {
	r.mu.Lock()
	r.calls[key]++
	n := r.calls[key]
	r.mu.Unlock()
	r.seen <- key
	if LoggerFrom(ctx).Data["key"] != key {
		return Done, errors.New("logger in context lacks the key")
	}
	return r.step(key, n)
}

func runWorker(t *testing.T, w *Worker) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("worker did not stop")
		}
	})
	return cancel
}

func waitCalls(t *testing.T, r *recorder, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for range n {
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("timed out waiting for %d calls", n)
		}
	}
}

func TestWorkerNeverDropsAKey(t *testing.T) {
	// Longhorn drops a key after 3 retries; this worker keeps retrying with
	// backoff until the reconcile succeeds.
	r := newRecorder(func(key string, call int) (Result, error) {
		if call < 8 {
			return Done, errors.New("not yet")
		}
		return Done, nil
	})
	w := NewWorker("test", r.reconcile)
	runWorker(t, w)
	w.Enqueue("ns/a")
	waitCalls(t, r, 8)
	time.Sleep(50 * time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls["ns/a"] != 8 {
		t.Fatalf("calls = %d, want exactly 8 (retried to success, then forgotten)", r.calls["ns/a"])
	}
}

func TestWorkerTerminalErrorIsNotRetried(t *testing.T) {
	r := newRecorder(func(string, int) (Result, error) { return Done, Terminal(errors.New("bad spec")) })
	w := NewWorker("test", r.reconcile)
	runWorker(t, w)
	w.Enqueue("ns/a")
	waitCalls(t, r, 1)
	select {
	case <-r.seen:
		t.Fatal("terminal error was retried")
	case <-time.After(200 * time.Millisecond):
	}
	if !IsTerminal(Terminal(errors.New("x"))) || IsTerminal(errors.New("x")) || Terminal(nil) != nil {
		t.Fatal("IsTerminal/Terminal")
	}
}

func TestWorkerRequeueAfter(t *testing.T) {
	r := newRecorder(func(_ string, call int) (Result, error) {
		if call == 1 {
			return After(100 * time.Millisecond), nil
		}
		return Done, nil
	})
	w := NewWorker("test", r.reconcile)
	runWorker(t, w)
	start := time.Now()
	w.Enqueue("ns/a")
	waitCalls(t, r, 2)
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Fatalf("requeued after %v, want about 100ms", d)
	}
}

func TestWorkerSurvivesPanic(t *testing.T) {
	r := newRecorder(func(_ string, call int) (Result, error) {
		if call == 1 {
			panic("boom")
		}
		return Done, nil
	})
	w := NewWorker("test", r.reconcile)
	runWorker(t, w)
	w.Enqueue("ns/a")
	waitCalls(t, r, 2)
}

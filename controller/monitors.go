package controller

import (
	"context"
	"sync"
)

// monitors is a registry of background loops, one per object name, that
// watch an outside process off the workers (a reconcile never blocks on
// one): the engine poller and the instance-manager watch. A loop only
// records observations and enqueues keys; the reconcile reads the latest
// observation and writes status. Loops are tracked and stopped with their
// controller.
//
// T is what a loop watches (an address; comparable, so ensure can tell a
// move), O what it observes (struct{} when it only enqueues).
type monitors[T comparable, O any] struct {
	// run is the loop for one name. It returns when ctx is done; record
	// stores an observation for latest.
	run func(ctx context.Context, target T, record func(O))

	mu   sync.Mutex
	list map[string]*monitorEntry[T, O]
	wg   sync.WaitGroup
}

type monitorEntry[T comparable, O any] struct {
	target T
	cancel context.CancelFunc
	last   O
}

func newMonitors[T comparable, O any](run func(ctx context.Context, target T, record func(O))) *monitors[T, O] {
	return &monitors[T, O]{run: run, list: map[string]*monitorEntry[T, O]{}}
}

// ensure runs a loop for name watching target, replacing one that watches
// another target (its observation goes with it).
func (m *monitors[T, O]) ensure(name string, target T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.list[name]; ok {
		if cur.target == target {
			return
		}
		cur.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	entry := &monitorEntry[T, O]{target: target, cancel: cancel}
	m.list[name] = entry
	record := func(o O) {
		m.mu.Lock()
		entry.last = o
		m.mu.Unlock()
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.run(ctx, target, record)
	}()
}

// latest returns the last observation recorded for name (the zero O if none).
func (m *monitors[T, O]) latest(name string) O {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.list[name]; ok {
		return cur.last
	}
	var zero O
	return zero
}

// stop ends the loop of name, if any.
func (m *monitors[T, O]) stop(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.list[name]; ok {
		cur.cancel()
		delete(m.list, name)
	}
}

// stopAll ends every loop and waits for them to return.
func (m *monitors[T, O]) stopAll() {
	m.mu.Lock()
	for name, cur := range m.list {
		cur.cancel()
		delete(m.list, name)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

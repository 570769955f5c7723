package controller

import (
	"context"
	"sync"
	"time"

	"github.com/longhorn-go/longhorn/engineapi"
)

// imMonitors runs one InstanceWatch stream per running instance manager this
// manager owns. A stream only enqueues the instance manager's key; the
// reconcile lists the instances and writes status, so the monitor never
// writes objects and never blocks a worker (STYLE guideline 14). Monitors
// are tracked and stopped with the controller.
type imMonitors struct {
	api     *engineapi.Handler
	enqueue func(key string)

	mu   sync.Mutex
	list map[string]*imMonitor
	wg   sync.WaitGroup
}

type imMonitor struct {
	addr   engineapi.IMAddress
	cancel context.CancelFunc
}

func newIMMonitors(api *engineapi.Handler, enqueue func(string)) *imMonitors {
	return &imMonitors{api: api, enqueue: enqueue, list: map[string]*imMonitor{}}
}

// ensure runs a monitor for the instance manager name at addr, replacing
// one that watches another address.
func (m *imMonitors) ensure(name, key string, addr engineapi.IMAddress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.list[name]; ok {
		if cur.addr == addr {
			return
		}
		cur.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.list[name] = &imMonitor{addr: addr, cancel: cancel}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.watch(ctx, key, addr)
	}()
}

// stop ends the monitor of name, if any.
func (m *imMonitors) stop(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.list[name]; ok {
		cur.cancel()
		delete(m.list, name)
	}
}

// stopAll ends every monitor and waits for them.
func (m *imMonitors) stopAll() {
	m.mu.Lock()
	for name, cur := range m.list {
		cur.cancel()
		delete(m.list, name)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// watch keeps an InstanceWatch stream open, enqueueing key after each
// (re)subscription and on every event, with a 1 s pause between attempts.
func (m *imMonitors) watch(ctx context.Context, key string, addr engineapi.IMAddress) {
	for ctx.Err() == nil {
		if client, err := m.api.InstanceManager(ctx, addr); err == nil {
			if w, err := client.InstanceWatch(ctx); err == nil {
				m.enqueue(key)
				for {
					if _, err := w.Recv(); err != nil {
						break
					}
					m.enqueue(key)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

package controller

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/longhorn-go/longhorn/engineapi"
)

// enginePollInterval is how often a running engine is polled (Longhorn's
// EnginePollInterval is 5 s; shorter here so modes and rebuild progress
// reach the volume sooner).
const enginePollInterval = 2 * time.Second

// engineObservation is one poll of a running engine.
type engineObservation struct {
	Volume    *engineapi.Volume
	Replicas  []engineapi.Replica
	Rebuild   map[string]*engineapi.RebuildStatus
	Snapshots map[string]*engineapi.Snapshot
	Err       string
	At        time.Time
}

// sameAs compares two observations ignoring the time.
func (o *engineObservation) sameAs(p *engineObservation) bool {
	if o == nil || p == nil {
		return o == p
	}
	a, b := *o, *p
	a.At, b.At = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

// engineMonitors poll running engines off the workers (STYLE guideline 14):
// each monitor stores its latest observation and enqueues the engine when it
// changed; the reconcile reads the observation and writes status.
type engineMonitors struct {
	api     *engineapi.Handler
	enqueue func(key string)

	mu   sync.Mutex
	list map[string]*engineMonitor
	wg   sync.WaitGroup
}

type engineMonitor struct {
	im     engineapi.IMAddress
	ref    engineapi.EngineRef
	cancel context.CancelFunc
	last   *engineObservation
}

func newEngineMonitors(api *engineapi.Handler, enqueue func(string)) *engineMonitors {
	return &engineMonitors{api: api, enqueue: enqueue, list: map[string]*engineMonitor{}}
}

// ensure polls engine ref through the instance manager at im.
func (m *engineMonitors) ensure(key string, im engineapi.IMAddress, ref engineapi.EngineRef) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.list[ref.Name]; ok {
		if cur.im == im && cur.ref == ref {
			return
		}
		cur.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	mon := &engineMonitor{im: im, ref: ref, cancel: cancel}
	m.list[ref.Name] = mon
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.poll(ctx, key, mon)
	}()
}

// latest returns the last observation of engine name (nil if none).
func (m *engineMonitors) latest(name string) *engineObservation {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.list[name]; ok {
		return cur.last
	}
	return nil
}

func (m *engineMonitors) stop(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.list[name]; ok {
		cur.cancel()
		delete(m.list, name)
	}
}

func (m *engineMonitors) stopAll() {
	m.mu.Lock()
	for n, cur := range m.list {
		cur.cancel()
		delete(m.list, n)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

func (m *engineMonitors) poll(ctx context.Context, key string, mon *engineMonitor) {
	t := time.NewTicker(enginePollInterval)
	defer t.Stop()
	for {
		obs := m.observe(ctx, mon)
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		changed := !obs.sameAs(mon.last)
		mon.last = obs
		m.mu.Unlock()
		if changed {
			m.enqueue(key)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// observe makes one round of calls; the first failure ends the round.
func (m *engineMonitors) observe(ctx context.Context, mon *engineMonitor) *engineObservation {
	obs := &engineObservation{At: time.Now()}
	c, err := m.api.Engine(ctx, mon.im, mon.ref)
	if err == nil {
		obs.Volume, err = c.VolumeGet(ctx)
	}
	if err == nil {
		obs.Replicas, err = c.ReplicaList(ctx)
	}
	if err == nil {
		obs.Rebuild, err = c.ReplicaRebuildingStatus(ctx)
	}
	if err == nil {
		obs.Snapshots, err = c.SnapshotList(ctx)
	}
	if err != nil {
		obs.Err = err.Error()
	}
	return obs
}

package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/informers/externalversions"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// volView is what a tracker knows of one volume: the object (nil once
// deleted) and its running engine's endpoint.
type volView struct {
	V        *longhorn.Volume
	Endpoint string // status.endpoint of an engine of the volume in state running
	Eng      *longhorn.Engine
	Reps     map[string]*longhorn.Replica
	// Procs is every instance manager's process state by instance name
	// (shared by all views).
	Procs map[string]longhorn.InstanceState
}

// tracker watches Volumes and Engines (informers, no polling) and stamps
// the moment each awaited condition first holds, so that a latency is
// measured to the watch event, not to a poll interval.
type tracker struct {
	mu      sync.Mutex
	vols    map[string]*volView
	waiters map[string][]*waiter
	split   splitRecorder
	imProcs map[string]map[string]longhorn.InstanceState // instance manager -> instance -> state
	procs   map[string]longhorn.InstanceState
}

type waiter struct {
	cond func(volView) bool
	at   chan time.Time
}

// handler calls on(obj, deleted) for every add, update and delete.
func handler(on func(o any, deleted bool)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { on(o, false) },
		UpdateFunc: func(_, o any) { on(o, false) },
		DeleteFunc: func(o any) { on(o, true) },
	}
}

// startTracker starts the informers and waits for their caches.
func startTracker(ctx context.Context, lh versioned.Interface) (*tracker, error) {
	t := &tracker{vols: map[string]*volView{}, waiters: map[string][]*waiter{},
		imProcs: map[string]map[string]longhorn.InstanceState{}, procs: map[string]longhorn.InstanceState{}}
	f := externalversions.NewSharedInformerFactoryWithOptions(lh, 0, externalversions.WithNamespace(framework.Namespace))
	v1 := f.Longhorn().V1beta2()
	for inf, on := range map[cache.SharedIndexInformer]func(any, bool){
		v1.Volumes().Informer():          t.volume,
		v1.Engines().Informer():          t.engine,
		v1.Replicas().Informer():         t.replica,
		v1.InstanceManagers().Informer(): t.instanceManager,
	} {
		if _, err := inf.AddEventHandler(handler(on)); err != nil {
			return nil, err
		}
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer %v did not sync", typ)
		}
	}
	return t, nil
}

func tombstone(o any) any {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}

func (t *tracker) volume(o any, deleted bool) {
	v, ok := tombstone(o).(*longhorn.Volume)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	vv := t.view(v.Name)
	vv.V = v
	if deleted {
		vv.V = nil
	}
	t.check(v.Name, vv)
}

func (t *tracker) engine(o any, deleted bool) {
	e, ok := tombstone(o).(*longhorn.Engine)
	if !ok || e.Spec.VolumeName == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	vv := t.view(e.Spec.VolumeName)
	vv.Endpoint, vv.Eng = "", e
	if deleted {
		vv.Eng = nil
	}
	if !deleted && e.Status.CurrentState == longhorn.InstanceStateRunning {
		vv.Endpoint = e.Status.Endpoint
	}
	t.check(e.Spec.VolumeName, vv)
}

func (t *tracker) replica(o any, deleted bool) {
	r, ok := tombstone(o).(*longhorn.Replica)
	if !ok || r.Spec.VolumeName == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	vv := t.view(r.Spec.VolumeName)
	if vv.Reps == nil {
		vv.Reps = map[string]*longhorn.Replica{}
	}
	vv.Reps[r.Name] = r
	if deleted {
		delete(vv.Reps, r.Name)
	}
	t.check(r.Spec.VolumeName, vv)
}

// instanceManager records the processes an instance manager lists and
// stamps the armed attaches' milestones that read them.
func (t *tracker) instanceManager(o any, deleted bool) {
	im, ok := tombstone(o).(*longhorn.InstanceManager)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.imProcs[im.Name] {
		delete(t.procs, name)
	}
	delete(t.imProcs, im.Name)
	if !deleted {
		m := map[string]longhorn.InstanceState{}
		for _, ps := range []map[string]longhorn.InstanceProcess{im.Status.InstanceEngines, im.Status.InstanceReplicas} {
			for name, p := range ps {
				m[name], t.procs[name] = p.Status.State, p.Status.State
			}
		}
		t.imProcs[im.Name] = m
	}
	now := time.Now()
	for name := range t.split.armed {
		t.stamp(name, t.view(name), now)
	}
}

func (t *tracker) view(name string) *volView {
	vv := t.vols[name]
	if vv == nil {
		vv = &volView{Procs: t.procs}
		t.vols[name] = vv
	}
	return vv
}

// check fires the waiters of name whose condition holds; t.mu held.
func (t *tracker) check(name string, vv *volView) {
	ws := t.waiters[name]
	keep := ws[:0]
	now := time.Now()
	t.stamp(name, vv, now)
	for _, w := range ws {
		if w.cond(*vv) {
			w.at <- now
		} else {
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		delete(t.waiters, name)
		return
	}
	t.waiters[name] = keep
}

// expect returns a channel that receives the time cond first holds for
// volume name (at once if it holds now). Register it before acting.
func (t *tracker) expect(name string, cond func(volView) bool) <-chan time.Time {
	w := &waiter{cond: cond, at: make(chan time.Time, 1)}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiters[name] = append(t.waiters[name], w)
	t.check(name, t.view(name))
	return w.at
}

// owned lists the volumes whose status.ownerID is node.
func (t *tracker) owned(node string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, vv := range t.vols {
		if vv.V != nil && vv.V.Status.OwnerID == node {
			out = append(out, name)
		}
	}
	return out
}

// Conditions of part 3's phases.
func scheduled(vv volView) bool {
	return vv.V != nil && longhorn.GetCondition(vv.V.Status.Conditions, longhorn.VolumeConditionTypeScheduled).Status == longhorn.ConditionStatusTrue
}

func detachedReady(vv volView) bool {
	return scheduled(vv) && vv.V.Status.State == longhorn.VolumeStateDetached
}

func attachedOn(node string) func(volView) bool {
	return func(vv volView) bool {
		return vv.V != nil && vv.V.Status.State == longhorn.VolumeStateAttached && vv.V.Status.CurrentNodeID == node && vv.Endpoint != ""
	}
}

func detached(vv volView) bool {
	return vv.V != nil && vv.V.Status.State == longhorn.VolumeStateDetached
}

func gone(vv volView) bool { return vv.V == nil }

func notOwnedBy(node string) func(volView) bool {
	return func(vv volView) bool { return vv.V == nil || vv.V.Status.OwnerID != node }
}

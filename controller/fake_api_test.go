package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engineapi"
)

// fakeAPI is instanceAPI in memory: instance managers by address that keep
// instances as the real one does (a repeated create of a live instance
// returns it, an exited record is replaced, another live one is
// AlreadyExists), and engines by name that answer what the test set.
type fakeAPI struct {
	mu      sync.Mutex
	ims     map[string]*fakeIM
	engines map[string]*fakeEngine
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{ims: map[string]*fakeIM{}, engines: map[string]*fakeEngine{}}
}

func (a *fakeAPI) im(addr engineapi.IMAddress) *fakeIM {
	a.mu.Lock()
	defer a.mu.Unlock()
	im, ok := a.ims[addr.Address]
	if !ok {
		im = &fakeIM{a: a, instances: map[string]*engineapi.Instance{}, nextPort: 10000}
		a.ims[addr.Address] = im
	}
	return im
}

func (a *fakeAPI) InstanceManager(_ context.Context, addr engineapi.IMAddress) (instanceManagerClient, error) {
	return a.im(addr), nil
}

func (a *fakeAPI) Ping(_ context.Context, addr engineapi.IMAddress) (engineapi.APIVersions, error) {
	return a.im(addr).Versions(), nil
}

func (a *fakeAPI) Engine(_ context.Context, _ engineapi.IMAddress, e engineapi.EngineRef) (engineapi.EngineClient, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fe, ok := a.engines[e.Name]
	if !ok {
		return nil, status.Errorf(codes.Unavailable, "engine %s not reachable", e.Name)
	}
	return fe, nil
}

// setEngine makes engine name answer with vol and replicas.
func (a *fakeAPI) setEngine(name string, vol *engineapi.Volume, replicas []engineapi.Replica) *fakeEngine {
	a.mu.Lock()
	defer a.mu.Unlock()
	fe := &fakeEngine{vol: vol, replicas: replicas}
	a.engines[name] = fe
	return fe
}

// fakeIM is one instance manager.
type fakeIM struct {
	a         *fakeAPI
	instances map[string]*engineapi.Instance
	creates   []engineapi.InstanceSpec // every create that started a process
	deletes   []string
	nextPort  int32
}

func (m *fakeIM) InstanceCreate(_ context.Context, spec engineapi.InstanceSpec) (*engineapi.Instance, error) {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	if cur, ok := m.instances[spec.Name]; ok {
		switch {
		case cur.Status.State == engineapi.InstanceStateError || cur.Status.State == engineapi.InstanceStateStopped:
		case cur.Spec.Type == spec.Type && slices.Equal(cur.Spec.Args, spec.Args):
			c := *cur
			return &c, nil
		default:
			return nil, status.Errorf(codes.AlreadyExists, "process %q runs with a different spec", spec.Name)
		}
	}
	in := &engineapi.Instance{Spec: spec, Status: engineapi.InstanceStatus{State: engineapi.InstanceStateStarting,
		PortStart: m.nextPort, PortEnd: m.nextPort + spec.PortCount - 1, UUID: fmt.Sprintf("uuid-%d", len(m.creates))}}
	m.nextPort += spec.PortCount
	m.instances[spec.Name] = in
	m.creates = append(m.creates, spec)
	c := *in
	return &c, nil
}

func (m *fakeIM) InstanceDelete(_ context.Context, name string, typ engineapi.InstanceType, _ string) (*engineapi.Instance, error) {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	in, ok := m.instances[name]
	if !ok || in.Spec.Type != typ {
		return nil, status.Errorf(codes.NotFound, "instance %q not found", name)
	}
	delete(m.instances, name)
	m.deletes = append(m.deletes, name)
	c := *in
	c.Deleted = true
	return &c, nil
}

func (m *fakeIM) InstanceGet(_ context.Context, name string, typ engineapi.InstanceType) (*engineapi.Instance, error) {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	in, ok := m.instances[name]
	if !ok || in.Spec.Type != typ {
		return nil, status.Errorf(codes.NotFound, "instance %q not found", name)
	}
	c := *in
	return &c, nil
}

func (m *fakeIM) InstanceList(context.Context) (map[string]*engineapi.Instance, error) {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	out := map[string]*engineapi.Instance{}
	for n, in := range m.instances {
		c := *in
		out[n] = &c
	}
	return out, nil
}

func (m *fakeIM) InstanceWatch(ctx context.Context) (instanceWatcher, error) {
	return blockingWatcher{ctx}, nil
}

func (m *fakeIM) Versions() engineapi.APIVersions {
	return engineapi.APIVersions{InstanceManagerMin: 1, InstanceManagerCurrent: 5, ProxyMin: 1, ProxyCurrent: 6}
}

// setState sets the state of instance name (the process started, died, ...).
func (m *fakeIM) setState(name string, st engineapi.InstanceState) {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	m.instances[name].Status.State = st
}

// put records an instance as if someone else had made it.
func (m *fakeIM) put(in *engineapi.Instance) {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	m.instances[in.Spec.Name] = in
}

func (m *fakeIM) createCount() int {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	return len(m.creates)
}

// blockingWatcher delivers no events until its context ends.
type blockingWatcher struct{ ctx context.Context }

func (w blockingWatcher) Recv() (*engineapi.Instance, error) {
	<-w.ctx.Done()
	return nil, w.ctx.Err()
}

// fakeEngine answers the engine monitor's calls and records the rebuild
// and snapshot calls; the rest panic (nil EngineClient).
type fakeEngine struct {
	engineapi.EngineClient
	vol      *engineapi.Volume
	replicas []engineapi.Replica
	snaps    map[string]*engineapi.Snapshot
	added    []string // ReplicaAdd addresses
	removed  []string // SnapshotRemove names
	taken    []string // VolumeSnapshot names
	purges   int
	purgeErr error

	cloneMu     sync.Mutex // the clone fields: the monitor polls them
	clones      []engineapi.SnapshotCloneRequest
	cloneStatus map[string]*engineapi.CloneStatus
}

// SnapshotClone records the call; every replica then reports the clone in
// progress.
func (e *fakeEngine) SnapshotClone(_ context.Context, req engineapi.SnapshotCloneRequest) error {
	e.cloneMu.Lock()
	defer e.cloneMu.Unlock()
	e.clones = append(e.clones, req)
	for _, r := range e.replicas {
		if e.cloneStatus == nil {
			e.cloneStatus = map[string]*engineapi.CloneStatus{}
		}
		e.cloneStatus[r.Address] = &engineapi.CloneStatus{IsCloning: true, State: "in_progress", SnapshotName: req.SnapshotName}
	}
	return nil
}

func (e *fakeEngine) SnapshotCloneStatus(context.Context) (map[string]*engineapi.CloneStatus, error) {
	e.cloneMu.Lock()
	defer e.cloneMu.Unlock()
	out := map[string]*engineapi.CloneStatus{}
	for a, s := range e.cloneStatus {
		c := *s
		out[a] = &c
	}
	return out, nil
}

func (e *fakeEngine) setCloneStatus(st map[string]*engineapi.CloneStatus) {
	e.cloneMu.Lock()
	defer e.cloneMu.Unlock()
	e.cloneStatus = st
}

func (e *fakeEngine) ReplicaAdd(_ context.Context, req engineapi.ReplicaAddRequest) error {
	e.added = append(e.added, req.Address)
	return nil
}

// VolumeSnapshot records the snapshot taken.
func (e *fakeEngine) VolumeSnapshot(_ context.Context, name string, _ map[string]string) (string, error) {
	e.taken = append(e.taken, name)
	return name, nil
}

func (e *fakeEngine) SnapshotRemove(_ context.Context, names ...string) error {
	e.removed = append(e.removed, names...)
	for _, n := range names {
		e.snaps[n].Removed = true
	}
	return nil
}

func (e *fakeEngine) SnapshotPurge(context.Context, bool) error {
	if e.purgeErr != nil {
		return e.purgeErr
	}
	e.purges++
	return nil
}

func (e *fakeEngine) IsGRPC() bool { return true }

func (e *fakeEngine) VolumeGet(context.Context) (*engineapi.Volume, error) { return e.vol, nil }
func (e *fakeEngine) ReplicaList(context.Context) ([]engineapi.Replica, error) {
	return e.replicas, nil
}
func (e *fakeEngine) ReplicaRebuildingStatus(context.Context) (map[string]*engineapi.RebuildStatus, error) {
	return nil, nil
}
func (e *fakeEngine) SnapshotList(context.Context) (map[string]*engineapi.Snapshot, error) {
	if e.snaps != nil {
		return e.snaps, nil
	}
	return map[string]*engineapi.Snapshot{"volume-head": {Name: "volume-head"}}, nil
}

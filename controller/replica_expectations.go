package controller

import (
	"sync"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// replicaExpectationTimeout bounds how long a created replica that the cache
// does not show yet counts as existing (informer lag is milliseconds).
const replicaExpectationTimeout = 30 * time.Second

// replicaExpectations are the replicas this manager created and its cache
// does not show yet (controller-runtime's expectations). Replica names carry
// a random suffix, as Longhorn's do, so a replacement can never take over a
// deleted replica's name, data directory or events; the expectations keep a
// sync on a stale cache from creating the same replica twice. Nothing here
// waits or polls.
type replicaExpectations struct {
	mu sync.Mutex
	m  map[string]map[string]expectedReplica // volume -> replica name
	// seen are replicas the informer reported before created ran (the add
	// event can beat the create call's return): created skips them.
	// Names are random, so a name is never seen twice for two replicas.
	seen map[string]time.Time
}

type expectedReplica struct {
	r  *longhorn.Replica // as the API server returned it; read-only
	at time.Time
}

func newReplicaExpectations() *replicaExpectations {
	return &replicaExpectations{m: map[string]map[string]expectedReplica{}, seen: map[string]time.Time{}}
}

// created records a replica the API server accepted at now.
func (e *replicaExpectations) created(r *longhorn.Replica, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, at := range e.seen {
		if now.Sub(at) > replicaExpectationTimeout {
			delete(e.seen, name)
		}
	}
	if _, ok := e.seen[r.Name]; ok {
		delete(e.seen, r.Name)
		return
	}
	vol := r.Spec.VolumeName
	if e.m[vol] == nil {
		e.m[vol] = map[string]expectedReplica{}
	}
	e.m[vol][r.Name] = expectedReplica{r: r, at: now}
}

// observed drops the expectation of a replica the cache added or deleted
// at now; one it does not expect yet is remembered, so that a created call
// that comes after the informer's event records nothing.
func (e *replicaExpectations) observed(r *longhorn.Replica, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.m[r.Spec.VolumeName][r.Name]; !ok {
		e.seen[r.Name] = now
		return
	}
	delete(e.m[r.Spec.VolumeName], r.Name)
	if len(e.m[r.Spec.VolumeName]) == 0 {
		delete(e.m, r.Spec.VolumeName)
	}
}

// pending returns the volume's created replicas that cached lacks, dropping
// the ones the cache shows and the ones older than the timeout.
func (e *replicaExpectations) pending(volume string, cached map[string]*longhorn.Replica, now time.Time) []*longhorn.Replica {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*longhorn.Replica
	for name, x := range e.m[volume] {
		if _, ok := cached[name]; ok || now.Sub(x.at) > replicaExpectationTimeout {
			delete(e.m[volume], name)
			continue
		}
		out = append(out, x.r)
	}
	return out
}

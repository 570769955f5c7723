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
}

type expectedReplica struct {
	r  *longhorn.Replica // as the API server returned it; read-only
	at time.Time
}

func newReplicaExpectations() *replicaExpectations {
	return &replicaExpectations{m: map[string]map[string]expectedReplica{}}
}

// created records a replica the API server accepted at now.
func (e *replicaExpectations) created(r *longhorn.Replica, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	vol := r.Spec.VolumeName
	if e.m[vol] == nil {
		e.m[vol] = map[string]expectedReplica{}
	}
	e.m[vol][r.Name] = expectedReplica{r: r, at: now}
}

// observed drops the expectation of a replica the cache added or deleted.
func (e *replicaExpectations) observed(r *longhorn.Replica) {
	e.mu.Lock()
	defer e.mu.Unlock()
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

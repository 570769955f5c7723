package controller

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// orphanInstanceGrace is how long an instance must run without an Engine or
// Replica object of its name before the instance manager controller stops
// it: longer than any informer lag between an object's creation and its
// process start (the process is only started from an existing object).
const orphanInstanceGrace = 30 * time.Second

// orphanTracker remembers, per instance manager, since when each of its
// instances has been seen running without its object.
type orphanTracker struct {
	mu    sync.Mutex
	since map[string]map[string]time.Time
}

// due decides, for the instances of instance manager im listed now
// (instance name -> true when it runs without its object), which ones have
// been orphans for at least grace at now. Only the orphans of this listing
// are remembered: an instance that has its object again, or is gone, starts
// over.
func (t *orphanTracker) due(im string, orphan map[string]bool, now time.Time, grace time.Duration) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, next := t.since[im], map[string]time.Time{}
	var out []string
	for name, isOrphan := range orphan {
		if !isOrphan {
			continue
		}
		first, seen := prev[name]
		if !seen {
			first = now
		}
		next[name] = first
		if seen && now.Sub(first) >= grace {
			out = append(out, name)
		}
	}
	if t.since == nil {
		t.since = map[string]map[string]time.Time{}
	}
	if len(next) == 0 {
		delete(t.since, im)
	} else {
		t.since[im] = next
	}
	return out
}

// stopOrphanInstances deletes the running instances of im whose Engine or
// Replica object is gone (for example a replica process that kept running
// on a node whose kubelet was down while its volume was deleted): such a
// process holds its port range and keeps the instance-manager pod from
// being replaced (storage-network change, upgrade). Each deletion is
// logged; errors are logged and retried at the next resync.
func (c *InstanceManagerController) stopOrphanInstances(ctx context.Context, im *longhorn.InstanceManager, client instanceManagerClient, list map[string]*engineapi.Instance) {
	orphan := map[string]bool{}
	for name, in := range list {
		var err error
		switch in.Spec.Type {
		case engineapi.InstanceTypeEngine:
			_, err = c.ds.GetEngineRO(ctx, name)
		case engineapi.InstanceTypeReplica:
			_, err = c.ds.GetReplicaRO(ctx, name)
		default:
			continue
		}
		orphan[name] = apierrors.IsNotFound(err) && in.Status.State == engineapi.InstanceStateRunning
	}
	for _, name := range c.orphans.due(im.Name, orphan, time.Now(), orphanInstanceGrace) {
		in := list[name]
		log := LoggerFrom(ctx).WithField("instance", name)
		if _, err := client.InstanceDelete(ctx, name, in.Spec.Type, in.Status.UUID); err != nil {
			log.WithError(err).Warn("Stopping an orphaned instance")
			continue
		}
		log.Info("Stopped an orphaned instance: its Engine or Replica object is gone")
	}
}

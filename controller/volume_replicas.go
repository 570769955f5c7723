package controller

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/scheduler"
	"github.com/longhorn-go/longhorn/types"
)

// replica predicates used by the volume steps.
func failed(r *longhorn.Replica) bool    { return r.Spec.FailedAt != "" }
func running(r *longhorn.Replica) bool   { return r.Status.CurrentState == longhorn.InstanceStateRunning }
func scheduled(r *longhorn.Replica) bool { return r.Spec.NodeID != "" && r.Spec.DiskID != "" }
func deleting(r *longhorn.Replica) bool  { return r.DeletionTimestamp != nil }

// markFailed records a replica failure: failedAt, desired stopped, out of
// the engine.
func (s *volumeSnapshot) markFailed(r *longhorn.Replica) {
	if failed(r) {
		return
	}
	r.Spec.FailedAt, r.Spec.LastFailedAt = s.nowString(), s.nowString()
	r.Spec.DesireState = longhorn.InstanceStateStopped
	delete(s.eng.Spec.ReplicaAddressMap, r.Name)
}

// reconcileReplicaHealth reads the engine's replica modes (ERR -> failed,
// RW -> healthy), catches replica processes that died, and fails replicas
// on down nodes while the volume is attached.
func (c *VolumeController) reconcileReplicaHealth(ctx context.Context, s *volumeSnapshot) error {
	engineUp := s.engRO.Status.CurrentState == longhorn.InstanceStateRunning
	attached := s.vol.Status.State == longhorn.VolumeStateAttached || s.vol.Status.State == longhorn.VolumeStateAttaching
	for _, r := range s.sortedReplicas() {
		if s.fresh[r.Name] || deleting(r) || failed(r) {
			continue
		}
		mode := s.engRO.Status.ReplicaModeMap[r.Name]
		switch {
		case engineUp && mode == longhorn.ReplicaModeERR:
			s.markFailed(r)
			c.recorder.Eventf(s.vol, corev1.EventTypeWarning, "ReplicaFailed", "Replica %s failed in the engine", r.Name)
		case r.Spec.DesireState == longhorn.InstanceStateRunning && r.Status.CurrentState == longhorn.InstanceStateError:
			s.markFailed(r)
			c.recorder.Eventf(s.vol, corev1.EventTypeWarning, "ReplicaFailed", "Replica %s process failed", r.Name)
		case attached && r.Spec.NodeID != "" && c.isNodeDownOrDeleted(ctx, r.Spec.NodeID):
			s.markFailed(r)
			c.recorder.Eventf(s.vol, corev1.EventTypeWarning, "ReplicaFailed", "Replica %s is on down node %s", r.Name, r.Spec.NodeID)
		case engineUp && mode == longhorn.ReplicaModeRW && r.Spec.HealthyAt == "":
			r.Spec.HealthyAt, r.Spec.LastHealthyAt = s.nowString(), s.nowString()
		}
	}
	return nil
}

// adopting reports whether `longhorn adopt` is creating the volume's
// Replica objects from existing directories: the volume's replicas are then
// left alone (types.AdoptionAnnotation).
func adopting(v *longhorn.Volume) bool {
	_, ok := v.Annotations[types.AdoptionAnnotation]
	return ok
}

// replicaCounts summarises the working replicas.
type replicaCounts struct {
	active, usable, healthyRW, rebuilding int
	// evicting and evictingRW count the usable and the healthy RW replicas
	// whose spec.evictionRequested is set.
	evicting, evictingRW int
	// withData counts the usable replicas that held the volume's data once
	// (healthyAt set): replacements made after a failure do not.
	withData    int
	everHealthy bool
}

func (s *volumeSnapshot) counts() replicaCounts {
	var n replicaCounts
	modes := s.engRO.Status.ReplicaModeMap
	for _, r := range s.sortedReplicas() {
		if deleting(r) {
			continue
		}
		n.active++
		if r.Spec.HealthyAt != "" || r.Spec.LastHealthyAt != "" {
			n.everHealthy = true
		}
		if failed(r) {
			continue
		}
		n.usable++
		if r.Spec.EvictionRequested {
			n.evicting++
		}
		if r.Spec.HealthyAt != "" {
			n.withData++
		}
		switch {
		case modes[r.Name] == longhorn.ReplicaModeRW && running(r):
			n.healthyRW++
			if r.Spec.EvictionRequested {
				n.evictingRW++
			}
		case modes[r.Name] == longhorn.ReplicaModeWO || s.fresh[r.Name] || r.Spec.HealthyAt == "":
			n.rebuilding++
		}
	}
	return n
}

// reconcileReplenish creates the replicas a new volume needs, and, while
// attached and degraded, replaces one failed replica at a time: reuse a
// failed replica if the scheduler finds one reusable, else wait for
// replica-replenishment-wait-interval, else create a new one.
func (c *VolumeController) reconcileReplenish(_ context.Context, s *volumeSnapshot) error {
	if adopting(s.vol) {
		return nil
	}
	want := s.vol.Spec.NumberOfReplicas
	n := s.counts()
	if !n.everHealthy {
		for i := n.active; i < want; i++ {
			s.newReplica(c.opts.Namespace, "")
		}
		return nil
	}
	attached := s.vol.Status.State == longhorn.VolumeStateAttached && s.engRO.Status.CurrentState == longhorn.InstanceStateRunning
	if !attached || n.usable-n.evicting >= want || n.rebuilding > 0 || n.healthyRW == 0 {
		return nil
	}
	reps := s.schedReplicas()
	for i := range reps {
		// A failed replica is reused only once its old process is gone.
		if r := s.reps[reps[i].Name]; failed(r) && r.Status.CurrentState != longhorn.InstanceStateStopped && r.Status.CurrentState != "" {
			reps[i].Active = false
		}
	}
	in := scheduler.ReuseInput{Volume: s.schedVolume(), Replicas: reps, Nodes: s.schedNodes(),
		Settings: s.settings.sched, Now: s.now}
	if name, ok, _ := scheduler.FindReusableReplica(in); ok {
		r := s.reps[name]
		r.Spec.FailedAt = ""
		r.Spec.RebuildRetryCount++
		r.Spec.DesireState = longhorn.InstanceStateRunning
		c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "ReusingReplica", "Reusing failed replica %s for rebuilding", name)
		return nil
	}
	if wait := scheduler.RequireNewReplica(in); wait > 0 {
		s.waitAtMost(wait)
		return nil
	}
	r := s.newReplica(c.opts.Namespace, "")
	if n.usable >= want {
		c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "Evicting", "Creating replica %s to replace %d evicting replicas", r.Name, n.evicting)
		return nil
	}
	c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "Replenishing", "Creating replica %s to replace failed replicas", r.Name)
	return nil
}

// reconcileCleanup deletes replicas that are no longer useful: failed
// replicas that cannot be reused, failed replicas once the volume is healthy
// again or after staleReplicaTimeout minutes, and unscheduled replicas the
// volume no longer needs.
func (c *VolumeController) reconcileCleanup(_ context.Context, s *volumeSnapshot) error {
	if adopting(s.vol) {
		return nil
	}
	n := s.counts()
	healthy := s.vol.Status.Robustness == longhorn.VolumeRobustnessHealthy && n.healthyRW >= s.vol.Spec.NumberOfReplicas
	stale := time.Duration(s.vol.Spec.StaleReplicaTimeout) * time.Minute
	// Usable replicas: the placed ones first, then the unplaced; an unplaced
	// replica beyond spec.numberOfReplicas goes (the count was lowered, or
	// placement caught up), even while every placed one has failed.
	usable := 0
	for _, r := range s.sortedReplicas() {
		if !failed(r) && scheduled(r) && !deleting(r) && !r.Spec.EvictionRequested {
			usable++
		}
	}
	for _, r := range s.sortedReplicas() {
		if s.fresh[r.Name] || deleting(r) {
			continue
		}
		switch {
		case failed(r) && (!scheduler.IsPotentiallyReusable(schedReplica(r, s)) || healthy ||
			(stale > 0 && s.now.Sub(parseTime(r.Spec.FailedAt)) > stale)):
			s.deleteReplica(r)
		case !failed(r) && !scheduled(r) && usable >= s.vol.Spec.NumberOfReplicas:
			s.deleteReplica(r)
		case !failed(r) && !scheduled(r):
			usable++
		}
	}
	if !c.evictReplicas(s) {
		s.removeExtraReplicas(healthy)
	}
	return nil
}

// removeExtraReplicas deletes placed replicas beyond spec.numberOfReplicas
// (the count was lowered, or data locality added a local one): when
// detached, or when attached and healthy, and then counting only the RW
// replicas, so a replica still rebuilding never makes a healthy one go.
// Replicas on nodes that hold more than one replica of the volume go first,
// then those in the zone holding the most, a replica on the attached node of a best-effort volume last, then the
// last by name.
func (s *volumeSnapshot) removeExtraReplicas(healthy bool) {
	attached := false
	switch s.vol.Status.State {
	case longhorn.VolumeStateDetached:
	case longhorn.VolumeStateAttached:
		if !healthy {
			return
		}
		attached = true
	default:
		return
	}
	modes := s.engRO.Status.ReplicaModeMap
	var keep []*longhorn.Replica
	perNode, perZone := map[string]int{}, map[string]int{}
	for _, r := range s.sortedReplicas() {
		if !failed(r) && scheduled(r) && !deleting(r) && !s.fresh[r.Name] &&
			(!attached || (running(r) && modes[r.Name] == longhorn.ReplicaModeRW)) {
			keep = append(keep, r)
			perNode[r.Spec.NodeID]++
			perZone[s.zoneOf(r.Spec.NodeID)]++
		}
	}
	extra := len(keep) - s.vol.Spec.NumberOfReplicas
	if extra <= 0 {
		return
	}
	local := s.localityNode()
	sort.SliceStable(keep, func(i, j int) bool {
		a, b := perNode[keep[i].Spec.NodeID], perNode[keep[j].Spec.NodeID]
		if a != b {
			return a > b
		}
		if a, b := perZone[s.zoneOf(keep[i].Spec.NodeID)], perZone[s.zoneOf(keep[j].Spec.NodeID)]; a != b {
			return a > b
		}
		if li, lj := keep[i].Spec.NodeID == local, keep[j].Spec.NodeID == local; li != lj {
			return lj
		}
		return keep[i].Name > keep[j].Name
	})
	for _, r := range keep[:extra] {
		s.deleteReplica(r)
	}
}

func (s *volumeSnapshot) deleteReplica(r *longhorn.Replica) {
	s.gone[r.Name] = true
	delete(s.eng.Spec.ReplicaAddressMap, r.Name)
}

// salvageCandidates picks the failed replicas auto-salvage brings back: those
// that were healthy once, sit on an up node, and failed within a minute of
// the last failure (Longhorn's auto-salvage keeps the newest data).
func (c *VolumeController) salvageCandidates(ctx context.Context, s *volumeSnapshot) []*longhorn.Replica {
	var last time.Time
	var cands []*longhorn.Replica
	for _, r := range s.sortedReplicas() {
		if deleting(r) || !failed(r) || r.Spec.HealthyAt == "" || r.Spec.NodeID == "" || c.isNodeDownOrDeleted(ctx, r.Spec.NodeID) {
			continue
		}
		cands = append(cands, r)
		if t := parseTime(r.Spec.FailedAt); t.After(last) {
			last = t
		}
	}
	var out []*longhorn.Replica
	for _, r := range cands {
		if last.Sub(parseTime(r.Spec.FailedAt)) <= time.Minute {
			out = append(out, r)
		}
	}
	return out
}

package controller

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// reconcileRobustness derives robustness with lifecycle.NextRobustness and
// carries out its side effects: lastDegradedAt, the faulted event and
// auto-salvage.
func (c *VolumeController) reconcileRobustness(ctx context.Context, s *volumeSnapshot) error {
	n := s.counts()
	o := lifecycle.RobustnessObserved{State: lifecycle.VolumeState(s.vol.Status.State),
		Engine: lifecycle.InstanceState(s.engRO.Status.CurrentState), HealthyRW: n.healthyRW,
		Usable: n.usable, Total: n.active, Want: s.vol.Spec.NumberOfReplicas}
	if !n.everHealthy {
		o.Total = 0 // a volume whose replicas never held data is not faulted
	} else {
		// Replacements that never held data cannot serve it: a volume whose
		// every data-holding replica failed is faulted (and auto-salvage
		// considered) however many fresh replicas were made meanwhile.
		o.Usable = n.withData
	}
	next, acts := lifecycle.NextRobustness(lifecycle.Robustness(s.vol.Status.Robustness), o)
	s.vol.Status.Robustness = longhorn.VolumeRobustness(next)
	for _, a := range acts {
		switch a {
		case lifecycle.ActionRecordDegraded:
			s.vol.Status.LastDegradedAt = s.nowString()
		case lifecycle.ActionClearDegraded:
			s.vol.Status.LastDegradedAt = ""
		case lifecycle.ActionEventFaulted:
			c.recorder.Eventf(s.vol, corev1.EventTypeWarning, "Faulted", "All replicas of volume %s failed", s.vol.Name)
		case lifecycle.ActionConsiderSalvage:
			c.salvage(ctx, s)
		}
	}
	return nil
}

// salvage, with auto-salvage on and the volume detached, clears the failure
// of the replicas with the newest data so the volume can attach again.
func (c *VolumeController) salvage(ctx context.Context, s *volumeSnapshot) {
	if !s.settings.autoSalvage || s.vol.Status.State != longhorn.VolumeStateDetached {
		return
	}
	cands := c.salvageCandidates(ctx, s)
	for _, r := range cands {
		r.Spec.FailedAt = ""
	}
	if len(cands) > 0 {
		s.vol.Status.LastAutoSalvagedAt = s.nowString()
		c.recorder.Eventf(s.vol, corev1.EventTypeWarning, "AutoSalvaged", "Salvaged %d replica(s) of volume %s", len(cands), s.vol.Name)
	}
}

// reconcileConditions sets Restore (no restore in progress) and
// TooManySnapshots (snapshot count against
// snapshot-count-warning-threshold), and the actual size from the engine's
// snapshots.
func (c *VolumeController) reconcileConditions(_ context.Context, s *volumeSnapshot) error {
	ts := s.nowString()
	if longhorn.GetCondition(s.vol.Status.Conditions, longhorn.VolumeConditionTypeRestore).Status == longhorn.ConditionStatusUnknown {
		s.vol.Status.Conditions = setCond(s.vol.Status.Conditions, longhorn.VolumeConditionTypeRestore, false, "", "", ts)
	}
	count, size := 0, int64(0)
	for name, snap := range s.engRO.Status.Snapshots {
		if n, err := strconv.ParseInt(snap.Size, 10, 64); err == nil {
			size += n
		}
		if name != "volume-head" && !snap.Removed {
			count++
		}
	}
	if s.engRO.Status.Snapshots != nil {
		s.vol.Status.ActualSize = size
	}
	if limit := s.settings.snapshotWarnThreshold; limit > 0 && int64(count) >= limit {
		s.vol.Status.Conditions = setCond(s.vol.Status.Conditions, longhorn.VolumeConditionTypeTooManySnapshots, true,
			longhorn.VolumeConditionReasonTooManySnapshots,
			fmt.Sprintf("Snapshots count is %d over the warning threshold %d", count, limit), ts)
	} else {
		s.vol.Status.Conditions = setCond(s.vol.Status.Conditions, longhorn.VolumeConditionTypeTooManySnapshots, false, "", "", ts)
	}
	return nil
}

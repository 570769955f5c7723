package controller

import (
	"context"
	"sort"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/scheduler"
	"github.com/longhorn-go/longhorn/types"
)

// schedulingRetry is how soon an unschedulable replica is tried again even
// without an event (disk space changes are only seen by the disk monitor).
const schedulingRetry = 30 * time.Second

// reconcileScheduling places every unscheduled replica with the scheduler
// and sets the Scheduled condition: True when every replica has a disk,
// False with reason ReplicaSchedulingFailure and the scheduler's message
// (Longhorn's codes, then why each candidate was rejected) otherwise.
func (c *VolumeController) reconcileScheduling(_ context.Context, s *volumeSnapshot) error {
	var failed scheduler.Reasons
	strictWait := false
	for _, r := range s.sortedReplicas() {
		if r.Spec.NodeID != "" || r.DeletionTimestamp != nil || r.Spec.FailedAt != "" {
			continue
		}
		if !s.strictLocalAffinity(r) {
			strictWait = true
			continue
		}
		in := scheduler.Input{Volume: s.schedVolume(), Replica: schedReplica(r, s), Replicas: s.schedReplicas(),
			Nodes: s.schedNodes(), Settings: s.settings.sched, Now: s.now}
		d, ok, reasons := scheduler.Schedule(in)
		if !ok {
			failed = append(failed, reasons...)
			continue
		}
		r.Spec.NodeID, r.Spec.DiskID, r.Spec.DiskPath = d.NodeID, d.DiskUUID, d.DiskPath
		r.Spec.DataDirectoryName = types.ReplicaDataDirectoryName(s.vol.Name, types.DeterministicID(r.Name, 0))
		r.Labels = types.ReplicaLabels(s.vol.Name, d.NodeID, d.DiskUUID)
	}
	if msg := s.strictLocalMismatch(); strictWait || msg != "" {
		if msg == "" {
			msg = "waiting for the volume to attach: a strict-local replica is placed on the node the volume attaches to"
		}
		s.vol.Status.Conditions = setCond(s.vol.Status.Conditions, longhorn.VolumeConditionTypeScheduled, false,
			longhorn.VolumeConditionReasonLocalReplicaSchedulingFailure, msg, s.nowString())
		return nil
	}
	if len(failed) > 0 {
		s.vol.Status.Conditions = setCond(s.vol.Status.Conditions, longhorn.VolumeConditionTypeScheduled, false,
			longhorn.VolumeConditionReasonReplicaSchedulingFailure, failed.Message(), s.nowString())
		s.waitAtMost(schedulingRetry)
		return nil
	}
	s.vol.Status.Conditions = setCond(s.vol.Status.Conditions, longhorn.VolumeConditionTypeScheduled, true, "", "", s.nowString())
	return nil
}

// schedVolume is the volume as the scheduler sees it.
func (s *volumeSnapshot) schedVolume() scheduler.Volume {
	v := s.vol
	out := scheduler.Volume{Name: v.Name, Size: v.Spec.Size, ActualSize: v.Status.ActualSize,
		DataEngine: scheduler.DataEngine(v.Spec.DataEngine), NodeSelector: v.Spec.NodeSelector, DiskSelector: v.Spec.DiskSelector,
		DataLocality: string(v.Spec.DataLocality), NodeID: v.Spec.NodeID, Robustness: string(v.Status.Robustness),
		LastDegradedAt: parseTime(v.Status.LastDegradedAt)}
	if out.DataEngine == "" {
		out.DataEngine = scheduler.DataEngineV1
	}
	for _, t := range v.Spec.TopologyRequirement {
		out.TopologyRequirement = append(out.TopologyRequirement, scheduler.TopologyTerm{Zone: t.Zone, Region: t.Region})
	}
	return out
}

// schedReplica converts a replica.
func schedReplica(r *longhorn.Replica, s *volumeSnapshot) scheduler.Replica {
	im := s.ims[r.Spec.NodeID]
	return scheduler.Replica{Name: r.Name, NodeID: r.Spec.NodeID, DiskID: r.Spec.DiskID, VolumeSize: r.Spec.VolumeSize,
		HealthyAt: parseTime(r.Spec.HealthyAt), FailedAt: parseTime(r.Spec.FailedAt), RebuildRetryCount: r.Spec.RebuildRetryCount,
		EvictionRequested: r.Spec.EvictionRequested, HardNodeAffinity: r.Spec.HardNodeAffinity, Active: r.Spec.Active,
		Deleting:               r.DeletionTimestamp != nil || s.gone[r.Name],
		InstanceManagerRunning: im != nil && im.DeletionTimestamp == nil && im.Status.CurrentState == longhorn.InstanceManagerStateRunning}
}

func (s *volumeSnapshot) schedReplicas() []scheduler.Replica {
	var out []scheduler.Replica
	for _, r := range s.sortedReplicas() {
		out = append(out, schedReplica(r, s))
	}
	return out
}

// schedNodes converts the Longhorn nodes, their disks and instance managers.
// The engine image is the manager's own binary, ready wherever the instance
// manager runs.
func (s *volumeSnapshot) schedNodes() []scheduler.Node {
	names := make([]string, 0, len(s.nodes))
	for n := range s.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []scheduler.Node
	for _, name := range names {
		n := s.nodes[name]
		im := s.ims[name]
		imReady := im != nil && im.DeletionTimestamp == nil && im.Status.CurrentState == longhorn.InstanceManagerStateRunning
		sn := scheduler.Node{Name: name, Zone: n.Status.Zone, Region: n.Status.Region, Deleting: n.DeletionTimestamp != nil,
			Ready:             condTrue(n.Status.Conditions, longhorn.NodeConditionTypeReady),
			Schedulable:       condTrue(n.Status.Conditions, longhorn.NodeConditionTypeSchedulable),
			AllowScheduling:   n.Spec.AllowScheduling,
			EvictionRequested: n.Spec.EvictionRequested, Tags: n.Spec.Tags,
			InstanceManagerReady: imReady, EngineImageReady: imReady}
		for dname, spec := range n.Spec.Disks {
			st := n.Status.DiskStatus[dname]
			if st == nil {
				continue
			}
			sc := longhorn.GetCondition(st.Conditions, longhorn.DiskConditionTypeSchedulable)
			sn.Disks = append(sn.Disks, scheduler.Disk{Name: dname, UUID: st.DiskUUID, Path: spec.Path,
				Type: scheduler.DiskType(spec.Type), FSType: st.FSType, AllowScheduling: spec.AllowScheduling,
				EvictionRequested: spec.EvictionRequested, Tags: spec.Tags,
				Ready:       condTrue(st.Conditions, longhorn.DiskConditionTypeReady),
				Schedulable: sc.Status == longhorn.ConditionStatusTrue, SchedulableReason: sc.Reason,
				StorageMaximum: st.StorageMaximum, StorageAvailable: st.StorageAvailable,
				StorageScheduled: st.StorageScheduled, StorageReserved: spec.StorageReserved,
				ScheduledReplicas: st.ScheduledReplica})
		}
		sort.Slice(sn.Disks, func(i, j int) bool { return sn.Disks[i].Name < sn.Disks[j].Name })
		out = append(out, sn)
	}
	return out
}

func condTrue(conds []longhorn.Condition, typ string) bool {
	return longhorn.GetCondition(conds, typ).Status == longhorn.ConditionStatusTrue
}

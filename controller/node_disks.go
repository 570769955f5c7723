package controller

import (
	"fmt"
	"sort"

	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/scheduler"
)

// diskProbe is what the node controller measured for one disk spec.
type diskProbe struct {
	Config monitor.DiskConfig
	Stat   monitor.DiskStat
	Err    error // statfs or config failure; the disk is then NotReady
}

// capacitySettings are the storage percentages the Schedulable condition uses.
type capacitySettings struct {
	OverProvisioningPercentage int64
	MinimalAvailablePercentage int64
}

// decideDiskStatuses computes status.diskStatus for every disk of the node
// from the probes, the replicas placed on the node (spec.diskID, volume
// size) and the settings:
//
//	probe failed                          -> Ready=False NoDiskInfo, Schedulable=False
//	filesystem shared with another disk   -> Ready=False DiskNotReady for the newcomer (see diskClaimOrder)
//	UUID changed since last status        -> Ready=False DiskFilesystemChanged
//	IsSchedulableToDisk(0, 0) fails       -> Schedulable=False DiskPressure
//	otherwise                             -> Ready=True, Schedulable=True
//
// StorageScheduled is the sum of the sizes of replicas on the disk and
// ScheduledReplica lists them.
func decideDiskStatuses(node *longhorn.Node, probes map[string]diskProbe, replicas []*longhorn.Replica,
	s capacitySettings, now string) map[string]*longhorn.DiskStatus {
	names := diskClaimOrder(node, replicas)
	out := map[string]*longhorn.DiskStatus{}
	fsOwner := map[string]string{}
	for _, name := range names {
		spec := node.Spec.Disks[name]
		prev := node.Status.DiskStatus[name]
		st := &longhorn.DiskStatus{DiskName: name, DiskPath: spec.Path, Type: spec.Type, DiskDriver: spec.DiskDriver}
		if prev != nil {
			st.Conditions = append([]longhorn.Condition(nil), prev.Conditions...)
		}
		p := probes[name]
		ready, reason, msg := diskReadiness(name, prev, p, fsOwner)
		if p.Err == nil {
			st.DiskUUID, st.FSType = p.Config.DiskUUID, p.Stat.FSType
			st.StorageMaximum, st.StorageAvailable = p.Stat.StorageMaximum, p.Stat.StorageAvailable
		}
		st.ScheduledReplica, st.StorageScheduled = scheduledOn(st.DiskUUID, replicas)
		st.Conditions = setCond(st.Conditions, longhorn.DiskConditionTypeReady, ready, reason, msg, now)
		sched, sreason, smsg := diskSchedulable(ready, st, spec, s)
		st.Conditions = setCond(st.Conditions, longhorn.DiskConditionTypeSchedulable, sched, sreason, smsg, now)
		out[name] = st
	}
	return out
}

// diskClaimOrder is the order in which disks claim their filesystem: first
// the disks that hold replicas or were Ready, then the others, each group by
// name. A disk added on the filesystem of a disk in use is refused (Ready=
// False, naming the other disk); the disk in use is left alone.
func diskClaimOrder(node *longhorn.Node, replicas []*longhorn.Replica) []string {
	inUse := map[string]bool{}
	for name := range node.Spec.Disks {
		prev := node.Status.DiskStatus[name]
		if prev == nil {
			continue
		}
		if c := longhorn.GetCondition(prev.Conditions, longhorn.DiskConditionTypeReady); c.Status == longhorn.ConditionStatusTrue {
			inUse[name] = true
		}
		if _, n := scheduledOn(prev.DiskUUID, replicas); n > 0 {
			inUse[name] = true
		}
	}
	names := make([]string, 0, len(node.Spec.Disks))
	for n := range node.Spec.Disks {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if inUse[names[i]] != inUse[names[j]] {
			return inUse[names[i]]
		}
		return names[i] < names[j]
	})
	return names
}

func diskReadiness(name string, prev *longhorn.DiskStatus, p diskProbe, fsOwner map[string]string) (bool, string, string) {
	switch {
	case p.Err != nil:
		return false, longhorn.DiskConditionReasonNoDiskInfo, fmt.Sprintf("Disk %s cannot be read: %v", name, p.Err)
	case fsOwner[p.Stat.FSID] != "":
		return false, longhorn.DiskConditionReasonDiskNotReady,
			fmt.Sprintf("Disk %s is on the same filesystem as disk %s", name, fsOwner[p.Stat.FSID])
	case prev != nil && prev.DiskUUID != "" && prev.DiskUUID != p.Config.DiskUUID:
		return false, longhorn.DiskConditionReasonDiskFilesystemChanged,
			fmt.Sprintf("Disk %s changed its UUID from %s to %s", name, prev.DiskUUID, p.Config.DiskUUID)
	}
	fsOwner[p.Stat.FSID] = name
	return true, "", ""
}

func diskSchedulable(ready bool, st *longhorn.DiskStatus, spec longhorn.DiskSpec, s capacitySettings) (bool, string, string) {
	if !ready {
		return false, longhorn.DiskConditionReasonDiskNotReady, "Disk is not ready"
	}
	c := scheduler.DiskCapacity{StorageMaximum: st.StorageMaximum, StorageAvailable: st.StorageAvailable,
		StorageScheduled: st.StorageScheduled, StorageReserved: spec.StorageReserved,
		OverProvisioningPercentage: s.OverProvisioningPercentage, MinimalAvailablePercentage: s.MinimalAvailablePercentage}
	if ok, why := scheduler.IsSchedulableToDisk(0, 0, c); !ok {
		return false, longhorn.DiskConditionReasonDiskPressure, "Disk is under pressure: " + why
	}
	return true, "", ""
}

// scheduledOn lists the replicas on disk uuid and sums their sizes.
func scheduledOn(uuid string, replicas []*longhorn.Replica) (map[string]int64, int64) {
	m := map[string]int64{}
	var sum int64
	if uuid == "" {
		return m, 0
	}
	for _, r := range replicas {
		if r.Spec.DiskID == uuid {
			m[r.Name] = r.Spec.VolumeSize
			sum += r.Spec.VolumeSize
		}
	}
	return m, sum
}

// setCond sets a condition on a slice the caller owns. An unchanged
// condition (same status, reason and message) is left alone, probe time
// included, so an unchanged status does not cause a write.
func setCond(conds []longhorn.Condition, typ string, ok bool, reason, msg, now string) []longhorn.Condition {
	status := longhorn.ConditionStatusFalse
	if ok {
		status = longhorn.ConditionStatusTrue
	}
	for _, c := range conds {
		if c.Type == typ && c.Status == status && c.Reason == reason && c.Message == msg {
			return conds
		}
	}
	return longhorn.SetCondition(conds, typ, status, reason, msg, now)
}

// conditionsEqual compares conditions ignoring the probe time.
func conditionsEqual(a, b []longhorn.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message {
			return false
		}
	}
	return true
}

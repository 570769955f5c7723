package controller

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/scheduler"
	"github.com/longhorn-go/longhorn/types"
)

// volumeSnapshot is what one volume sync works on: read-only cache objects
// (the *RO fields, never changed) and working copies the steps change.
// applyChanges writes the difference.
type volumeSnapshot struct {
	volRO *longhorn.Volume
	vol   *longhorn.Volume

	engRO *longhorn.Engine // nil when the volume has no engine yet
	eng   *longhorn.Engine

	repRO map[string]*longhorn.Replica
	reps  map[string]*longhorn.Replica // working copies, new replicas included
	fresh map[string]bool              // replicas to create
	gone  map[string]bool              // replicas to delete

	nodes    map[string]*longhorn.Node            // RO
	ims      map[string]*longhorn.InstanceManager // RO, by node
	cordoned map[string]bool                      // Kubernetes nodes with spec.unschedulable
	settings volumeSettings
	now      time.Time

	requeueAfter time.Duration
}

// volumeSettings are the settings the volume steps use, resolved once.
type volumeSettings struct {
	sched                  scheduler.Settings
	autoSalvage            bool
	snapshotWarnThreshold  int64
	disableRevisionCounter bool
	// drainPolicy is node-drain-policy (drainEvicts).
	drainPolicy string
}

// observe loads the snapshot from the caches.
func (c *VolumeController) observe(ctx context.Context, vRO *longhorn.Volume) (*volumeSnapshot, error) {
	s := &volumeSnapshot{volRO: vRO, vol: vRO.DeepCopy(), repRO: map[string]*longhorn.Replica{},
		reps: map[string]*longhorn.Replica{}, fresh: map[string]bool{}, gone: map[string]bool{},
		nodes: map[string]*longhorn.Node{}, ims: map[string]*longhorn.InstanceManager{}, cordoned: map[string]bool{}, now: c.now()}
	engines, err := c.ds.ListEnginesByVolumeRO(ctx, vRO.Name)
	if err != nil {
		return nil, err
	}
	sort.Slice(engines, func(i, j int) bool { return engines[i].Name < engines[j].Name })
	if len(engines) > 0 {
		s.engRO, s.eng = engines[0], engines[0].DeepCopy()
	}
	replicas, err := c.ds.ListReplicasByVolumeRO(ctx, vRO.Name)
	if err != nil {
		return nil, err
	}
	for _, r := range replicas {
		s.repRO[r.Name], s.reps[r.Name] = r, r.DeepCopy()
	}
	// Replicas created by an earlier sync that the cache does not show yet
	// count as existing, so none is created twice.
	for _, r := range c.expect.pending(vRO.Name, s.repRO, s.now) {
		s.repRO[r.Name], s.reps[r.Name] = r, r.DeepCopy()
	}
	nodes, err := c.ds.ListNodesRO(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		s.nodes[n.Name] = n
	}
	for name := range s.nodes {
		if im, err := c.instanceManagerFor(ctx, name, "", vRO.Status.CurrentImage); err == nil && im != nil {
			s.ims[name] = im
		}
		if kn, err := c.kubeNodes.Get(name); err == nil && kn.Spec.Unschedulable {
			s.cordoned[name] = true
		}
	}
	s.settings, err = c.loadVolumeSettings(ctx, vRO)
	return s, err
}

// loadVolumeSettings resolves the settings, merging the volume's
// anti-affinity and auto-balance overrides.
func (c *VolumeController) loadVolumeSettings(ctx context.Context, v *longhorn.Volume) (volumeSettings, error) {
	var out volumeSettings
	bools := map[types.SettingName]*bool{
		types.SettingNameAllowEmptyNodeSelectorVolume: &out.sched.AllowEmptyNodeSelectorVolume,
		types.SettingNameAllowEmptyDiskSelectorVolume: &out.sched.AllowEmptyDiskSelectorVolume,
		types.SettingNameReplicaSoftAntiAffinity:      &out.sched.NodeSoftAntiAffinity,
		types.SettingNameReplicaZoneSoftAntiAffinity:  &out.sched.ZoneSoftAntiAffinity,
		types.SettingNameReplicaDiskSoftAntiAffinity:  &out.sched.DiskSoftAntiAffinity,
		types.SettingNameAutoSalvage:                  &out.autoSalvage,
	}
	for name, dst := range bools {
		b, err := c.ds.GetSettingAsBool(ctx, name)
		if err != nil {
			return out, fmt.Errorf("setting %s: %w", name, err)
		}
		*dst = b
	}
	ints := map[types.SettingName]*int64{
		types.SettingNameStorageOverProvisioningPercentage: &out.sched.OverProvisioningPercentage,
		types.SettingNameStorageMinimalAvailablePercentage: &out.sched.MinimalAvailablePercentage,
		types.SettingNameSnapshotCountWarningThreshold:     &out.snapshotWarnThreshold,
	}
	for name, dst := range ints {
		n, err := c.ds.GetSettingAsInt(ctx, name)
		if err != nil {
			return out, fmt.Errorf("setting %s: %w", name, err)
		}
		*dst = n
	}
	wait, err := c.ds.GetSettingAsInt(ctx, types.SettingNameReplicaReplenishmentWaitInterval)
	if err != nil {
		return out, err
	}
	out.sched.ReplenishmentWaitInterval = time.Duration(wait) * time.Second
	balance, err := c.ds.GetSettingValue(ctx, types.SettingNameReplicaAutoBalance)
	if err != nil {
		return out, err
	}
	out.sched.ReplicaAutoBalance = balance
	if v.Spec.ReplicaAutoBalance != "" && v.Spec.ReplicaAutoBalance != longhorn.ReplicaAutoBalanceIgnored {
		out.sched.ReplicaAutoBalance = string(v.Spec.ReplicaAutoBalance)
	}
	out.sched.NodeSoftAntiAffinity = scheduler.ResolveSoftAntiAffinity(out.sched.NodeSoftAntiAffinity, string(v.Spec.ReplicaSoftAntiAffinity))
	out.sched.ZoneSoftAntiAffinity = scheduler.ResolveSoftAntiAffinity(out.sched.ZoneSoftAntiAffinity, string(v.Spec.ReplicaZoneSoftAntiAffinity))
	out.sched.DiskSoftAntiAffinity = scheduler.ResolveSoftAntiAffinity(out.sched.DiskSoftAntiAffinity, string(v.Spec.ReplicaDiskSoftAntiAffinity))
	if out.drainPolicy, err = c.ds.GetSettingValue(ctx, types.SettingNameNodeDrainPolicy); err != nil {
		return out, err
	}
	out.disableRevisionCounter, err = c.ds.GetSettingAsBoolByDataEngine(ctx, types.SettingNameDisableRevisionCounter, longhorn.DataEngineTypeV1)
	return out, err
}

// sortedReplicas returns the active working replicas (not being deleted
// here) in name order. Inactive replicas (spec.active false: the new image's
// twins of a live engine upgrade, or the old replicas it replaced) are the
// upgrade step's alone.
func (s *volumeSnapshot) sortedReplicas() []*longhorn.Replica {
	out := s.allReplicas()
	return slices.DeleteFunc(out, func(r *longhorn.Replica) bool { return !r.Spec.Active })
}

// allReplicas returns every working replica, inactive ones included (not
// being deleted here), in name order.
func (s *volumeSnapshot) allReplicas() []*longhorn.Replica {
	out := make([]*longhorn.Replica, 0, len(s.reps))
	for n, r := range s.reps {
		if !s.gone[n] {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// nowString is now in RFC 3339, as Longhorn stores timestamps.
func (s *volumeSnapshot) nowString() string { return s.now.UTC().Format(time.RFC3339) }

// applyChanges writes creations, spec changes, deletions, the volume spec
// and the volume status, in that order. The first error stops it; the next sync retries
// from fresh caches (created replicas are expected until the cache shows
// them, so a retry does not create them again).
func (c *VolumeController) applyChanges(ctx context.Context, s *volumeSnapshot) error {
	for _, r := range s.allReplicas() {
		if !s.fresh[r.Name] {
			continue
		}
		out, err := c.ds.CreateReplica(ctx, r)
		if err != nil {
			return fmt.Errorf("create replica %s: %w", r.Name, err)
		}
		c.expect.created(out, s.now)
	}
	for _, r := range s.allReplicas() {
		ro := s.repRO[r.Name]
		if ro == nil || s.fresh[r.Name] {
			continue
		}
		if !reflect.DeepEqual(ro.Spec, r.Spec) || !reflect.DeepEqual(ro.Labels, r.Labels) {
			if _, err := c.ds.UpdateReplica(ctx, r); err != nil {
				return fmt.Errorf("update replica %s: %w", r.Name, err)
			}
		}
	}
	if s.eng != nil && s.engRO != nil && !reflect.DeepEqual(s.engRO.Spec, s.eng.Spec) {
		if _, err := c.ds.UpdateEngine(ctx, s.eng); err != nil {
			return fmt.Errorf("update engine %s: %w", s.eng.Name, err)
		}
	}
	for name := range s.gone {
		if err := c.ds.DeleteReplica(ctx, name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete replica %s: %w", name, err)
		}
	}
	if !reflect.DeepEqual(s.volRO.Spec, s.vol.Spec) {
		// Only a failed live upgrade writes the spec (spec.image back).
		out, err := c.ds.UpdateVolume(ctx, s.vol)
		if err != nil {
			return fmt.Errorf("update volume: %w", err)
		}
		s.vol.ResourceVersion = out.ResourceVersion
	}
	if !reflect.DeepEqual(s.volRO.Status, s.vol.Status) {
		if _, err := c.ds.UpdateVolumeStatus(ctx, s.vol); err != nil {
			return fmt.Errorf("update volume status: %w", err)
		}
	}
	return nil
}

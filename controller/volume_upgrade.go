package controller

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// reconcileEngineUpgrade moves a volume to spec.image (Longhorn's engine
// upgrade):
//   - detached: the engine and replicas get the image while stopped, and
//     status.currentImage follows (offline upgrade);
//   - attached (live upgrade, liveUpgrade): twins of the engine's replicas
//     start in the new image's instance managers on the same data
//     directories (spec.active false), the engine gets
//     spec.upgradedReplicaAddressMap and the new image, and the engine
//     controller hands the volume to a new engine (reconcileUpgrade);
//     once the engine runs the new image, finishLiveUpgrade makes the twins
//     the replicas;
//   - a failed attempt (the engine's LiveUpgrade condition says
//     FailedEngineUpgrade, or a twin failed) is rolled back: spec.image
//     back to status.currentImage, twins removed, event FailedEngineUpgrade;
//   - spec.image back to status.currentImage during an upgrade (a user's
//     rollback) or a detach cancels it.
//
// Twins are removed only while the engine controller does not hold the
// upgrade (lifecycle.EngineUpgradePhase.Holding): the old engine may need
// them closed before it serves again. A new volume takes spec.image at once.
func (c *VolumeController) reconcileEngineUpgrade(ctx context.Context, s *volumeSnapshot) error {
	v := s.vol
	if s.finishLiveUpgrade(c) {
		return nil
	}
	phase, cond := upgradePhase(s.engRO)
	switch {
	case v.Status.CurrentImage == "":
	case phase == lifecycle.UpgradeFailed && s.engRO.Spec.Image != v.Status.CurrentImage:
		c.rollbackLiveUpgrade(s, phase, cond.Message)
		return nil
	case v.Spec.Image == v.Status.CurrentImage || v.Status.State != longhorn.VolumeStateAttached:
		s.cancelLiveUpgrade(phase)
		if len(s.twins()) > 0 || v.Spec.Image == v.Status.CurrentImage || !offlineUpgradable(s) {
			return nil
		}
	default:
		return c.liveUpgrade(ctx, s, phase)
	}
	if s.eng != nil {
		s.eng.Spec.Image = v.Spec.Image
	}
	for _, r := range s.reps {
		r.Spec.Image = v.Spec.Image
	}
	v.Status.CurrentImage = v.Spec.Image
	return nil
}

// twins are the inactive replicas (live-upgrade twins), not being deleted.
func (s *volumeSnapshot) twins() []*longhorn.Replica {
	var out []*longhorn.Replica
	for _, r := range s.allReplicas() {
		if !r.Spec.Active && !deleting(r) {
			out = append(out, r)
		}
	}
	return out
}

// cancelLiveUpgrade takes a live upgrade back from the engine's spec and,
// once the engine controller no longer holds it, removes the twins. The
// engine's spec.image goes back while attached, and also when the volume
// no longer asks for another image (a rollback found while detaching: the
// engine was lost during the upgrade and must restart on the old image).
func (s *volumeSnapshot) cancelLiveUpgrade(phase lifecycle.EngineUpgradePhase) {
	if s.eng.Spec.Image != s.vol.Status.CurrentImage &&
		(s.vol.Status.State == longhorn.VolumeStateAttached || s.vol.Spec.Image == s.vol.Status.CurrentImage) {
		s.eng.Spec.Image = s.vol.Status.CurrentImage
	}
	if len(s.eng.Spec.UpgradedReplicaAddressMap) > 0 {
		s.eng.Spec.UpgradedReplicaAddressMap = nil
	}
	if phase.Holding() {
		s.waitAtMost(WaitShort.RequeueAfter)
		return
	}
	for _, t := range s.twins() {
		s.deleteReplica(t)
	}
}

// rollbackLiveUpgrade undoes a failed live upgrade: spec.image back to the
// image the engine runs, the engine's spec too, twins removed.
func (c *VolumeController) rollbackLiveUpgrade(s *volumeSnapshot, phase lifecycle.EngineUpgradePhase, why string) {
	v := s.vol
	target := v.Spec.Image
	if target == v.Status.CurrentImage {
		target = s.engRO.Spec.Image
	}
	v.Spec.Image = v.Status.CurrentImage
	s.cancelLiveUpgrade(phase)
	c.recorder.Eventf(v, corev1.EventTypeWarning, "FailedEngineUpgrade",
		"Live upgrade of volume %s from %s to %s failed and was rolled back: %s", v.Name, v.Status.CurrentImage, target, why)
}

// liveUpgrade advances a live upgrade the engine controller does not hold
// yet: twins for every replica of the engine, then the engine's spec.
func (c *VolumeController) liveUpgrade(ctx context.Context, s *volumeSnapshot, phase lifecycle.EngineUpgradePhase) error {
	v := s.vol
	s.waitAtMost(WaitShort.RequeueAfter)
	if phase.Holding() || s.engRO.Spec.Image == v.Spec.Image {
		return nil // the engine controller is at work
	}
	check, err := c.ds.EngineUpgradeCheck(ctx, s.volRO, v.Spec.Image)
	if err != nil {
		return err
	}
	check.OldImage = v.Status.CurrentImage
	if err := lifecycle.CheckEngineUpgrade(check); err != nil {
		LoggerFrom(ctx).WithError(err).Debug("Live engine upgrade waits")
		return nil
	}
	olds, ok := s.upgradableReplicas()
	if !ok {
		return nil
	}
	byDir := map[string]*longhorn.Replica{}
	for _, t := range s.twins() {
		byDir[replicaDirKey(t)] = t
	}
	addrs := map[string]string{}
	for _, r := range olds {
		t := byDir[replicaDirKey(r)]
		switch {
		case t == nil:
			s.newTwin(c.opts.Namespace, r, v.Spec.Image)
		case t.Status.CurrentState == longhorn.InstanceStateError:
			c.rollbackLiveUpgrade(s, phase, "replica "+t.Name+" of the new image failed to start in "+t.Status.InstanceManagerName)
			return nil
		case running(t) && replicaAddress(t) != "":
			addrs[t.Name] = replicaAddress(t)
		}
	}
	if len(addrs) != len(olds) || phase == lifecycle.UpgradeFailed {
		return nil
	}
	s.eng.Spec.UpgradedReplicaAddressMap = addrs
	s.eng.Spec.Image = v.Spec.Image
	c.recorder.Eventf(v, corev1.EventTypeNormal, "UpgradingEngine", "Upgrading the engine of volume %s live from %s to %s on %d new replicas",
		v.Name, v.Status.CurrentImage, v.Spec.Image, len(addrs))
	return nil
}

// upgradableReplicas returns the replicas of the engine
// (spec.replicaAddressMap): each active, running and RW; false when one is
// not (the upgrade waits).
func (s *volumeSnapshot) upgradableReplicas() ([]*longhorn.Replica, bool) {
	var out []*longhorn.Replica
	for name := range s.engRO.Spec.ReplicaAddressMap {
		r := s.reps[name]
		if r == nil || !r.Spec.Active || s.gone[name] || !running(r) || failed(r) ||
			s.engRO.Status.ReplicaModeMap[name] != longhorn.ReplicaModeRW {
			return nil, false
		}
		out = append(out, r)
	}
	return out, len(out) > 0
}

// replicaDirKey names a replica's data directory.
func replicaDirKey(r *longhorn.Replica) string {
	return r.Spec.NodeID + "\x00" + r.Spec.DiskPath + "\x00" + r.Spec.DataDirectoryName
}

// newTwin adds an inactive replica of image on r's data directory that
// starts at once (it stays closed until the new engine opens it).
func (s *volumeSnapshot) newTwin(namespace string, r *longhorn.Replica, image string) *longhorn.Replica {
	t := s.newReplica(namespace, r.Spec.HardNodeAffinity)
	t.Labels = maps.Clone(r.Labels)
	t.Spec.Image, t.Spec.Active, t.Spec.DesireState = image, false, longhorn.InstanceStateRunning
	t.Spec.NodeID, t.Spec.DiskID, t.Spec.DiskPath, t.Spec.DataDirectoryName = r.Spec.NodeID, r.Spec.DiskID, r.Spec.DiskPath, r.Spec.DataDirectoryName
	t.Spec.VolumeSize, t.Spec.RevisionCounterDisabled = r.Spec.VolumeSize, r.Spec.RevisionCounterDisabled
	return t
}

// finishLiveUpgrade completes an upgrade the engine controller switched
// (the engine runs spec.image with spec.upgradedReplicaAddressMap set): the
// twins become the engine's replicas and active, the replicas they replace
// go (their data directories stay: the replica controller keeps a directory
// another replica uses),
// and status.currentImage follows. It reports whether it did.
func (s *volumeSnapshot) finishLiveUpgrade(c *VolumeController) bool {
	e := s.engRO
	if e == nil || len(e.Spec.UpgradedReplicaAddressMap) == 0 || e.Status.CurrentImage != e.Spec.Image ||
		e.Status.CurrentState != longhorn.InstanceStateRunning {
		return false
	}
	for name := range e.Spec.ReplicaAddressMap {
		if r := s.reps[name]; r != nil && e.Spec.UpgradedReplicaAddressMap[name] == "" {
			s.deleteReplica(r)
		}
	}
	for name := range e.Spec.UpgradedReplicaAddressMap {
		if t := s.reps[name]; t != nil {
			t.Spec.Active = true
			if t.Spec.HealthyAt == "" {
				t.Spec.HealthyAt, t.Spec.LastHealthyAt = s.nowString(), s.nowString()
			}
		}
	}
	for _, r := range s.sortedReplicas() {
		r.Spec.Image = e.Spec.Image // stopped or failed replicas start from it
	}
	s.eng.Spec.ReplicaAddressMap = maps.Clone(e.Spec.UpgradedReplicaAddressMap)
	s.eng.Spec.UpgradedReplicaAddressMap = nil
	from := s.vol.Status.CurrentImage
	s.vol.Status.CurrentImage = e.Spec.Image
	c.recorder.Eventf(s.vol, corev1.EventTypeNormal, "EngineUpgraded", "Volume %s upgraded live from %s to %s", s.vol.Name, from, e.Spec.Image)
	return true
}

// offlineUpgradable: the volume is detached and neither its engine nor any
// replica process runs (their images may change only while stopped).
func offlineUpgradable(s *volumeSnapshot) bool {
	if s.vol.Status.State != longhorn.VolumeStateDetached {
		return false
	}
	if s.eng != nil && !stoppedOrNew(s.eng.Status.CurrentState) {
		return false
	}
	for _, r := range s.reps {
		if !stoppedOrNew(r.Status.CurrentState) {
			return false
		}
	}
	return true
}

// stoppedOrNew: an instance that is stopped or has never been started.
func stoppedOrNew(st longhorn.InstanceState) bool {
	return st == longhorn.InstanceStateStopped || st == ""
}

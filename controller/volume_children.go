package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// ownedBy is the owner reference of a volume's children.
func ownedBy(v *longhorn.Volume) []metav1.OwnerReference {
	isController := true
	return []metav1.OwnerReference{{APIVersion: longhorn.SchemeGroupVersion.String(), Kind: "Volume",
		Name: v.Name, UID: v.UID, Controller: &isController}}
}

// ensureEngine creates the volume's engine "<vol>-e-0" when it has none.
func (c *VolumeController) ensureEngine(ctx context.Context, s *volumeSnapshot) error {
	if s.eng != nil {
		return nil
	}
	v := s.vol
	e := &longhorn.Engine{
		ObjectMeta: metav1.ObjectMeta{Name: types.EngineNameForVolume(v.Name, 0), Namespace: c.opts.Namespace,
			Labels: types.VolumeLabels(v.Name), Finalizers: []string{FinalizerName}, OwnerReferences: ownedBy(v)},
		Spec: longhorn.EngineSpec{
			InstanceSpec: longhorn.InstanceSpec{VolumeName: v.Name, VolumeSize: v.Spec.Size, Image: v.Spec.Image,
				DesireState: longhorn.InstanceStateStopped, DataEngine: longhorn.DataEngineTypeV1},
			Frontend: v.Spec.Frontend, DisableFrontend: v.Spec.DisableFrontend, Active: true,
			RevisionCounterDisabled: v.Spec.RevisionCounterDisabled || s.settings.disableRevisionCounter,
			SnapshotMaxCount:        v.Spec.SnapshotMaxCount, SnapshotMaxSize: v.Spec.SnapshotMaxSize,
		},
	}
	created, err := c.ds.CreateEngine(ctx, e)
	if apierrors.IsAlreadyExists(err) {
		created, err = c.ds.GetEngine(ctx, e.Name)
	}
	if err != nil {
		return fmt.Errorf("create engine %s: %w", e.Name, err)
	}
	s.engRO, s.eng = created, created.DeepCopy()
	return nil
}

// ensureVolumeAttachment creates the volume's VolumeAttachment (same name,
// no tickets) when it is missing.
func (c *VolumeController) ensureVolumeAttachment(ctx context.Context, s *volumeSnapshot) error {
	if _, err := c.ds.GetVolumeAttachmentRO(ctx, s.vol.Name); !apierrors.IsNotFound(err) {
		return err
	}
	va := &longhorn.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: s.vol.Name, Namespace: c.opts.Namespace,
			Labels: types.VolumeLabels(s.vol.Name), OwnerReferences: ownedBy(s.vol)},
		Spec: longhorn.VolumeAttachmentSpec{Volume: s.vol.Name, AttachmentTickets: map[string]*longhorn.AttachmentTicket{}},
	}
	if _, err := c.ds.CreateVolumeAttachment(ctx, va); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create volume attachment: %w", err)
	}
	return nil
}

// reconcileSizes gives the engine and every replica the volume's size; a
// running engine then expands (online expansion), stopped replicas start
// with the new size (offline expansion).
func (c *VolumeController) reconcileSizes(_ context.Context, s *volumeSnapshot) error {
	size := s.vol.Spec.Size
	if s.eng.Spec.VolumeSize < size {
		s.eng.Spec.VolumeSize = size
	}
	for _, r := range s.sortedReplicas() {
		if r.Spec.VolumeSize < size {
			r.Spec.VolumeSize = size
		}
	}
	s.vol.Status.ExpansionRequired = s.eng.Status.CurrentSize != 0 && s.eng.Status.CurrentSize < size
	return nil
}

// newReplica adds an unscheduled replica named "<vol>-r-<8 random hex>"
// (Longhorn's shape), a name no earlier replica of the volume had, so a
// replacement never meets a deleted replica's data directory or events.
func (s *volumeSnapshot) newReplica(namespace, hardNodeAffinity string) *longhorn.Replica {
	v := s.vol
	name := types.ReplicaNameForVolume(v.Name, types.RandomID())
	for s.reps[name] != nil {
		name = types.ReplicaNameForVolume(v.Name, types.RandomID())
	}
	r := &longhorn.Replica{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: types.VolumeLabels(v.Name),
			Finalizers: []string{FinalizerName}, OwnerReferences: ownedBy(v)},
		Spec: longhorn.ReplicaSpec{
			InstanceSpec: longhorn.InstanceSpec{VolumeName: v.Name, VolumeSize: v.Spec.Size, Image: v.Spec.Image,
				DesireState: longhorn.InstanceStateStopped, DataEngine: longhorn.DataEngineTypeV1},
			EngineName: s.eng.Name, Active: true, HardNodeAffinity: hardNodeAffinity,
			RevisionCounterDisabled: s.eng.Spec.RevisionCounterDisabled,
		},
	}
	s.reps[name], s.fresh[name] = r, true
	return r
}

// parseTime reads a Longhorn RFC 3339 timestamp; "" or garbage is zero.
func parseTime(v string) time.Time {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

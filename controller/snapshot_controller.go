package controller

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// SnapshotController keeps Snapshot objects (Longhorn's snapshot CRD) in
// step with the engine's snapshot list, so snapshots show with kubectl:
//   - every snapshot the engine lists (not the head) has a Snapshot object,
//     named after it, whose status mirrors it;
//   - a Snapshot object with spec.createSnapshot that the engine does not
//     list yet is taken (VolumeSnapshot with its name and labels);
//   - deleting a Snapshot object removes the snapshot (marked removed, then
//     a purge) before the finalizer goes;
//   - an object whose snapshot the engine no longer lists is deleted.
//
// Keys are Snapshot keys, or "engine:" + an Engine key for the list sync.
type SnapshotController struct {
	*env
	w *Worker
}

const engineKeyPrefix = "engine:"

func newSnapshotController(e *env) (runner, error) {
	c := &SnapshotController{env: e}
	c.w = NewWorker("longhorn-snapshot", c.sync)
	if err := addHandler(e.ds.SnapshotInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.EngineInformer(), onChange(func(obj any) {
		if eng, ok := obj.(*longhorn.Engine); ok {
			c.w.Enqueue(engineKeyPrefix + c.key(eng.Name))
		}
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *SnapshotController) run(ctx context.Context, workers int) error {
	return c.w.Run(ctx, workers)
}

func (c *SnapshotController) sync(ctx context.Context, key string) (Result, error) {
	if k, ok := strings.CutPrefix(key, engineKeyPrefix); ok {
		return c.syncEngineSnapshots(ctx, splitKey(k))
	}
	return c.syncSnapshot(ctx, key)
}

// snapshotStatusOf is a Snapshot object's status for an engine snapshot. Pure.
func snapshotStatusOf(s *longhorn.SnapshotInfo, owner string, volumeSize int64) longhorn.SnapshotStatus {
	size, _ := strconv.ParseInt(s.Size, 10, 64)
	children := map[string]bool{}
	for ch := range s.Children {
		if ch != "volume-head" {
			children[ch] = true
		}
	}
	return longhorn.SnapshotStatus{Parent: s.Parent, Children: children, MarkRemoved: s.Removed, UserCreated: s.UserCreated,
		CreationTime: s.Created, Size: size, Labels: s.Labels, OwnerID: owner, RestoreSize: volumeSize, ReadyToUse: !s.Removed}
}

// engineOfVolume returns the volume's engine (read-only) or nil.
func (e *env) engineOfVolume(ctx context.Context, volume string) (*longhorn.Engine, error) {
	engines, err := e.ds.ListEnginesByVolumeRO(ctx, volume)
	if err != nil || len(engines) == 0 {
		return nil, err
	}
	slices.SortFunc(engines, func(a, b *longhorn.Engine) int { return strings.Compare(a.Name, b.Name) })
	return engines[0], nil
}

// syncEngineSnapshots creates and refreshes the objects of the snapshots an
// engine lists and deletes the objects of snapshots it no longer lists; for a
// running engine it also queues the objects that wait for it
// (snapshotsAwaitingEngine).
func (c *SnapshotController) syncEngineSnapshots(ctx context.Context, name string) (Result, error) {
	eRO, err := c.ds.GetEngineRO(ctx, name)
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil || eRO.Status.Snapshots == nil || eRO.Status.OwnerID != c.opts.NodeName {
		return Done, err
	}
	vol := eRO.Spec.VolumeName
	objs, err := c.ds.ListSnapshotsByVolumeRO(ctx, vol)
	if err != nil {
		return Done, err
	}
	have := map[string]*longhorn.Snapshot{}
	for _, o := range objs {
		have[o.Name] = o
	}
	for n, s := range eRO.Status.Snapshots {
		if n == "volume-head" || have[n] != nil {
			continue
		}
		obj := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: n, Finalizers: []string{backupFinalizer},
			Labels: map[string]string{types.LonghornLabelVolume: vol}}, Spec: longhorn.SnapshotSpec{Volume: vol, Labels: s.Labels}}
		created, err := c.ds.CreateSnapshot(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return Done, err
		}
		created.Status = snapshotStatusOf(s, c.opts.NodeName, eRO.Spec.VolumeSize)
		if _, err := c.ds.UpdateSnapshotStatus(ctx, created); err != nil {
			return Done, err
		}
	}
	for n, o := range have {
		if _, listed := eRO.Status.Snapshots[n]; listed || o.DeletionTimestamp != nil || (o.Spec.CreateSnapshot && o.Status.CreationTime == "") {
			continue
		}
		if err := c.dropSnapshotObject(ctx, o); err != nil {
			return Done, err
		}
	}
	if eRO.Status.CurrentState == longhorn.InstanceStateRunning {
		for _, n := range snapshotsAwaitingEngine(objs) {
			c.w.Enqueue(c.key(n))
		}
	}
	return Done, nil
}

// snapshotsAwaitingEngine names the Snapshot objects that wait for a
// running engine (to be taken or removed), sorted. The engine owner's
// controller syncs them when the engine runs: their own sync on the
// volume's owner node, which attached the volume for them, does not act on
// an engine another node owns (the volume may have been attached elsewhere
// for another ticket, e.g. a clone's), and nothing else would wake them.
// Pure.
func snapshotsAwaitingEngine(objs []*longhorn.Snapshot) []string {
	var out []string
	for _, o := range objs {
		if snapshotNeedsEngine(o, true) {
			out = append(out, o.Name)
		}
	}
	slices.Sort(out)
	return out
}

// dropSnapshotObject deletes an object whose snapshot is gone already.
func (c *SnapshotController) dropSnapshotObject(ctx context.Context, o *longhorn.Snapshot) error {
	cp := o.DeepCopy()
	cp.Finalizers = slices.DeleteFunc(cp.Finalizers, func(f string) bool { return f == backupFinalizer })
	if _, err := c.ds.UpdateSnapshot(ctx, cp); ignoreNotFound(err) != nil {
		return err
	}
	return ignoreNotFound(c.ds.DeleteSnapshot(ctx, o.Name))
}

// errSkipped is snapshotEngine's answer for a snapshot labelled
// longhorn.io/skip-reconcile: the sync stops without an error.
var errSkipped = errors.New("skip-reconcile")

func ignoreSkipped(err error) error {
	if errors.Is(err, errSkipped) {
		return nil
	}
	return err
}

// snapshotEngine returns the engine of the snapshot's volume (nil: none), or
// errSkipped when the snapshot carries the skip-reconcile label (the
// manager owning the engine records the event).
func (c *SnapshotController) snapshotEngine(ctx context.Context, s *longhorn.Snapshot) (*longhorn.Engine, error) {
	eRO, err := c.engineOfVolume(ctx, s.Spec.Volume)
	switch {
	case err != nil:
		return nil, err
	case eRO != nil && eRO.Status.OwnerID == c.opts.NodeName && c.skipReconcile(s, "Snapshot"):
		return nil, errSkipped
	case skipReconcileRequested(s):
		return nil, errSkipped
	}
	return eRO, nil
}

func (c *SnapshotController) syncSnapshot(ctx context.Context, key string) (Result, error) {
	sRO, err := c.ds.GetSnapshotRO(ctx, splitKey(key))
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	eRO, err := c.snapshotEngine(ctx, sRO)
	if err != nil {
		return Done, ignoreSkipped(err)
	}
	running := eRO != nil && eRO.Status.CurrentState == longhorn.InstanceStateRunning
	if !running || eRO.Status.OwnerID != c.opts.NodeName {
		return c.syncSnapshotWithoutEngine(ctx, sRO, eRO, running)
	}
	info, listed := eRO.Status.Snapshots[sRO.Name]
	switch {
	case sRO.DeletionTimestamp != nil:
		return c.removeSnapshot(ctx, sRO, eRO, listed && !info.Removed)
	case !listed && sRO.Spec.CreateSnapshot && sRO.Status.CreationTime == "":
		cl, err := c.api.Engine(ctx, imAddressOfEngine(eRO), engineRef(eRO))
		if err != nil {
			return Done, err
		}
		if _, err := cl.VolumeSnapshot(ctx, sRO.Name, sRO.Spec.Labels); err != nil {
			c.recorder.Eventf(sRO, "Warning", "SnapshotCreateFailed", "Snapshot %s: %v", sRO.Name, err)
			return Done, err
		}
		return WaitShort, nil
	case listed:
		st := snapshotStatusOf(info, c.opts.NodeName, eRO.Spec.VolumeSize)
		st.RequestedTime = sRO.Status.RequestedTime
		if !reflect.DeepEqual(st, sRO.Status) {
			s := sRO.DeepCopy()
			s.Status = st
			if _, err := c.ds.UpdateSnapshotStatus(ctx, s); err != nil {
				return Done, err
			}
		}
		// The status first: a volume attached for the snapshot detaches
		// once the ticket goes, and its engine's list with it.
		return Done, c.dropSnapshotTicket(ctx, sRO)
	}
	return Done, nil
}

// syncSnapshotWithoutEngine handles a Snapshot object whose engine does
// not run here: without an engine at all a deleted object just goes; a
// snapshot to take or remove on a detached volume gets the volume attached.
func (c *SnapshotController) syncSnapshotWithoutEngine(ctx context.Context, sRO *longhorn.Snapshot, eRO *longhorn.Engine, running bool) (Result, error) {
	if eRO == nil && sRO.DeletionTimestamp != nil {
		if err := c.dropSnapshotTicket(ctx, sRO); err != nil {
			return Done, err
		}
		return Done, c.dropSnapshotObject(ctx, sRO) // no engine, no data to remove
	}
	if running || !snapshotNeedsEngine(sRO, eRO != nil) {
		return Done, nil // another node's engine, or nothing to do
	}
	if ok, err := c.ensureSnapshotTicket(ctx, sRO); err != nil || !ok {
		return Done, err
	}
	return WaitShort, nil
}

// removeSnapshot marks the snapshot removed and starts a purge; the object
// goes once the engine no longer lists it (or lists it removed).
func (c *SnapshotController) removeSnapshot(ctx context.Context, sRO *longhorn.Snapshot, eRO *longhorn.Engine, present bool) (Result, error) {
	if present {
		cl, err := c.api.Engine(ctx, imAddressOfEngine(eRO), engineRef(eRO))
		if err != nil {
			return Done, err
		}
		if err := cl.SnapshotRemove(ctx, sRO.Name); err != nil {
			return Done, err
		}
		// disable-snapshot-purge leaves the data of the removed snapshot
		// until purging is allowed again (the next purge merges it).
		if off, _ := c.ds.GetSettingAsBool(ctx, types.SettingNameDisableSnapshotPurge); !off {
			if err := cl.SnapshotPurge(ctx, true); err != nil {
				return Done, err
			}
		}
	}
	if err := c.dropSnapshotTicket(ctx, sRO); err != nil {
		return Done, err
	}
	return Done, c.dropSnapshotObject(ctx, sRO)
}

package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// The snapshotCR* volume actions work on Snapshot objects (Longhorn's
// SnapshotCRCreate/List/Get/Delete, which its CSI driver uses for CSI
// snapshots of type "snap"). This product has no Snapshot controller yet,
// so the API does its part: create takes the snapshot with the attached
// volume's engine and records the Snapshot object (spec.createSnapshot, as
// Longhorn's API writes it); get and list show the engine's view of the
// snapshot (parent, size, creation time, readyToUse) until a controller
// fills the object's status; delete removes the snapshot from the engine
// (and purges) before the object. Create and delete need the volume
// attached (Longhorn's controller attaches it itself).
func init() {
	crIn := ActionDef{Input: "snapshotCRInput", Output: "snapshotCR"}
	volumeActionTable["snapshotCRCreate"] = volumeAction{(*Server).snapshotCRCreate, crIn, SnapshotCRInput{}}
	volumeActionTable["snapshotCRGet"] = volumeAction{(*Server).snapshotCRGet, crIn, SnapshotCRInput{}}
	volumeActionTable["snapshotCRList"] = volumeAction{(*Server).snapshotCRList, ActionDef{Output: "snapshotCRListOutput"}, nil}
	volumeActionTable["snapshotCRDelete"] = volumeAction{(*Server).snapshotCRDelete, ActionDef{Input: "snapshotCRInput", Output: "empty"}, SnapshotCRInput{}}
}

// SnapshotCR is a Snapshot object as Longhorn's API shows it.
type SnapshotCR struct {
	Resource
	Name           string            `json:"name"`
	CRCreationTime string            `json:"crCreationTime"`
	Volume         string            `json:"volume"`
	CreateSnapshot bool              `json:"createSnapshot"`
	Parent         string            `json:"parent"`
	Children       map[string]bool   `json:"children"`
	MarkRemoved    bool              `json:"markRemoved"`
	UserCreated    bool              `json:"userCreated"`
	CreationTime   string            `json:"creationTime"`
	Size           int64             `json:"size"`
	Labels         map[string]string `json:"labels"`
	OwnerID        string            `json:"ownerID"`
	Error          string            `json:"error,omitempty"`
	RestoreSize    int64             `json:"restoreSize"`
	ReadyToUse     bool              `json:"readyToUse"`
	Checksum       string            `json:"checksum"`
}

// SnapshotCRInput is the body of snapshotCRCreate, snapshotCRGet and
// snapshotCRDelete.
type SnapshotCRInput struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// snapshotCR shows a Snapshot object; while its status is empty (no
// controller filled it) the engine's snapshot es, if any, gives the
// snapshot's fields, and it is ready to use once the engine has it and it
// is not removed.
func snapshotCR(sn *longhorn.Snapshot, es *engineapi.Snapshot, volumeSize int64) SnapshotCR {
	labels := sn.Spec.Labels
	if len(labels) == 0 {
		labels = sn.Status.Labels
	}
	res := Resource{ID: sn.Name, Type: "snapshotCR", Links: map[string]string{}, Actions: map[string]string{}}
	out := SnapshotCR{Resource: res, Name: sn.Name, CRCreationTime: sn.CreationTimestamp.UTC().Format(time.RFC3339),
		Volume: sn.Spec.Volume, CreateSnapshot: sn.Spec.CreateSnapshot, Parent: sn.Status.Parent,
		Children: nonNilMap(sn.Status.Children), MarkRemoved: sn.Status.MarkRemoved, UserCreated: sn.Status.UserCreated,
		CreationTime: sn.Status.CreationTime, Size: sn.Status.Size, Labels: nonNilMap(labels), OwnerID: sn.Status.OwnerID,
		Error: sn.Status.Error, RestoreSize: sn.Status.RestoreSize, ReadyToUse: sn.Status.ReadyToUse, Checksum: sn.Status.Checksum}
	if sn.Status.CreationTime == "" && es != nil {
		out.Parent, out.Children, out.MarkRemoved, out.UserCreated = es.Parent, nonNilMap(es.Children), es.Removed, es.UserCreated
		out.CreationTime, out.Size, out.RestoreSize, out.ReadyToUse = es.Created, es.Size, volumeSize, !es.Removed
	}
	return out
}

// snapshotCRCreate takes a snapshot (name "" gets a generated one) with
// the volume's engine and creates its Snapshot object; labels must be valid
// label keys and values. If the object cannot be written, the snapshot is
// removed again.
func (s *Server) snapshotCRCreate(ctx context.Context, r *http.Request, _ urls, v *longhorn.Volume) (int, any, error) {
	var in SnapshotCRInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	name := in.Name
	if name == "" {
		name = string(uuid.NewUUID())
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return 0, nil, invalidInput("name", "%q is not a valid snapshot name: %s", name, strings.Join(errs, "; "))
	}
	for k, val := range in.Labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(val)...); len(errs) > 0 {
			return 0, nil, invalidInput("labels", "label %q=%q: %s", k, val, strings.Join(errs, "; "))
		}
	}
	if _, err := s.ds.GetSnapshotRO(ctx, name); err == nil {
		return 0, nil, newError(http.StatusConflict, CodeConflict, "snapshot %q already exists", name)
	}
	if v.Status.State == longhorn.VolumeStateDetached {
		// A detached volume: the snapshot controller attaches it (a
		// snapshot-controller ticket) and takes the snapshot, as Longhorn's.
		sn := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: types.VolumeLabels(v.Name)},
			Spec: longhorn.SnapshotSpec{Volume: v.Name, CreateSnapshot: true, Labels: in.Labels}}
		out, err := s.ds.CreateSnapshot(ctx, sn)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, snapshotCR(out, nil, v.Spec.Size), nil
	}
	ops, err := s.snapshots()
	if err != nil {
		return 0, nil, err
	}
	taken, err := ops.Create(ctx, v, name, in.Labels)
	if err != nil {
		return 0, nil, snapshotErr(err)
	}
	sn := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: taken, Labels: types.VolumeLabels(v.Name)},
		Spec: longhorn.SnapshotSpec{Volume: v.Name, CreateSnapshot: true, Labels: in.Labels}}
	out, err := s.ds.CreateSnapshot(ctx, sn)
	if err != nil {
		_ = ops.Delete(ctx, v, taken) // undo: no snapshot without its object
		return 0, nil, err
	}
	return http.StatusOK, snapshotCR(out, s.engineSnapshots(ctx, v)[taken], v.Spec.Size), nil
}

// engineSnapshots returns the volume's snapshots as its running engine
// reports them; nil when it has none running.
func (s *Server) engineSnapshots(ctx context.Context, v *longhorn.Volume) map[string]*engineapi.Snapshot {
	if s.opts.Snapshots == nil || v.Status.State != longhorn.VolumeStateAttached {
		return nil
	}
	snaps, err := s.opts.Snapshots.List(ctx, v)
	if err != nil {
		return nil
	}
	return snaps
}

func (s *Server) snapshotCRList(ctx context.Context, _ *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	objs, err := s.ds.ListSnapshotsByVolumeRO(ctx, v.Name)
	if err != nil {
		return 0, nil, err
	}
	es := s.engineSnapshots(ctx, v)
	out := toResources(objs, func(sn *longhorn.Snapshot) SnapshotCR { return snapshotCR(sn, es[sn.Name], v.Spec.Size) })
	return http.StatusOK, u.newCollection("snapshotCR", "volumes/"+v.Name+"/snapshotcrs", out), nil
}

// volumeSnapshotCR reads the Snapshot object named in the body; one of
// another volume is a 404.
func (s *Server) volumeSnapshotCR(ctx context.Context, r *http.Request, v *longhorn.Volume) (*longhorn.Snapshot, error) {
	var in SnapshotCRInput
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	if in.Name == "" {
		return nil, invalidInput("name", "is required: the snapshot")
	}
	sn, err := s.ds.GetSnapshotRO(ctx, in.Name)
	if apierrors.IsNotFound(err) {
		// A Snapshot created a moment ago (snapshotCRCreate) may not be
		// cached yet: ask the API server before answering 404.
		sn, err = s.ds.GetSnapshotLive(ctx, in.Name)
	}
	if apierrors.IsNotFound(err) || (err == nil && sn.Spec.Volume != v.Name) {
		return nil, newError(http.StatusNotFound, CodeNotFound, "volume %s has no snapshot %q", v.Name, in.Name)
	}
	return sn, err
}

func (s *Server) snapshotCRGet(ctx context.Context, r *http.Request, _ urls, v *longhorn.Volume) (int, any, error) {
	sn, err := s.volumeSnapshotCR(ctx, r, v)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, snapshotCR(sn, s.engineSnapshots(ctx, v)[sn.Name], v.Spec.Size), nil
}

func (s *Server) snapshotCRDelete(ctx context.Context, r *http.Request, _ urls, v *longhorn.Volume) (int, any, error) {
	sn, err := s.volumeSnapshotCR(ctx, r, v)
	if err != nil {
		return 0, nil, err
	}
	ops, err := s.snapshots()
	if err != nil {
		return 0, nil, err
	}
	err = ops.Delete(ctx, v, sn.Name)
	switch {
	case errors.Is(err, ErrNoEngine) && v.Status.State == longhorn.VolumeStateDetached:
		// A detached volume: deleting the object is enough; its finalizer
		// holds it until the snapshot controller has attached the volume
		// and removed the snapshot.
	case err != nil && !engineapi.IsNotFound(err):
		return 0, nil, snapshotErr(err)
	default:
		if err := ops.Purge(ctx, v); err != nil {
			return 0, nil, snapshotErr(err)
		}
	}
	if err := s.ds.DeleteSnapshot(ctx, sn.Name); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return http.StatusOK, Resource{Type: "empty", Links: map[string]string{}, Actions: map[string]string{}}, nil
}

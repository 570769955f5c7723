package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// The snapshotCR* volume actions work on Snapshot objects (Longhorn's
// SnapshotCRCreate/List/Get/Delete, which its CSI driver uses for CSI
// snapshots of type "snap"): create asks the snapshot controller to take
// the snapshot (spec.createSnapshot), the status reports it, delete
// removes it.
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

func snapshotCR(sn *longhorn.Snapshot) SnapshotCR {
	labels := sn.Spec.Labels
	if len(labels) == 0 {
		labels = sn.Status.Labels
	}
	res := Resource{ID: sn.Name, Type: "snapshotCR", Links: map[string]string{}, Actions: map[string]string{}}
	return SnapshotCR{Resource: res, Name: sn.Name, CRCreationTime: sn.CreationTimestamp.UTC().Format(time.RFC3339),
		Volume: sn.Spec.Volume, CreateSnapshot: sn.Spec.CreateSnapshot, Parent: sn.Status.Parent,
		Children: nonNilMap(sn.Status.Children), MarkRemoved: sn.Status.MarkRemoved, UserCreated: sn.Status.UserCreated,
		CreationTime: sn.Status.CreationTime, Size: sn.Status.Size, Labels: nonNilMap(labels), OwnerID: sn.Status.OwnerID,
		Error: sn.Status.Error, RestoreSize: sn.Status.RestoreSize, ReadyToUse: sn.Status.ReadyToUse, Checksum: sn.Status.Checksum}
}

// snapshotCRCreate creates a Snapshot object for the volume (name "" gets a
// generated one); labels must be valid label keys and values.
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
	sn := &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: types.VolumeLabels(v.Name)},
		Spec: longhorn.SnapshotSpec{Volume: v.Name, CreateSnapshot: true, Labels: in.Labels}}
	out, err := s.ds.CreateSnapshot(ctx, sn)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, snapshotCR(out), nil
}

func (s *Server) snapshotCRList(ctx context.Context, _ *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	objs, err := s.ds.ListSnapshotsByVolumeRO(ctx, v.Name)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("snapshotCR", "volumes/"+v.Name+"/snapshotcrs", toResources(objs, snapshotCR)), nil
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
	return http.StatusOK, snapshotCR(sn), nil
}

func (s *Server) snapshotCRDelete(ctx context.Context, r *http.Request, _ urls, v *longhorn.Volume) (int, any, error) {
	sn, err := s.volumeSnapshotCR(ctx, r, v)
	if err != nil {
		return 0, nil, err
	}
	if err := s.ds.DeleteSnapshot(ctx, sn.Name); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return http.StatusOK, Resource{Type: "empty", Links: map[string]string{}, Actions: map[string]string{}}, nil
}

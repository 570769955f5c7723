package api

import (
	"context"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// More volume actions (Longhorn api/volume.go): removing a replica and
// updating single spec fields.
const (
	ActionReplicaRemove            = "replicaRemove"
	ActionUpdateDataLocality       = "updateDataLocality"
	ActionUpdateReplicaAutoBalance = "updateReplicaAutoBalance"
)

func init() {
	volumeActionTable[ActionReplicaRemove] = (*Server).replicaRemove
	volumeActionTable[ActionUpdateDataLocality] = (*Server).updateDataLocality
	volumeActionTable[ActionUpdateReplicaAutoBalance] = (*Server).updateReplicaAutoBalance
}

// ReplicaRemoveInput is the body of replicaRemove.
type ReplicaRemoveInput struct {
	Name string `json:"name"`
}

// replicaRemove deletes one replica of the volume; the volume controller
// replenishes it (Longhorn's e2e tests use this to force a rebuild).
func (s *Server) replicaRemove(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in ReplicaRemoveInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == "" {
		return 0, nil, invalidInput("name", "is required: the replica to remove")
	}
	rep, err := s.ds.GetReplicaRO(ctx, in.Name)
	if apierrors.IsNotFound(err) || (err == nil && rep.Spec.VolumeName != v.Name) {
		return 0, nil, invalidInput("name", "%q is not a replica of volume %s", in.Name, v.Name)
	} else if err != nil {
		return 0, nil, err
	}
	if err := s.ds.DeleteReplica(ctx, in.Name); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, v)
}

// UpdateDataLocalityInput is the body of updateDataLocality.
type UpdateDataLocalityInput struct {
	DataLocality longhorn.DataLocality `json:"dataLocality"`
}

func (s *Server) updateDataLocality(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in UpdateDataLocalityInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if err := oneOf("dataLocality", in.DataLocality, longhorn.DataLocalityDisabled, longhorn.DataLocalityBestEffort, longhorn.DataLocalityStrictLocal); err != nil {
		return 0, nil, err
	}
	if in.DataLocality == longhorn.DataLocalityStrictLocal && v.Spec.NumberOfReplicas != 1 {
		return 0, nil, invalidInput("dataLocality", "strict-local needs exactly 1 replica; the volume has %d", v.Spec.NumberOfReplicas)
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) { sp.DataLocality = in.DataLocality })
}

// UpdateReplicaAutoBalanceInput is the body of updateReplicaAutoBalance.
type UpdateReplicaAutoBalanceInput struct {
	ReplicaAutoBalance longhorn.ReplicaAutoBalance `json:"replicaAutoBalance"`
}

func (s *Server) updateReplicaAutoBalance(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in UpdateReplicaAutoBalanceInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if err := oneOf("replicaAutoBalance", in.ReplicaAutoBalance, longhorn.ReplicaAutoBalanceIgnored,
		longhorn.ReplicaAutoBalanceDisabled, longhorn.ReplicaAutoBalanceLeastEffort, longhorn.ReplicaAutoBalanceBestEffort); err != nil {
		return 0, nil, err
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) { sp.ReplicaAutoBalance = in.ReplicaAutoBalance })
}

// oneOf is a 422 naming field and the allowed values unless v is one of them.
func oneOf[T ~string](field string, v T, allowed ...T) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return invalidInput(field, "%q is not one of %s", v, strings.Join(names, ", "))
}

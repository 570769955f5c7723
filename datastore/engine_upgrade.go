package datastore

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// EngineUpgradeCheck gathers from the caches what
// lifecycle.CheckEngineUpgrade decides on when v's spec.image changes to
// image: v's state, its engine's replica modes, rebuilds, restores and
// expansion, whether image is an engine image and where no instance manager
// of it runs (an engine image runs in the instance managers of that image),
// and the settings concurrent-automatic-engine-upgrade-per-node-limit and
// default-engine-image.
func (ds *DataStore) EngineUpgradeCheck(ctx context.Context, v *longhorn.Volume, image string) (lifecycle.EngineUpgradeCheck, error) {
	c := lifecycle.EngineUpgradeCheck{Volume: v.Name, OldImage: v.Spec.Image, CurrentImage: v.Status.CurrentImage, NewImage: image,
		State: lifecycle.VolumeState(v.Status.State), Robustness: lifecycle.Robustness(v.Status.Robustness),
		Frontend: string(v.Spec.Frontend), DisableFrontend: v.Spec.DisableFrontend,
		Restoring: v.Status.RestoreRequired || v.Status.IsStandby, Expanding: v.Status.ExpansionRequired,
		Migrating: v.Spec.MigrationNodeID != "", StrictLocal: v.Spec.DataLocality == longhorn.DataLocalityStrictLocal}
	engines, err := ds.ListEnginesByVolumeRO(ctx, v.Name)
	if err != nil {
		return c, fmt.Errorf("list engines of volume %s: %w", v.Name, err)
	}
	for _, e := range engines {
		c.Expanding = c.Expanding || e.Status.IsExpanding
		c.Rebuilding = c.Rebuilding || engineRebuilding(e)
		for _, st := range e.Status.RestoreStatus {
			c.Restoring = c.Restoring || (st != nil && st.IsRestoring)
		}
	}
	_, err = ds.GetEngineImageRO(ctx, types.EngineImageName(image))
	switch {
	case err == nil:
		c.NewImageKnown = true
	case !apierrors.IsNotFound(err):
		return c, err
	}
	if c.NewImageMissingOn, err = ds.imageMissingOn(ctx, v, image); err != nil {
		return c, err
	}
	if c.AutoUpgradeLimit, err = ds.GetSettingAsInt(ctx, types.SettingNameConcurrentAutomaticEngineUpgradePerNodeLimit); err != nil {
		return c, err
	}
	c.DefaultImage, err = ds.GetSettingValue(ctx, types.SettingNameDefaultEngineImage)
	return c, err
}

// engineRebuilding: a replica of e is WO or being rebuilt.
func engineRebuilding(e *longhorn.Engine) bool {
	for _, m := range e.Status.ReplicaModeMap {
		if m == longhorn.ReplicaModeWO {
			return true
		}
	}
	for _, st := range e.Status.RebuildStatus {
		if st != nil && st.IsRebuilding {
			return true
		}
	}
	return false
}

// imageMissingOn lists, in order, the nodes of v (its active replicas' and
// the attached node) without a running v1 instance manager of image.
func (ds *DataStore) imageMissingOn(ctx context.Context, v *longhorn.Volume, image string) ([]string, error) {
	nodes := map[string]bool{}
	if v.Status.CurrentNodeID != "" {
		nodes[v.Status.CurrentNodeID] = true
	}
	replicas, err := ds.ListReplicasByVolumeRO(ctx, v.Name)
	if err != nil {
		return nil, fmt.Errorf("list replicas of volume %s: %w", v.Name, err)
	}
	for _, r := range replicas {
		if r.Spec.Active && r.Spec.NodeID != "" && r.Spec.FailedAt == "" && r.DeletionTimestamp == nil {
			nodes[r.Spec.NodeID] = true
		}
	}
	var missing []string
	for n := range nodes {
		ims, err := ds.ListInstanceManagersByNodeRO(ctx, n)
		if err != nil {
			return nil, err
		}
		found := false
		for _, im := range ims {
			found = found || (im.Spec.Image == image && im.Status.CurrentState == longhorn.InstanceManagerStateRunning &&
				im.DeletionTimestamp == nil && (im.Spec.DataEngine == "" || im.Spec.DataEngine == longhorn.DataEngineTypeV1))
		}
		if !found {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

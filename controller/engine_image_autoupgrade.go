package controller

import (
	"context"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// autoUpgradeVolume is one volume as the automatic engine upgrade sees it.
type autoUpgradeVolume struct {
	name string
	// node is the volume's owner (status.ownerID), the node whose limit
	// counts it.
	node string
	// upgrading: spec.image differs from status.currentImage.
	upgrading bool
	// eligible: not on the default image, and lifecycle.CheckEngineUpgrade
	// allows the change to it now (offline when detached, live when
	// attached).
	eligible bool
}

// pickAutoUpgrades is Longhorn's concurrent-automatic-engine-upgrade-per-
// node-limit: per node, as many eligible volumes (in name order) as the
// limit leaves beside those already upgrading. limit <= 0 picks none.
func pickAutoUpgrades(vols []autoUpgradeVolume, limit int) []string {
	if limit <= 0 {
		return nil
	}
	busy := map[string]int{}
	for _, v := range vols {
		if v.upgrading {
			busy[v.node]++
		}
	}
	sorted := append([]autoUpgradeVolume(nil), vols...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var out []string
	for _, v := range sorted {
		if v.upgrading || !v.eligible || busy[v.node] >= limit {
			continue
		}
		busy[v.node]++
		out = append(out, v.name)
	}
	return out
}

// autoUpgrade moves volumes to the default engine image (the manager's
// own, setting default-engine-image) when
// concurrent-automatic-engine-upgrade-per-node-limit is above 0: the
// responsible manager of the default EngineImage sets spec.image of the
// volumes pickAutoUpgrades picks, and the volume controller upgrades them
// as after a user's change. v2 volumes are left alone, as in Longhorn.
func (c *EngineImageController) autoUpgrade(ctx context.Context, ei *longhorn.EngineImage) error {
	limit, err := c.ds.GetSettingAsInt(ctx, types.SettingNameConcurrentAutomaticEngineUpgradePerNodeLimit)
	if err != nil || limit <= 0 || ei.Spec.Image != c.opts.EngineImage {
		return err
	}
	def, err := c.ds.GetSettingValue(ctx, types.SettingNameDefaultEngineImage)
	if err != nil || def != ei.Spec.Image {
		return err
	}
	vols, err := c.ds.ListVolumesRO(ctx, nil)
	if err != nil {
		return err
	}
	var in []autoUpgradeVolume
	for _, v := range vols {
		if v.DeletionTimestamp != nil || v.Spec.DataEngine == longhorn.DataEngineTypeV2 || v.Status.CurrentImage == "" {
			continue
		}
		a := autoUpgradeVolume{name: v.Name, node: v.Status.OwnerID, upgrading: v.Spec.Image != v.Status.CurrentImage}
		if !a.upgrading && v.Spec.Image != def {
			check, err := c.ds.EngineUpgradeCheck(ctx, v, def)
			if err != nil {
				return err
			}
			a.eligible = lifecycle.CheckEngineUpgrade(check) == nil
		}
		in = append(in, a)
	}
	for _, name := range pickAutoUpgrades(in, int(limit)) {
		v, err := c.ds.GetVolume(ctx, name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		from := v.Spec.Image
		v.Spec.Image = def
		if _, err := c.ds.UpdateVolume(ctx, v); err != nil {
			return err
		}
		LoggerFrom(ctx).WithField("volume", name).WithField("from", from).WithField("to", def).Info("Upgrading volume engine image to the default engine image automatically")
	}
	return nil
}

package upgrade

import (
	"errors"
	"fmt"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// migrateV17xToV180 is Longhorn's v1.7.x -> v1.8.0 step (multiple backup
// targets): the objects of the one backup target of earlier versions name
// the default target.
func migrateV17xToV180(objs *Objects) error {
	def := types.DefaultBackupTargetName
	for _, v := range objs.Volumes {
		if v.Spec.BackupTargetName == "" {
			v.Spec.BackupTargetName = def
		}
	}
	for _, bv := range objs.BackupVolumes {
		if bv.Spec.BackupTargetName == "" {
			bv.Spec.BackupTargetName = def
		}
		// Before v1.8.0 the BackupVolume was named after its volume.
		if bv.Spec.VolumeName == "" {
			bv.Spec.VolumeName = bv.Name
		}
		bv.Labels = addLabel(bv.Labels, types.LonghornLabelBackupTarget, bv.Spec.BackupTargetName)
		bv.Labels = addLabel(bv.Labels, types.LonghornLabelBackupVolume, bv.Spec.VolumeName)
	}
	for _, b := range objs.Backups {
		b.Labels = addLabel(b.Labels, types.LonghornLabelBackupTarget, def)
		if b.Status.BackupTargetName == "" {
			b.Status.BackupTargetName = def
		}
	}
	return nil
}

// migrateV19xToV1100 is Longhorn's v1.9.x -> v1.10.0 step: the legacy
// RequiredPackages node condition goes, data-engine-specific settings hold
// per-engine JSON, and volumes and backups without a backup block size get
// the 2 MiB every earlier backup used.
func migrateV19xToV1100(objs *Objects) error {
	for _, n := range objs.Nodes {
		n.Status.Conditions = removeCondition(n.Status.Conditions, longhorn.NodeConditionTypeRequiredPackages)
	}
	var errs []error
	for name, s := range objs.Settings {
		def, ok := types.GetSettingDefinition(types.SettingName(name))
		if !ok || !def.DataEngineSpecific || s.Value == "" {
			continue // unknown settings are left for the webhook and the user
		}
		if err := types.ValidateSetting(name, s.Value); err != nil {
			errs = append(errs, fmt.Errorf("setting %s: stored value %q: %w", name, s.Value, err))
			continue
		}
		v, err := types.NormalizeSettingValue(types.SettingName(name), s.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("setting %s: %w", name, err))
			continue
		}
		s.Value = v
	}
	for _, v := range objs.Volumes {
		if v.Spec.BackupBlockSize == 0 {
			v.Spec.BackupBlockSize = longhorn.BackupBlockSize2Mi
		}
	}
	for _, b := range objs.Backups {
		if b.Spec.BackupBlockSize == 0 {
			b.Spec.BackupBlockSize = longhorn.BackupBlockSize2Mi
		}
	}
	return errors.Join(errs...)
}

// addLabel sets key to value unless labels already has key.
func addLabel(labels map[string]string, key, value string) map[string]string {
	if _, ok := labels[key]; ok {
		return labels
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	return labels
}

// removeCondition drops the conditions of type t (nil stays nil).
func removeCondition(conds []longhorn.Condition, t string) []longhorn.Condition {
	if conds == nil {
		return nil
	}
	out := conds[:0:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

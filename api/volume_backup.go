package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// The backup actions of a volume: snapshotBackup creates a Backup object
// (the backup controller takes it through the volume's engine), and
// updateBackupTargetName picks the backup target its backups go to.
func init() {
	volumeActionTable["snapshotBackup"] = volumeAction{(*Server).snapshotBackup, ActionDef{Input: "snapshotInput", Output: "volume"}, SnapshotInput{}}
	volumeActionTable["updateBackupTargetName"] = volumeAction{(*Server).updateBackupTargetName,
		ActionDef{Input: "UpdateBackupTargetInput", Output: "volume"}, fieldInputModel("backupTargetName", "")}
}

// kubernetesStatusLabel is the backup label that carries the volume's
// KubernetesStatus as JSON (Longhorn's types.KubernetesStatusLabel); a
// restore recreates the PV and PVC from it.
const kubernetesStatusLabel = "KubernetesStatus"

// NewBackupName returns "backup-" and 16 hex digits (Longhorn's generated
// backup names).
func NewBackupName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "backup-" + hex.EncodeToString(b)
}

// volumeBackupTarget is the backup target a volume's backups go to.
func volumeBackupTarget(v *longhorn.Volume) string {
	if v.Spec.BackupTargetName != "" {
		return v.Spec.BackupTargetName
	}
	return longhorn.BackupTargetDefault
}

// NewSnapshotBackup validates a snapshotBackup input for volume v and
// returns the Backup object to create (name from NewBackupName): labels
// must be Kubernetes qualified names with valid values, backupMode "",
// "full" or "incremental". Errors are 422 naming the field.
func NewSnapshotBackup(v *longhorn.Volume, in SnapshotInput, name string) (*longhorn.Backup, error) {
	if in.Name == "" {
		return nil, invalidInput("name", "is required: the snapshot to back up")
	}
	if errs := validation.IsDNS1123Subdomain(in.Name); len(errs) > 0 {
		return nil, invalidInput("name", "%q is not a snapshot name: %s", in.Name, strings.Join(errs, "; "))
	}
	mode := longhorn.BackupMode(in.BackupMode)
	if mode != "" && mode != longhorn.BackupModeFull && mode != longhorn.BackupModeIncremental {
		return nil, invalidInput("backupMode", "%q is not one of full, incremental", in.BackupMode)
	}
	lbls := map[string]string{}
	for k, val := range in.Labels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(val)...); len(errs) > 0 {
			return nil, invalidInput("labels", "label %q=%q: %s", k, val, strings.Join(errs, "; "))
		}
		lbls[k] = val
	}
	if !reflect.DeepEqual(v.Status.KubernetesStatus, longhorn.KubernetesStatus{}) {
		ks, err := json.Marshal(v.Status.KubernetesStatus)
		if err != nil {
			return nil, err
		}
		lbls[kubernetesStatusLabel] = string(ks)
	}
	return &longhorn.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{labelBackupVolume: v.Name, labelBackupTarget: volumeBackupTarget(v)}},
		Spec: longhorn.BackupSpec{SnapshotName: in.Name, Labels: lbls, BackupMode: mode, BackupBlockSize: v.Spec.BackupBlockSize},
	}, nil
}

// snapshotBackup backs up a snapshot of an attached volume to its backup
// target: not for a standby volume; the target must exist and be
// available, the snapshot must exist in the engine (when an engine client
// is configured). It answers with the volume, whose backupStatus follows
// the backup's progress.
func (s *Server) snapshotBackup(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in SnapshotInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if v.Spec.Standby || v.Status.IsStandby {
		return 0, nil, invalidState("volume %s is a standby volume: it cannot be backed up", v.Name)
	}
	b, err := NewSnapshotBackup(v, in, NewBackupName())
	if err != nil {
		return 0, nil, err
	}
	target := volumeBackupTarget(v)
	bt, err := s.ds.GetBackupTargetRO(ctx, target)
	if apierrors.IsNotFound(err) {
		return 0, nil, invalidState("backup target %s of volume %s does not exist", target, v.Name)
	}
	if err != nil {
		return 0, nil, err
	}
	if !bt.Status.Available {
		msg := conditionMap(bt.Status.Conditions)[longhorn.BackupTargetConditionTypeUnavailable].Message
		return 0, nil, invalidState("backup target %s is not available: %s", target, orUnknown(msg))
	}
	if s.opts.Snapshots != nil {
		snaps, err := s.opts.Snapshots.List(ctx, v)
		if err != nil {
			return 0, nil, snapshotErr(err)
		}
		if sn, ok := snaps[in.Name]; !ok || in.Name == engineHeadName || sn.Removed {
			return 0, nil, newError(http.StatusNotFound, CodeNotFound, "volume %s has no snapshot %q to back up", v.Name, in.Name)
		}
	}
	if _, err := s.ds.CreateBackup(ctx, b); err != nil {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, v)
}

// updateBackupTargetName sets the volume's backup target; it must exist.
func (s *Server) updateBackupTargetName(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var name string
	if err := fieldInput(r, "backupTargetName", &name); err != nil {
		return 0, nil, err
	}
	if name == "" {
		name = longhorn.BackupTargetDefault
	}
	if _, err := s.ds.GetBackupTargetRO(ctx, name); apierrors.IsNotFound(err) {
		targets, _ := s.ds.ListBackupTargetsRO(ctx, nil)
		names := make([]string, 0, len(targets))
		for _, t := range targets {
			names = append(names, t.Name)
		}
		slices.Sort(names)
		return 0, nil, invalidInput("backupTargetName", "backup target %q does not exist (have: %s)", name, strings.Join(names, ", "))
	} else if err != nil {
		return 0, nil, err
	}
	return s.updateVolumeSpec(ctx, u, v.Name, func(sp *longhorn.VolumeSpec) error { sp.BackupTargetName = name; return nil })
}

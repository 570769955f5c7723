package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Backup object labels (Longhorn's longhorn.io/backup-target and
// longhorn.io/backup-volume).
var (
	labelBackupTarget = types.LonghornLabelKeyPrefix + "/" + types.LonghornLabelBackupTarget
	labelBackupVolume = types.LonghornLabelKeyPrefix + "/" + types.LonghornLabelBackupVolume
)

// defaultBackupPollInterval is BackupTarget.spec.pollInterval's default
// (Longhorn's backupstore-poll-interval, 300 s); 0 disables polling.
const defaultBackupPollInterval = 300 * time.Second

// storeOpener opens a backup target (engineapi.OpenBackupStore; tests fake it).
type storeOpener func(ctx context.Context, t engineapi.BackupTarget) (engineapi.BackupStore, error)

// BackupTargetController checks each BackupTarget's availability, records
// it (status.available and the Unavailable condition with the reason), and
// creates a BackupVolume object for every backup volume the target holds,
// every pollInterval and whenever the spec changes (syncRequestedAt).
type BackupTargetController struct {
	*env
	w    *Worker
	open storeOpener
}

func newBackupTargetController(e *env) (runner, error) {
	c := &BackupTargetController{env: e, open: engineapi.OpenBackupStore}
	c.w = NewWorker("longhorn-backup-target", c.syncBackupTarget)
	if err := addHandler(e.ds.BackupTargetInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *BackupTargetController) run(ctx context.Context, workers int) error {
	return c.w.Run(ctx, workers)
}

// backupTargetOf resolves a BackupTarget's URL and credential Secret.
func (e *env) backupTargetOf(ctx context.Context, bt *longhorn.BackupTarget) (engineapi.BackupTarget, error) {
	t := engineapi.BackupTarget{URL: bt.Spec.BackupTargetURL}
	if bt.Spec.CredentialSecret == "" {
		return t, nil
	}
	sec, err := e.kube.CoreV1().Secrets(e.opts.Namespace).Get(ctx, bt.Spec.CredentialSecret, metav1.GetOptions{})
	if err != nil {
		return t, fmt.Errorf("credential secret %s: %w", bt.Spec.CredentialSecret, err)
	}
	t.Credential = map[string]string{}
	for k, v := range sec.Data {
		t.Credential[k] = string(v)
	}
	for k, v := range sec.StringData {
		t.Credential[k] = v
	}
	return t, nil
}

func (c *BackupTargetController) syncBackupTarget(ctx context.Context, key string) (Result, error) {
	btRO, err := c.ds.GetBackupTargetRO(ctx, splitKey(key))
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, "", btRO.Status.OwnerID) {
		return Done, nil
	}
	if c.skipReconcile(btRO, "BackupTarget") {
		return Done, nil
	}
	bt := btRO.DeepCopy()
	bt.Status.OwnerID = c.opts.NodeName
	volumes, checkErr := c.check(ctx, bt)
	now := c.now()
	bt.Status = decideBackupTargetStatus(bt.Status, checkErr, now)
	if checkErr == nil {
		if err := c.syncBackupVolumes(ctx, bt.Name, volumes); err != nil {
			return Done, err
		}
	}
	if !reflect.DeepEqual(bt.Status, btRO.Status) {
		if _, err := c.ds.UpdateBackupTargetStatus(ctx, bt); err != nil {
			return Done, err
		}
	}
	return Result{RequeueAfter: pollInterval(bt)}, nil
}

func pollInterval(bt *longhorn.BackupTarget) time.Duration {
	if d := bt.Spec.PollInterval.Duration; d > 0 {
		return d
	}
	if bt.Spec.PollInterval.Duration < 0 {
		return 0
	}
	return defaultBackupPollInterval
}

// check opens the target and lists its backup volumes. An empty URL is
// "not configured", reported as unavailable.
func (c *BackupTargetController) check(ctx context.Context, bt *longhorn.BackupTarget) ([]string, error) {
	if bt.Spec.BackupTargetURL == "" {
		return nil, errors.New("backup target URL is empty")
	}
	t, err := c.backupTargetOf(ctx, bt)
	if err != nil {
		return nil, err
	}
	st, err := c.open(ctx, t)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.ListVolumeNames(ctx)
}

// decideBackupTargetStatus returns the status after a check (err nil =
// reachable): available, and the Unavailable condition True with the
// error's message or False. Pure.
func decideBackupTargetStatus(st longhorn.BackupTargetStatus, err error, now time.Time) longhorn.BackupTargetStatus {
	ts := now.UTC().Format(time.RFC3339)
	conds := append([]longhorn.Condition(nil), st.Conditions...)
	if err != nil {
		st.Available = false
		st.Conditions = longhorn.SetCondition(conds, longhorn.BackupTargetConditionTypeUnavailable,
			longhorn.ConditionStatusTrue, longhorn.BackupTargetConditionReasonUnavailable, err.Error(), ts)
		return st
	}
	st.Available = true
	st.Conditions = longhorn.SetCondition(conds, longhorn.BackupTargetConditionTypeUnavailable,
		longhorn.ConditionStatusFalse, "", "", ts)
	st.LastSyncedAt = metav1.NewTime(now)
	return st
}

// BackupVolumeName is the BackupVolume object of a volume's backups in a
// target: the volume's name in the default target (Longhorn's name before
// several targets existed, which scripts use), <volume>-<target> otherwise.
func BackupVolumeName(target, volume string) string {
	if target == longhorn.BackupTargetDefault || target == "" {
		return volume
	}
	return volume + "-" + target
}

// planBackupVolumes returns the BackupVolume objects to create (the
// target's volumes without one) and the names to delete (objects of this
// target whose volume is gone from it). Pure.
func planBackupVolumes(target string, remote []string, existing []*longhorn.BackupVolume) (create []*longhorn.BackupVolume, remove []string) {
	have := map[string]bool{}
	in := map[string]bool{}
	for _, v := range remote {
		in[v] = true
	}
	for _, bv := range existing {
		if bv.Spec.BackupTargetName != target {
			continue
		}
		have[bv.Spec.VolumeName] = true
		if !in[bv.Spec.VolumeName] && bv.DeletionTimestamp == nil {
			remove = append(remove, bv.Name)
		}
	}
	sort.Strings(remote)
	for _, v := range remote {
		if have[v] {
			continue
		}
		create = append(create, &longhorn.BackupVolume{
			ObjectMeta: metav1.ObjectMeta{Name: BackupVolumeName(target, v),
				Labels: map[string]string{labelBackupTarget: target, labelBackupVolume: v}},
			Spec: longhorn.BackupVolumeSpec{BackupTargetName: target, VolumeName: v},
		})
	}
	sort.Strings(remove)
	return create, remove
}

func (c *BackupTargetController) syncBackupVolumes(ctx context.Context, target string, remote []string) error {
	existing, err := c.ds.ListBackupVolumesRO(ctx, labels.SelectorFromSet(labels.Set{labelBackupTarget: target}))
	if err != nil {
		return err
	}
	create, remove := planBackupVolumes(target, remote, existing)
	for _, bv := range create {
		if _, err := c.ds.CreateBackupVolume(ctx, bv); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, n := range remove {
		// The backup volume is gone from the store already: drop the object
		// without asking the store to delete it (label says so).
		if err := c.forgetBackupVolume(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// annotationForget marks a BackupVolume (or Backup) whose deletion must not
// remove anything in the store (it is gone there already).
const annotationForget = types.AnnotationBackupstoreGone

func (c *BackupTargetController) forgetBackupVolume(ctx context.Context, name string) error {
	bv, err := c.ds.GetBackupVolume(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if bv.Annotations == nil {
		bv.Annotations = map[string]string{}
	}
	bv.Annotations[annotationForget] = "true"
	if _, err := c.ds.UpdateBackupVolume(ctx, bv); err != nil {
		return err
	}
	if err := c.ds.DeleteBackupVolume(ctx, name); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

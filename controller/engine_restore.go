package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// restoreRetryInterval is how long a failed restore waits before the
// engine controller starts it again (a target that was down may be back; a
// corrupted block fails again, with the same message).
const restoreRetryInterval = time.Minute

// restoreStart is the restore an engine controller last started: which
// backup, and when (observations older than that say nothing about it).
type restoreStart struct {
	backup string
	at     time.Time
}

// restoreAction is what decideEngineRestore asks for.
type restoreAction int

const (
	restoreWait    restoreAction = iota // a restore runs, or nothing is known yet
	restoreStartIt                      // start restoring the requested backup into every replica
	restoreDone                         // every replica holds the requested backup
	restoreFailed                       // a replica failed to restore the requested backup
)

// decideEngineRestore decides from every replica's restore status (by
// address) what to do about the requested backup; for restoreFailed the
// message names the replicas and their errors. Pure.
func decideEngineRestore(requested string, sts map[string]*engineapi.RestoreStatus) (restoreAction, string) {
	if len(sts) == 0 {
		return restoreWait, ""
	}
	addrs := make([]string, 0, len(sts))
	for a := range sts {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	done := 0
	var failures []string
	for _, a := range addrs {
		st := sts[a]
		switch {
		case st.IsRestoring:
			return restoreWait, ""
		case st.LastRestored == requested:
			done++
		case st.Error != "" && st.CurrentRestoringBackup == requested:
			failures = append(failures, fmt.Sprintf("replica %s: %s", a, st.Error))
		}
	}
	switch {
	case done == len(sts):
		return restoreDone, ""
	case len(failures) > 0:
		return restoreFailed, strings.Join(failures, "; ")
	}
	return restoreStartIt, ""
}

func restoreStatusOf(in map[string]*engineapi.RestoreStatus) map[string]*longhorn.RestoreStatus {
	out := map[string]*longhorn.RestoreStatus{}
	for addr, s := range in {
		out[addr] = &longhorn.RestoreStatus{IsRestoring: s.IsRestoring, LastRestored: s.LastRestored,
			CurrentRestoringBackup: s.CurrentRestoringBackup, Progress: s.Progress, Error: s.Error,
			Filename: s.DestFileName, State: s.State, BackupURL: s.BackupURL}
	}
	return emptyToNil(out)
}

// reconcileRestore restores spec.requestedBackupRestore (of backup volume
// spec.backupVolume) into the running engine's replicas: it mirrors their
// restore status into status.restoreStatus, starts the restore when no
// replica holds the backup yet (again restoreRetryInterval after a
// failure), and sets status.lastRestoredBackup once every replica holds it.
func (c *EngineController) reconcileRestore(ctx context.Context, e *longhorn.Engine, obs *engineObservation) (Result, error) {
	requested := e.Spec.RequestedBackupRestore
	if requested == "" {
		e.Status.RestoreStatus = nil
		return Done, nil
	}
	if obs == nil || obs.Err != "" || obs.RestoreErr != "" {
		return WaitShort, nil
	}
	e.Status.RestoreStatus = restoreStatusOf(obs.Restore)
	c.mu.Lock()
	last := c.restores[e.Name]
	c.mu.Unlock()
	if last.backup == requested && !obs.At.After(last.at) {
		return WaitShort, nil // the poll predates the restore we started
	}
	act, msg := decideEngineRestore(requested, obs.Restore)
	switch act {
	case restoreDone:
		if e.Status.LastRestoredBackup != requested {
			c.recorder.Eventf(e, corev1.EventTypeNormal, "BackupRestored", "Restored backup %s into every replica of engine %s", requested, e.Name)
		}
		e.Status.LastRestoredBackup = requested
		return Done, nil
	case restoreFailed:
		if wait := restoreRetryInterval - c.now().Sub(last.at); last.backup == requested && wait > 0 {
			return After(wait), nil
		}
		c.recorder.Eventf(e, corev1.EventTypeWarning, "BackupRestoreFailed", "Restoring backup %s failed, retrying: %s", requested, msg)
	case restoreWait:
		return WaitShort, nil
	}
	return WaitShort, c.startRestore(ctx, e)
}

// startRestore asks the engine to restore its requested backup.
func (c *EngineController) startRestore(ctx context.Context, e *longhorn.Engine) error {
	target, url, err := c.restoreSource(ctx, e)
	if err != nil {
		return err
	}
	cl, err := c.api.Engine(ctx, imAddressOfEngine(e), engineRef(e))
	if err != nil {
		return err
	}
	bc, ok := cl.(engineapi.BackupClient)
	if !ok {
		return fmt.Errorf("engine %s cannot restore backups", e.Name)
	}
	c.mu.Lock()
	c.restores[e.Name] = restoreStart{backup: e.Spec.RequestedBackupRestore, at: c.now()}
	c.mu.Unlock()
	limit := int(c.settingInt(ctx, types.SettingNameRestoreConcurrentLimit))
	if err := bc.BackupRestore(ctx, target, url, limit); err != nil {
		// The replicas' status carries the error; the next poll shows it.
		LoggerFrom(ctx).WithError(err).WithField("backup", e.Spec.RequestedBackupRestore).Warn("Starting the restore failed")
		return nil
	}
	c.recorder.Eventf(e, corev1.EventTypeNormal, "BackupRestoreStarted", "Restoring backup %s of backup volume %s", e.Spec.RequestedBackupRestore, e.Spec.BackupVolume)
	return nil
}

// restoreSource returns the target (with its credential) and the URL of
// the engine's requested backup: the volume's spec.fromBackup names the
// target; the BackupTarget object with that URL (else the volume's
// backupTargetName, else default) gives the credential.
func (c *EngineController) restoreSource(ctx context.Context, e *longhorn.Engine) (engineapi.BackupTarget, string, error) {
	v, err := c.ds.GetVolumeRO(ctx, e.Spec.VolumeName)
	if err != nil {
		return engineapi.BackupTarget{}, "", err
	}
	backup, _, targetURL, err := backupstore.DecodeBackupURL(v.Spec.FromBackup)
	if err != nil {
		return engineapi.BackupTarget{}, "", err
	}
	url := v.Spec.FromBackup
	if backup != e.Spec.RequestedBackupRestore {
		url = backupstore.EncodeBackupURL(e.Spec.RequestedBackupRestore, e.Spec.BackupVolume, targetURL)
	}
	bt := c.backupTargetByURL(ctx, targetURL, v.Spec.BackupTargetName)
	if bt == nil {
		return engineapi.BackupTarget{URL: targetURL}, url, nil
	}
	t, err := c.backupTargetOf(ctx, bt)
	t.URL = targetURL
	return t, url, err
}

// backupTargetByURL finds the BackupTarget whose URL is targetURL; when
// none has it, the one named preferred (or default) if its URL is empty
// or the same. nil when there is none.
func (e *env) backupTargetByURL(ctx context.Context, targetURL, preferred string) *longhorn.BackupTarget {
	bts, err := e.ds.ListBackupTargetsRO(ctx, nil)
	if err != nil {
		return nil
	}
	same := func(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }
	sort.Slice(bts, func(i, j int) bool { return bts[i].Name < bts[j].Name })
	for _, bt := range bts {
		if same(bt.Spec.BackupTargetURL, targetURL) {
			return bt
		}
	}
	if preferred == "" {
		preferred = longhorn.BackupTargetDefault
	}
	for _, bt := range bts {
		if bt.Name == preferred && bt.Spec.BackupTargetURL == "" {
			return bt
		}
	}
	return nil
}

package manager_test

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// backupOf takes snapshot snap of the attached volume vol (a Snapshot
// object), backs it up as Backup name and waits until it is Completed; it
// returns the Backup.
func (c *cluster) backupOf(t *testing.T, vol, snap, name string) *longhorn.Backup {
	t.Helper()
	t0 := time.Now()
	c.takeSnapshot(vol, snap)
	_, err := c.lh.LonghornV1beta2().Backups(ns).Create(c.ctx, &longhorn.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"longhorn.io/backup-volume": vol}},
		Spec:       longhorn.BackupSpec{SnapshotName: snap}}, metav1.CreateOptions{})
	c.must(err)
	var b *longhorn.Backup
	start := time.Now()
	snapReady := start.Sub(t0)
	var inProgress, progressed time.Duration // first seen InProgress, first seen progress > 0
	c.eventually("backup "+name+" completed", 2*time.Minute, func() (bool, string) {
		b, err = c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if inProgress == 0 && b.Status.State == longhorn.BackupStateInProgress {
			inProgress = time.Since(start)
		}
		if progressed == 0 && b.Status.Progress > 0 {
			progressed = time.Since(start)
		}
		if b.Status.State == longhorn.BackupStateError {
			t.Fatalf("backup %s failed: %s", name, b.Status.Error)
		}
		return b.Status.State == longhorn.BackupStateCompleted && b.Status.URL != "", fmt.Sprintf("%s %d%% %s", b.Status.State, b.Status.Progress, b.Status.Error)
	})
	t.Logf("MEASURE backup %s of %s: %v (newly uploaded %s bytes); stages: snapshot ready %v, backup InProgress +%v, progress>0 +%v, Completed +%v",
		name, vol, time.Since(start).Round(time.Millisecond), b.Status.NewlyUploadedDataSize, snapReady.Round(time.Millisecond),
		inProgress.Round(time.Millisecond), progressed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return b
}

// takeSnapshot takes snapshot snap of the attached volume vol (a Snapshot
// object) and waits until it is ready to use.
func (c *cluster) takeSnapshot(vol, snap string) {
	c.t.Helper()
	_, err := c.lh.LonghornV1beta2().Snapshots(ns).Create(c.ctx, &longhorn.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: snap, Namespace: ns},
		Spec:       longhorn.SnapshotSpec{Volume: vol, CreateSnapshot: true}}, metav1.CreateOptions{})
	c.must(err)
	c.eventually("snapshot "+snap+" ready", 60*time.Second, func() (bool, string) {
		s, err := c.lh.LonghornV1beta2().Snapshots(ns).Get(c.ctx, snap, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.ReadyToUse, fmt.Sprintf("%+v", s.Status)
	})
}

// waitRestored waits until volume vol restored its backup and detached
// (restoreRequired false, Restore condition False without a reason).
func (c *cluster) waitRestored(t *testing.T, vol string, timeout time.Duration) {
	t.Helper()
	c.eventually("volume "+vol+" restored and detached", timeout, func() (bool, string) {
		v := c.volume(vol)
		if v == nil {
			return false, "no volume"
		}
		cond := longhorn.GetCondition(v.Status.Conditions, longhorn.VolumeConditionTypeRestore)
		if cond.Reason == longhorn.VolumeConditionReasonRestoreFailure {
			t.Fatalf("restore of %s failed: %s", vol, cond.Message)
		}
		e := c.engineOf(vol)
		msg := fmt.Sprintf("initiated=%v required=%v state=%s cond=%s/%s %q", v.Status.RestoreInitiated, v.Status.RestoreRequired,
			v.Status.State, cond.Status, cond.Reason, cond.Message)
		if e != nil {
			msg += fmt.Sprintf(" engine last=%q restore=%v", e.Status.LastRestoredBackup, e.Status.RestoreStatus)
		}
		return v.Status.RestoreInitiated && !v.Status.RestoreRequired && v.Status.State == longhorn.VolumeStateDetached &&
			cond.Status == longhorn.ConditionStatusFalse && cond.Reason == "", msg
	})
}

// testBackupRestore backs a 3-replica volume with known data up to a vfs
// target, restores it into a new volume (spec.fromBackup) and reads the
// bytes back; a standby volume follows a second and a third backup and,
// activated, holds the third backup's bytes.
func testBackupRestore(t *testing.T, c *cluster) {
	target := "vfs://" + filepath.Join(c.dir, "backupstore")
	out, err := c.kubectl(fmt.Sprintf(`apiVersion: longhorn.io/v1beta2
kind: BackupTarget
metadata: {name: default, namespace: %s}
spec: {backupTargetURL: %q, credentialSecret: "", pollInterval: 3s}
`, ns, target), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("backup target: %v\n%s", err, out)
	}
	c.eventually("backup target available", 60*time.Second, func() (bool, string) {
		bt, err := c.lh.LonghornV1beta2().BackupTargets(ns).Get(c.ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return bt.Status.Available, fmt.Sprintf("%+v", bt.Status.Conditions)
	})
	const src, size = "bak-src", 64 << 20
	spec := fmt.Sprintf("size: %q, numberOfReplicas: 3, frontend: blockdev", strconv.Itoa(size))
	if out, err := c.kubectl(volumeYAML(src, spec), "apply", "-f", "-"); err != nil {
		t.Fatalf("volume %s: %v\n%s", src, err, out)
	}
	c.waitState(src, longhorn.VolumeStateDetached, "", 60*time.Second)
	c.attach(src, "n1")
	c.waitState(src, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	ep := c.hostEndpoint("n1", c.engineOf(src).Status.Endpoint)
	qemuIO(t, ep, "write -P 0x11 0 6M", "write -P 0x22 30M 2M", "write -P 0x33 62M 2M")
	b1 := c.backupOf(t, src, "bak-snap-1", "bak-backup-1")
	checkBackupMetrics(t, c, b1, src, "bak-snap-1")

	// restore into a new volume
	start := time.Now()
	restoreSpec := spec + fmt.Sprintf(", fromBackup: %q", b1.Status.URL)
	if out, err := c.kubectl(volumeYAML("bak-restored", restoreSpec), "apply", "-f", "-"); err != nil {
		t.Fatalf("restore volume: %v\n%s", err, out)
	}
	c.waitRestored(t, "bak-restored", 3*time.Minute)
	t.Logf("MEASURE restore of a %d MiB 3-replica volume (create->restored, detached): %v", size>>20, time.Since(start).Round(time.Millisecond))
	c.attach("bak-restored", "n2")
	c.waitState("bak-restored", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	rep := c.hostEndpoint("n2", c.engineOf("bak-restored").Status.Endpoint)
	qemuIO(t, rep, "read -P 0x11 0 6M", "read -P 0 6M 24M", "read -P 0x22 30M 2M", "read -P 0 32M 30M", "read -P 0x33 62M 2M")

	// a standby volume follows the next backup; activated, it holds it
	drSpec := fmt.Sprintf("size: %q, numberOfReplicas: 2, frontend: \"\", Standby: true, fromBackup: %q", strconv.Itoa(size), b1.Status.URL)
	if out, err := c.kubectl(volumeYAML("bak-dr", drSpec), "apply", "-f", "-"); err != nil {
		t.Fatalf("standby volume: %v\n%s", err, out)
	}
	c.waitEngineRestored(t, "bak-dr", "bak-backup-1")
	store := filepath.Join(c.dir, "backupstore")
	blocks := countBlocks(t, store)
	qemuIO(t, ep, "write -P 0x44 8M 2M")
	b2 := c.backupOf(t, src, "bak-snap-2", "bak-backup-2")
	checkIncremental(t, b2, store, &blocks)
	start = time.Now()
	c.waitEngineRestored(t, "bak-dr", "bak-backup-2")
	t.Logf("MEASURE standby volume restored the next backup %v after it completed", time.Since(start).Round(time.Millisecond))
	// one of the standby volume's replicas fails and is rebuilt: the volume
	// keeps following the backups, and the rebuilt replica holds them too
	drReplicas := c.replicasOf("bak-dr")
	if len(drReplicas) == 0 {
		t.Fatal("standby volume bak-dr has no replicas")
	}
	start = time.Now()
	c.rebuildOn(t, "bak-dr", drReplicas[0].Spec.NodeID, false)
	t.Logf("MEASURE standby volume's replica on %s rebuilt in %v", drReplicas[0].Spec.NodeID, time.Since(start).Round(time.Millisecond))
	// and the one after: the standby volume follows three backups incrementally
	qemuIO(t, ep, "write -P 0x55 40M 2M")
	b3 := c.backupOf(t, src, "bak-snap-3", "bak-backup-3")
	checkIncremental(t, b3, store, &blocks)
	c.waitEngineRestored(t, "bak-dr", "bak-backup-3")
	out, err = c.kubectl("", "-n", ns, "patch", "volumes.longhorn.io", "bak-dr", "--type", "merge", "-p", `{"spec":{"Standby":false,"frontend":"blockdev"}}`)
	if err != nil {
		t.Fatalf("activate: %v\n%s", err, out)
	}
	c.waitRestored(t, "bak-dr", 2*time.Minute)
	c.attach("bak-dr", "n3")
	c.waitState("bak-dr", longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	c.killSurvivor(t, "bak-dr", drReplicas)
	dep := c.hostEndpoint("n3", c.engineOf("bak-dr").Status.Endpoint)
	qemuIO(t, dep, "read -P 0x11 0 6M", "read -P 0 6M 2M", "read -P 0x44 8M 2M", "read -P 0x22 30M 2M", "read -P 0x55 40M 2M", "read -P 0x33 62M 2M")
	t.Run("recurring jobs", func(t *testing.T) { testRecurringJobs(t, c, src) })
	t.Run("recurring job on a detached volume", func(t *testing.T) { testDetachedRecurringJob(t, c, "bak-restored") })
	t.Run("corrupted block", func(t *testing.T) { testCorruptedBlock(t, c, filepath.Join(c.dir, "backupstore"), b1.Status.URL, spec) })
	t.Run("unreachable target", func(t *testing.T) { testUnreachableTarget(t, c, src, target) })
	t.Run("deleting backups removes unreferenced blocks", func(t *testing.T) { testDeleteBackupBlocks(t, c, store, src) })
	t.Run("target changed during a backup", func(t *testing.T) { testTargetChanged(t, c, src, target) })
	t.Run("replica killed during a backup", func(t *testing.T) { testReplicaKilledDuringBackup(t, c, src, spec) })
	for _, v := range []string{"bak-dr", "bak-restored", src} {
		c.attach(v, "")
	}
}

// killSurvivor kills the process of the standby volume's replica that was
// not rebuilt (before[1]; before[0] was) and waits until the volume is
// degraded, so that the reads that follow come from the rebuilt replica.
func (c *cluster) killSurvivor(t *testing.T, vol string, before []longhorn.Replica) {
	t.Helper()
	if len(before) < 2 {
		t.Fatalf("volume %s had %d replicas, want 2", vol, len(before))
	}
	var dir string
	for _, r := range c.replicasOf(vol) {
		if r.UID == before[1].UID {
			dir = r.Spec.DataDirectoryName
		}
	}
	ps := c.pids("engine replica", dir)
	if dir == "" || len(ps) != 1 {
		t.Fatalf("replica %s of %s that was not rebuilt: dir %q processes %v", before[1].Name, vol, dir, ps)
	}
	c.must(syscall.Kill(ps[0], syscall.SIGKILL))
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessDegraded, 60*time.Second)
}

// checkIncremental checks a backup taken after one new 2 MiB block was
// written: the store holds exactly one block more than *blocks (updated),
// and the backup reports that block, and only it, as newly uploaded (its
// compressed size: more than 0, at most 2 MiB and the compression framing).
// Each node's device nodes are its own (startPodProcess): with /dev/longhorn
// shared by concurrent runs on one machine, the write went to another run's
// volume and this failed with 0 bytes here and 2 blocks there.
func checkIncremental(t *testing.T, b *longhorn.Backup, store string, blocks *int) {
	t.Helper()
	n, _ := strconv.ParseInt(b.Status.NewlyUploadedDataSize, 10, 64)
	now := countBlocks(t, store)
	if now != *blocks+1 || n <= 0 || n > 2<<20+8192 {
		t.Fatalf("backup %s: store has %d blocks (was %d, want one more), newly uploaded %d bytes (want the one changed 2 MiB block)",
			b.Name, now, *blocks, n)
	}
	*blocks = now
}

// countBlocks counts the .blk files under the backupstore directory root.
func countBlocks(t *testing.T, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".blk") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("count blocks under %s: %v", root, err)
	}
	return n
}

// waitEngineRestored waits until the standby volume's engine holds backup.
func (c *cluster) waitEngineRestored(t *testing.T, vol, backup string) {
	t.Helper()
	c.eventually(fmt.Sprintf("standby %s holds %s", vol, backup), 3*time.Minute, func() (bool, string) {
		v, e := c.volume(vol), c.engineOf(vol)
		if v == nil || e == nil {
			return false, "no volume or engine"
		}
		cond := longhorn.GetCondition(v.Status.Conditions, longhorn.VolumeConditionTypeRestore)
		if cond.Reason == longhorn.VolumeConditionReasonRestoreFailure {
			t.Fatalf("restore of %s failed: %s", vol, cond.Message)
		}
		return e.Status.LastRestoredBackup == backup && v.Status.IsStandby && v.Status.State == longhorn.VolumeStateAttached,
			fmt.Sprintf("state=%s standby=%v lastBackup=%s engine last=%q requested=%q cond=%s", v.Status.State, v.Status.IsStandby,
				v.Status.LastBackup, e.Status.LastRestoredBackup, e.Spec.RequestedBackupRestore, cond.Message)
	})
}

// testRecurringJobs runs `longhorn recurring-job` (what a RecurringJob's
// CronJob runs) three times for a snapshot job and a backup job with retain
// 2 on the attached volume vol, labeled for them: exactly 2 snapshots and
// 2 backups of each job are left.
func testRecurringJobs(t *testing.T, c *cluster, vol string) {
	for _, j := range []struct{ name, task string }{{"bak-snap-job", "snapshot"}, {"bak-bk-job", "backup"}} {
		out, err := c.kubectl(fmt.Sprintf(`apiVersion: longhorn.io/v1beta2
kind: RecurringJob
metadata: {name: %s, namespace: %s}
spec: {task: %s, cron: "0 0 * * *", retain: 2, concurrency: 2, groups: [], labels: {team: storage}}
`, j.name, ns, j.task), "apply", "-f", "-")
		if err != nil {
			t.Fatalf("recurring job %s: %v\n%s", j.name, err, out)
		}
		c.eventually("cronjob "+j.name, 30*time.Second, func() (bool, string) {
			cj, err := c.kube.BatchV1().CronJobs(ns).Get(c.ctx, j.name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			cmd := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Command
			return cj.Spec.Schedule == "0 0 * * *" && strings.Join(cmd, " ") == "longhorn recurring-job "+j.name, fmt.Sprint(cmd)
		})
		if out, err := c.kubectl("", "-n", ns, "label", "volumes.longhorn.io", vol, "recurring-job.longhorn.io/"+j.name+"=enabled"); err != nil {
			t.Fatalf("label: %v\n%s", err, out)
		}
		for i := range 3 {
			start := time.Now()
			cmd := exec.Command(c.binary, "recurring-job", "--kubeconfig", env.KubeconfigPath, "--namespace", ns, "--timeout", "3m", j.name)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("recurring-job %s run %d: %v\n%s", j.name, i+1, err, out)
			}
			t.Logf("MEASURE recurring-job %s run %d: %v", j.name, i+1, time.Since(start).Round(time.Millisecond))
		}
	}
	c.eventually("2 snapshots of bak-snap-job", 60*time.Second, func() (bool, string) {
		n := c.countJobObjects(vol, "bak-snap-job", false)
		return n == 2, fmt.Sprintf("%d snapshots", n)
	})
	c.eventually("2 backups of bak-bk-job", 60*time.Second, func() (bool, string) {
		n := c.countJobObjects(vol, "bak-bk-job", true)
		return n == 2, fmt.Sprintf("%d backups", n)
	})
	// the backup job keeps its own snapshots to 2 as well
	c.eventually("2 snapshots of bak-bk-job", 60*time.Second, func() (bool, string) {
		n := c.countJobObjects(vol, "bak-bk-job", false)
		return n == 2, fmt.Sprintf("%d snapshots", n)
	})
}

// countJobObjects counts vol's Snapshot (or Backup) objects labeled
// RecurringJob=job.
func (c *cluster) countJobObjects(vol, job string, backups bool) int {
	n := 0
	if backups {
		list, err := c.lh.LonghornV1beta2().Backups(ns).List(c.ctx, metav1.ListOptions{LabelSelector: "longhorn.io/backup-volume=" + vol})
		if err != nil {
			return -1
		}
		for _, b := range list.Items {
			if b.Spec.Labels["RecurringJob"] == job && b.Status.State == longhorn.BackupStateCompleted {
				n++
			}
		}
		return n
	}
	list, err := c.lh.LonghornV1beta2().Snapshots(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return -1
	}
	for _, s := range list.Items {
		if s.Spec.Volume == vol && (s.Spec.Labels["RecurringJob"] == job || s.Status.Labels["RecurringJob"] == job) {
			n++
		}
	}
	return n
}

// testCorruptedBlock corrupts the stored block of 2 MiB of 0x11 (the
// first blocks of bak-src) and restores a backup using it: the restore
// fails with the Restore condition naming the block, and the volume never
// becomes usable; the block is put back after.
func testCorruptedBlock(t *testing.T, c *cluster, root, backupURL, spec string) {
	sum := sha512.Sum512(bytes.Repeat([]byte{0x11}, 2<<20))
	checksum := hex.EncodeToString(sum[:])[:64]
	paths, _ := filepath.Glob(filepath.Join(root, "backupstore", "volumes", "*", "*", "bak-src", "blocks",
		checksum[0:2], checksum[2:4], checksum+".blk"))
	if len(paths) != 1 {
		t.Fatalf("block %s: found %v", checksum, paths)
	}
	orig, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), orig...)
	for i := range bad {
		bad[i] ^= 0x5a
	}
	if err := os.WriteFile(paths[0], bad, 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.WriteFile(paths[0], orig, 0o644) }()
	if out, err := c.kubectl(volumeYAML("bak-corrupt", spec+fmt.Sprintf(", fromBackup: %q", backupURL)), "apply", "-f", "-"); err != nil {
		t.Fatalf("restore volume: %v\n%s", err, out)
	}
	c.eventually("restore of a corrupted block fails naming it", 2*time.Minute, func() (bool, string) {
		v := c.volume("bak-corrupt")
		if v == nil {
			return false, "no volume"
		}
		if !v.Status.RestoreRequired && v.Status.RestoreInitiated {
			t.Fatalf("volume restored from a corrupted block")
		}
		cond := longhorn.GetCondition(v.Status.Conditions, longhorn.VolumeConditionTypeRestore)
		return cond.Reason == longhorn.VolumeConditionReasonRestoreFailure && strings.Contains(cond.Message, checksum),
			fmt.Sprintf("%s/%s %q", cond.Status, cond.Reason, cond.Message)
	})
	if out, err := c.kubectl("", "-n", ns, "delete", "volumes.longhorn.io", "bak-corrupt", "--wait=false"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
}

// setTarget points the default BackupTarget at url and waits until its
// availability is want; it returns the Unavailable condition's message.
func (c *cluster) setTarget(t *testing.T, url string, want bool) string {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"backupTargetURL":%q}}`, url)
	if out, err := c.kubectl("", "-n", ns, "patch", "backuptargets.longhorn.io", "default", "--type", "merge", "-p", patch); err != nil {
		t.Fatalf("patch backup target: %v\n%s", err, out)
	}
	msg := ""
	c.eventually(fmt.Sprintf("backup target %s available=%v", url, want), 90*time.Second, func() (bool, string) {
		bt, err := c.lh.LonghornV1beta2().BackupTargets(ns).Get(c.ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := longhorn.GetCondition(bt.Status.Conditions, longhorn.BackupTargetConditionTypeUnavailable)
		msg = cond.Message
		return bt.Status.Available == want && (want || (cond.Status == longhorn.ConditionStatusTrue && msg != "")), fmt.Sprintf("%+v", bt.Status.Conditions)
	})
	return msg
}

// testUnreachableTarget: a target nothing answers on is reported in the
// BackupTarget's Unavailable condition, and a backup to it fails with that
// reason in bounded time instead of hanging; the target then comes back.
func testUnreachableTarget(t *testing.T, c *cluster, vol, good string) {
	start := time.Now()
	msg := c.setTarget(t, "nfs://127.0.0.77:/export", false)
	t.Logf("MEASURE unreachable target reported in %v: %s", time.Since(start).Round(time.Millisecond), msg)
	defer c.setTarget(t, good, true)
	_, err := c.lh.LonghornV1beta2().Backups(ns).Create(c.ctx, &longhorn.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "bak-backup-unreachable", Namespace: ns, Labels: map[string]string{"longhorn.io/backup-volume": vol}},
		Spec:       longhorn.BackupSpec{SnapshotName: "bak-snap-1"}}, metav1.CreateOptions{})
	c.must(err)
	start = time.Now()
	c.eventually("backup to an unreachable target fails", 90*time.Second, func() (bool, string) {
		b, err := c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, "bak-backup-unreachable", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return b.Status.State == longhorn.BackupStateError && strings.Contains(b.Status.Error, "unavailable"), fmt.Sprintf("%s %q", b.Status.State, b.Status.Error)
	})
	t.Logf("MEASURE backup to the unreachable target failed after %v", time.Since(start).Round(time.Millisecond))
	c.must(c.lh.LonghornV1beta2().Backups(ns).Delete(c.ctx, "bak-backup-unreachable", metav1.DeleteOptions{}))
}

// testDeleteBackupBlocks deletes vol's Backups through the API and counts
// the blocks in the store (Longhorn bug #1431): deleting bak-backup-1, whose
// blocks all later backups still use, removes none; deleting the rest
// removes every block of the volume.
func testDeleteBackupBlocks(t *testing.T, c *cluster, store, vol string) {
	before := countBlocks(t, store)
	deleteBackups := func(selector func(*longhorn.Backup) bool) {
		list, err := c.lh.LonghornV1beta2().Backups(ns).List(c.ctx, metav1.ListOptions{LabelSelector: "longhorn.io/backup-volume=" + vol})
		c.must(err)
		var names []string
		for i := range list.Items {
			if selector(&list.Items[i]) {
				names = append(names, list.Items[i].Name)
				c.must(c.lh.LonghornV1beta2().Backups(ns).Delete(c.ctx, list.Items[i].Name, metav1.DeleteOptions{}))
			}
		}
		start := time.Now()
		c.eventually(fmt.Sprintf("backups %v gone", names), 2*time.Minute, func() (bool, string) {
			for _, n := range names {
				if _, err := c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, n, metav1.GetOptions{}); err == nil {
					return false, n + " still there"
				}
			}
			return true, ""
		})
		t.Logf("MEASURE deleting %d backups of %s: %v", len(names), vol, time.Since(start).Round(time.Millisecond))
	}
	deleteBackups(func(b *longhorn.Backup) bool { return b.Name == "bak-backup-1" })
	if n := countBlocks(t, store); n != before || n == 0 {
		t.Fatalf("deleting bak-backup-1 (all its blocks still used by later backups): %d blocks, want %d", n, before)
	}
	deleteBackups(func(*longhorn.Backup) bool { return true })
	if n := countBlocks(t, store); n != 0 {
		t.Fatalf("all backups of %s deleted: %d blocks left in the store (was %d)", vol, n, before)
	}
	t.Logf("deleting all backups of %s removed all %d blocks", vol, before)
}

// holdBackupLock puts an acquired backup lock of another writer (Longhorn's
// lock file, as a second cluster backing up the same volume would) into the
// vfs store at root, so a backup of vol waits in its lock; it returns the
// locks directory and the held lock file.
func (c *cluster) holdBackupLock(root, vol string) (string, string) {
	locks := filepath.Join(root, filepath.FromSlash(backupstore.LocksPath(vol)))
	c.must(os.MkdirAll(locks, 0o755))
	held := filepath.Join(locks, "lock-00000000000000aa.lck")
	c.must(os.WriteFile(held, []byte(`{"Name":"lock-00000000000000aa","Type":1,"Acquired":true,"Operation":"backup"}`), 0o644))
	return locks, held
}

// waitLockFiles waits until the locks directory holds n files.
func (c *cluster) waitLockFiles(what, locks string, n int) {
	c.eventually(what, 60*time.Second, func() (bool, string) {
		entries, err := os.ReadDir(locks)
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return len(names) == n, fmt.Sprintf("locks %v", names)
	})
}

// createBackup creates Backup name of snapshot snap of vol.
func (c *cluster) createBackup(name, vol, snap string) {
	_, err := c.lh.LonghornV1beta2().Backups(ns).Create(c.ctx, &longhorn.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"longhorn.io/backup-volume": vol}},
		Spec:       longhorn.BackupSpec{SnapshotName: snap}}, metav1.CreateOptions{})
	c.must(err)
}

// testTargetChanged points the BackupTarget at another (empty, available)
// store while a backup of vol runs: the manager cancels the backup and the
// Backup fails with a message naming both targets and the cancel; the
// engine's lock and nothing else of the backup is left in the old store;
// the next backup, to the new target, uploads every block. The test holds
// the backup in its lock itself (holdBackupLock), so the target change
// always comes while it runs. Then a Backup deleted while it waits in its
// lock is canceled: its lock file goes before the Backup does.
func testTargetChanged(t *testing.T, c *cluster, vol, good string) {
	const name = "bak-backup-switch"
	root := filepath.Join(c.dir, "backupstore")
	oldBlocks := countBlocks(t, root)
	locks, held := c.holdBackupLock(root, vol)
	defer os.Remove(held)
	c.createBackup(name, vol, "bak-snap-3")
	c.waitLockFiles("backup "+name+" waits for its lock behind the test's", locks, 2)
	if b, err := c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, name, metav1.GetOptions{}); err != nil || b.Status.State == longhorn.BackupStateCompleted || b.Status.State == longhorn.BackupStateError {
		t.Fatalf("backup %s ended while its lock was held: %v %+v", name, err, b.Status)
	}
	otherDir := filepath.Join(c.dir, "backupstore-other")
	other := "vfs://" + otherDir
	c.must(os.MkdirAll(otherDir, 0o755))
	c.setTarget(t, other, true)
	start := time.Now()
	c.eventually("backup "+name+" canceled, naming the target change", 60*time.Second, func() (bool, string) {
		b, err := c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if b.Status.State == longhorn.BackupStateCompleted {
			t.Fatalf("backup %s completed after the target changed", name)
		}
		return b.Status.State == longhorn.BackupStateError &&
				strings.Contains(b.Status.Error, "changed from "+good+" to "+other) && strings.Contains(b.Status.Error, "canceled"),
			fmt.Sprintf("%s %q", b.Status.State, b.Status.Error)
	})
	t.Logf("MEASURE backup canceled %v after the target change", time.Since(start).Round(time.Millisecond))
	c.waitLockFiles("the canceled backup's lock released", locks, 1)
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(backupstore.BackupConfigPath(vol, name)))); err == nil {
		t.Fatalf("the canceled backup %s left its .cfg in the old target", name)
	}
	if n := countBlocks(t, root); n != oldBlocks {
		t.Fatalf("the canceled backup (held in its lock) changed the old store's blocks: %d, was %d", n, oldBlocks)
	}
	c.must(os.Remove(held)) // a deletion in this store would wait behind it
	next := c.backupOf(t, vol, "bak-snap-switch", name+"-next")
	if n, nb := countBlocks(t, otherDir), next.Status.NewlyUploadedDataSize; n == 0 || nb == "0" {
		t.Fatalf("the next backup to the new target: %d blocks there, newly uploaded %s bytes; want every block", n, nb)
	}
	t.Logf("MEASURE the next backup uploaded %d blocks (%s bytes) to the new target", countBlocks(t, otherDir), next.Status.NewlyUploadedDataSize)
	c.must(c.lh.LonghornV1beta2().Backups(ns).Delete(c.ctx, name+"-next", metav1.DeleteOptions{}))
	c.waitBackupGone(name + "-next")
	c.setTarget(t, good, true)
	c.must(c.lh.LonghornV1beta2().Backups(ns).Delete(c.ctx, name, metav1.DeleteOptions{}))
	c.waitBackupGone(name)

	// a Backup deleted while it waits in its lock is canceled first
	const heldName = "bak-backup-held"
	_, held = c.holdBackupLock(root, vol)
	c.createBackup(heldName, vol, "bak-snap-3")
	c.waitLockFiles("backup "+heldName+" waits for its lock behind the test's", locks, 2)
	c.must(c.lh.LonghornV1beta2().Backups(ns).Delete(c.ctx, heldName, metav1.DeleteOptions{}))
	start = time.Now()
	c.waitLockFiles("the deleted backup's lock released", locks, 1)
	t.Logf("MEASURE deleted running backup's lock released %v after the deletion", time.Since(start).Round(time.Millisecond))
	c.must(os.Remove(held))
	c.waitBackupGone(heldName)
}

// waitBackupGone waits until Backup name is gone.
func (c *cluster) waitBackupGone(name string) {
	c.eventually("backup "+name+" deleted", 90*time.Second, func() (bool, string) {
		_, err := c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, name, metav1.GetOptions{})
		return err != nil, "still there"
	})
}

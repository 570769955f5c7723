package controller

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func backupTarget(url string) *longhorn.BackupTarget {
	return &longhorn.BackupTarget{ObjectMeta: metav1.ObjectMeta{Name: longhorn.BackupTargetDefault, Namespace: testNS},
		Spec: longhorn.BackupTargetSpec{BackupTargetURL: url, PollInterval: metav1.Duration{Duration: time.Minute}}}
}

func TestDecideBackupTargetStatus(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	st := decideBackupTargetStatus(longhorn.BackupTargetStatus{}, errors.New("dial tcp: connection refused"), now)
	c := longhorn.GetCondition(st.Conditions, longhorn.BackupTargetConditionTypeUnavailable)
	if st.Available || c.Status != longhorn.ConditionStatusTrue || c.Reason != longhorn.BackupTargetConditionReasonUnavailable ||
		!strings.Contains(c.Message, "connection refused") {
		t.Fatalf("unreachable: %+v", st)
	}
	st = decideBackupTargetStatus(st, nil, now.Add(time.Minute))
	c = longhorn.GetCondition(st.Conditions, longhorn.BackupTargetConditionTypeUnavailable)
	if !st.Available || c.Status != longhorn.ConditionStatusFalse || c.Message != "" || !st.LastSyncedAt.Time.Equal(now.Add(time.Minute)) {
		t.Fatalf("reachable again: %+v", st)
	}
}

func TestPlanBackupVolumes(t *testing.T) {
	bv := func(name, target, vol string) *longhorn.BackupVolume {
		return &longhorn.BackupVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: longhorn.BackupVolumeSpec{BackupTargetName: target, VolumeName: vol}}
	}
	create, remove := planBackupVolumes("default", []string{"b", "a", "c"},
		[]*longhorn.BackupVolume{bv("a", "default", "a"), bv("gone", "default", "gone"), bv("x-other", "other", "x")})
	if len(create) != 2 || create[0].Name != "b" || create[1].Name != "c" || create[0].Labels[labelBackupVolume] != "b" {
		t.Fatalf("create %v", create)
	}
	if len(remove) != 1 || remove[0] != "gone" {
		t.Fatalf("remove %v", remove)
	}
	if n := BackupVolumeName("secondary", "vol"); n != "vol-secondary" {
		t.Fatalf("name %s", n)
	}
}

// copyFixture copies the backupstore's Longhorn-format fixture into a
// temporary target directory.
func copyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Abs("../engine/backupstore/testdata/longhorn-fixture")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// One sync of a reachable target (a Longhorn-format store) marks it
// available and creates a BackupVolume per backup volume; a bad URL and an
// unreachable server are reported in the Unavailable condition.
func TestBackupTargetSync(t *testing.T) {
	dir := copyFixture(t)
	f := newFixture(t, backupTarget("vfs://"+dir))
	c := fixtureController[*BackupTargetController](f)
	res, err := c.syncBackupTarget(f.ctx, testNS+"/default")
	if err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("sync: %v %v", res, err)
	}
	bt, _ := f.lh.LonghornV1beta2().BackupTargets(testNS).Get(f.ctx, "default", metav1.GetOptions{})
	if !bt.Status.Available || bt.Status.OwnerID != "n1" {
		t.Fatalf("status %+v", bt.Status)
	}
	for _, v := range []string{"lh-fixture", "lh-legacy"} {
		bv, err := f.lh.LonghornV1beta2().BackupVolumes(testNS).Get(f.ctx, v, metav1.GetOptions{})
		if err != nil || bv.Spec.VolumeName != v || bv.Spec.BackupTargetName != "default" || bv.Labels[labelBackupTarget] != "default" {
			t.Fatalf("backup volume %s: %+v %v", v, bv, err)
		}
	}

	t.Setenv("LONGHORN_NFS_CLIENT", "userspace")
	for _, tc := range []struct{ url, want string }{
		{"s3://", "s3://"},
		{"nfs://127.0.0.1:/export?nfsOptions=port=1,mountport=1", "unavailable"},
		{"", "empty"},
	} {
		bt, _ := f.lh.LonghornV1beta2().BackupTargets(testNS).Get(f.ctx, "default", metav1.GetOptions{})
		bt.Spec.BackupTargetURL = tc.url
		if _, err := f.lh.LonghornV1beta2().BackupTargets(testNS).Update(f.ctx, bt, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			ro, err := f.ds.GetBackupTargetRO(f.ctx, "default")
			return err == nil && ro.Spec.BackupTargetURL == tc.url
		})
		start := time.Now()
		if _, err := c.syncBackupTarget(f.ctx, testNS+"/default"); err != nil {
			t.Fatal(err)
		}
		bt, _ = f.lh.LonghornV1beta2().BackupTargets(testNS).Get(f.ctx, "default", metav1.GetOptions{})
		cond := longhorn.GetCondition(bt.Status.Conditions, longhorn.BackupTargetConditionTypeUnavailable)
		if bt.Status.Available || cond.Status != longhorn.ConditionStatusTrue || !strings.Contains(cond.Message, tc.want) || time.Since(start) > 30*time.Second {
			t.Fatalf("%q: available %v, condition %+v after %v; want Unavailable naming %q", tc.url, bt.Status.Available, cond, time.Since(start), tc.want)
		}
	}
}

func countBlocks(t *testing.T, root string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".blk") {
			n++
		}
		return nil
	})
	return n
}

// A BackupVolume sync creates a Completed Backup object per backup in the
// store; deleting the Backup objects removes the backups and every block
// they alone used.
func TestBackupVolumeSyncAndBackupDeletion(t *testing.T) {
	dir := copyFixture(t)
	bt := backupTarget("vfs://" + dir)
	bt.Status.Available = true
	bv := &longhorn.BackupVolume{ObjectMeta: metav1.ObjectMeta{Name: "lh-fixture", Namespace: testNS,
		Labels: map[string]string{labelBackupTarget: "default", labelBackupVolume: "lh-fixture"}},
		Spec: longhorn.BackupVolumeSpec{BackupTargetName: "default", VolumeName: "lh-fixture"}}
	vol := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "lh-fixture", Namespace: testNS}}
	f := newFixture(t, bt, bv, vol)
	bvc := fixtureController[*BackupVolumeController](f)
	bc := fixtureController[*BackupController](f)
	key := testNS + "/lh-fixture"
	if _, err := bvc.syncBackupVolume(f.ctx, key); err != nil { // adds the finalizer
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		o, err := f.ds.GetBackupVolumeRO(f.ctx, "lh-fixture")
		return err == nil && len(o.Finalizers) == 1
	})
	if _, err := bvc.syncBackupVolume(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	got, _ := f.lh.LonghornV1beta2().BackupVolumes(testNS).Get(f.ctx, "lh-fixture", metav1.GetOptions{})
	if got.Status.LastBackupName != "backup-fedcba9876543210" || got.Status.Size != "6291456" {
		t.Fatalf("backup volume status %+v", got.Status)
	}
	if v, _ := f.lh.LonghornV1beta2().Volumes(testNS).Get(f.ctx, "lh-fixture", metav1.GetOptions{}); v.Status.LastBackup != "backup-fedcba9876543210" ||
		v.Status.LastBackupAt != "2026-10-05T01:40:38Z" {
		t.Fatalf("volume lastBackup %q at %q", v.Status.LastBackup, v.Status.LastBackupAt)
	}
	blocks := filepath.Join(dir, "backupstore/volumes/b8/e3/lh-fixture/blocks")
	if n := countBlocks(t, blocks); n != 4 {
		t.Fatalf("%d blocks before deletion", n)
	}
	for i, tc := range []struct {
		name      string
		remaining int
	}{{"backup-0123456789abcdef", 3}, {"backup-fedcba9876543210", 0}} {
		b, err := f.lh.LonghornV1beta2().Backups(testNS).Get(f.ctx, tc.name, metav1.GetOptions{})
		if err != nil || b.Status.State != longhorn.BackupStateCompleted || b.Status.SnapshotName != []string{"snap-1", "snap-2"}[i] {
			t.Fatalf("backup object %s: %+v %v", tc.name, b, err)
		}
		now := metav1.NewTime(f.now)
		b.DeletionTimestamp = &now
		if _, err := f.lh.LonghornV1beta2().Backups(testNS).Update(f.ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			o, err := f.ds.GetBackupRO(f.ctx, tc.name)
			return err == nil && o.DeletionTimestamp != nil
		})
		if _, err := bc.syncBackup(f.ctx, testNS+"/"+tc.name); err != nil {
			t.Fatal(err)
		}
		if n := countBlocks(t, blocks); n != tc.remaining {
			t.Fatalf("after deleting %s: %d blocks, want %d", tc.name, n, tc.remaining)
		}
	}
}

// A backup uses the Backup's block size, else the volume's; the volume's
// compression (fixed at creation), else the setting.
func TestBackupOptions(t *testing.T) {
	b := &longhorn.Backup{}
	v := &longhorn.Volume{}
	if p, c := backupOptions(b, nil, "lz4"); len(p) != 0 || c != "lz4" {
		t.Errorf("no volume: %v %q", p, c)
	}
	v.Spec.BackupBlockSize, v.Spec.BackupCompressionMethod = 16<<20, longhorn.BackupCompressionMethodGzip
	if p, c := backupOptions(b, v, "lz4"); p["backup-block-size"] != "16777216" || c != "gzip" {
		t.Errorf("volume's: %v %q", p, c)
	}
	b.Spec.BackupBlockSize, b.Spec.BackupMode = 2<<20, longhorn.BackupModeIncremental
	if p, _ := backupOptions(b, v, "lz4"); p["backup-block-size"] != "2097152" || p["backup-mode"] != "incremental" {
		t.Errorf("backup's: %v", p)
	}
}

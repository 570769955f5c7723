package csi_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestFromBackup: the StorageClass parameter fromBackup restores a volume
// from a backup. A Block volume made through the CSI services is written,
// snapshotted through CreateSnapshot (type snap) and backed up to a vfs
// backup target (a Backup object, the manager's backup controller); a
// second CreateVolume with fromBackup set to the backup's URL gives a
// volume that, once restored, reads the same bytes.
func TestFromBackup(t *testing.T) {
	n := newNode(t)
	c := dialDriver(t, n, startDriver(t, n))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bt := &longhorn.BackupTarget{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns},
		Spec: longhorn.BackupTargetSpec{BackupTargetURL: "vfs://" + filepath.Join(n.dir, "backupstore"), PollInterval: metav1.Duration{Duration: 3 * time.Second}}}
	if _, err := n.lh.LonghornV1beta2().BackupTargets(ns).Create(ctx, bt, metav1.CreateOptions{}); err != nil {
		if _, uerr := n.lh.LonghornV1beta2().BackupTargets(ns).Get(ctx, "default", metav1.GetOptions{}); uerr != nil {
			t.Fatal(err)
		}
		got, _ := n.lh.LonghornV1beta2().BackupTargets(ns).Get(ctx, "default", metav1.GetOptions{})
		got.Spec = bt.Spec
		_, err = n.lh.LonghornV1beta2().BackupTargets(ns).Update(ctx, got, metav1.UpdateOptions{})
		n.must(err)
	}
	n.eventually("backup target available", 60*time.Second, func() (bool, string) {
		b, err := n.lh.LonghornV1beta2().BackupTargets(ns).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return b.Status.Available, fmt.Sprintf("%+v", b.Status.Conditions)
	})

	params := map[string]string{"numberOfReplicas": "1"}
	src := c.createBlock(t, ctx, "pvc-backup-src", params)
	staging, target := filepath.Join(n.dir, "bk", "staging"), filepath.Join(n.dir, "bk", "dev")
	c.attach(t, ctx, src, staging, target, blockCap(), nil)
	p := make([]byte, 4<<20)
	_, _ = rand.Read(p)
	rawIO(t, target, p, 8<<20, true)
	snap, err := c.ctl.CreateSnapshot(ctx, &csipb.CreateSnapshotRequest{Name: "snapshot-for-backup", SourceVolumeId: src,
		Parameters: map[string]string{"type": "snap"}})
	if err != nil || !snap.GetSnapshot().GetReadyToUse() {
		t.Fatalf("CreateSnapshot: %v %v", snap, err)
	}
	url := n.backupOf(ctx, src, "snapshot-for-backup", "backup-csi")
	c.detach(t, ctx, src, staging, target)

	params["fromBackup"] = url
	restored := c.createBlock(t, ctx, "pvc-restored", params)
	n.eventually("volume restored and detached", 3*time.Minute, func() (bool, string) {
		v, err := n.lh.LonghornV1beta2().Volumes(ns).Get(ctx, restored, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return v.Spec.FromBackup == url && v.Status.RestoreInitiated && !v.Status.RestoreRequired && v.Status.State == longhorn.VolumeStateDetached,
			fmt.Sprintf("fromBackup %q initiated=%v required=%v state=%s", v.Spec.FromBackup, v.Status.RestoreInitiated, v.Status.RestoreRequired, v.Status.State)
	})
	c.attach(t, ctx, restored, staging, target, blockCap(), nil)
	rawIO(t, target, p, 8<<20, false)
	c.detach(t, ctx, restored, staging, target)
	t.Logf("volume %s restored from %s reads the %d MiB written to %s", restored, url, len(p)>>20, src)
}

// createBlock creates a 64 MiB Block volume through CreateVolume and
// deletes it at the end.
func (c csiClients) createBlock(t *testing.T, ctx context.Context, name string, params map[string]string) string {
	t.Helper()
	vol, err := c.ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: name, Parameters: params,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 64 << 20}, VolumeCapabilities: []*csipb.VolumeCapability{blockCap()}})
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", name, err)
	}
	id := vol.GetVolume().GetVolumeId()
	t.Cleanup(func() {
		if _, err := c.ctl.DeleteVolume(context.Background(), &csipb.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Errorf("DeleteVolume %s: %v", id, err)
		}
	})
	return id
}

// backupOf backs snapshot snap of volume up (a Backup object, as the UI and
// recurring jobs make them) and returns the backup's URL.
func (n *node) backupOf(ctx context.Context, volume, snap, name string) string {
	n.t.Helper()
	_, err := n.lh.LonghornV1beta2().Backups(ns).Create(ctx, &longhorn.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"longhorn.io/backup-volume": volume}},
		Spec:       longhorn.BackupSpec{SnapshotName: snap}}, metav1.CreateOptions{})
	n.must(err)
	var url string
	n.eventually("backup "+name+" completed", 2*time.Minute, func() (bool, string) {
		b, err := n.lh.LonghornV1beta2().Backups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if b.Status.State == longhorn.BackupStateError {
			n.t.Fatalf("backup %s failed: %s", name, b.Status.Error)
		}
		url = b.Status.URL
		return b.Status.State == longhorn.BackupStateCompleted && url != "", fmt.Sprintf("%s %d%% %s", b.Status.State, b.Status.Progress, b.Status.Error)
	})
	return url
}

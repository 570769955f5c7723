package csi_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/csi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestFromBackup: the StorageClass parameter fromBackup restores a volume
// from a backup. A Block volume made through the CSI services is written,
// snapshotted through CreateSnapshot (type snap) and backed up to a vfs
// backup target (a Backup object, the manager's backup controller); a
// second CreateVolume with fromBackup set to the backup's URL gives a
// volume that, once restored, reads the same bytes. A CSI snapshot of type
// bak (Longhorn's default: a snapshot and its backup, bak://<vol>/<backup>)
// is ready once the backup completed; a volume made from it is restored
// from the backup and reads the same bytes; deleting it deletes the backup.
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
	bak := c.backupSnapshot(t, ctx, src, "snapshot-bak")
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

	// A volume made from the VolumeSnapshot of type bak is restored from
	// its backup (fromBackup); deleting the snapshot deletes the backup.
	vol, err := c.ctl.CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: "pvc-from-bak", Parameters: map[string]string{"numberOfReplicas": "1"},
		VolumeCapabilities: []*csipb.VolumeCapability{blockCap()},
		VolumeContentSource: &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
			Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: bak.GetSnapshotId()}}}})
	if err != nil {
		t.Fatalf("CreateVolume from %s: %v", bak.GetSnapshotId(), err)
	}
	fromBak := vol.GetVolume().GetVolumeId()
	t.Cleanup(func() { _, _ = c.ctl.DeleteVolume(context.Background(), &csipb.DeleteVolumeRequest{VolumeId: fromBak}) })
	n.eventually("volume from the bak snapshot restored", 3*time.Minute, func() (bool, string) {
		v, err := n.lh.LonghornV1beta2().Volumes(ns).Get(ctx, fromBak, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return v.Spec.FromBackup != "" && v.Status.RestoreInitiated && !v.Status.RestoreRequired && v.Status.State == longhorn.VolumeStateDetached,
			fmt.Sprintf("fromBackup %q required=%v state=%s", v.Spec.FromBackup, v.Status.RestoreRequired, v.Status.State)
	})
	c.attach(t, ctx, fromBak, staging, target, blockCap(), nil)
	rawIO(t, target, p, 8<<20, false)
	c.detach(t, ctx, fromBak, staging, target)
	if _, err := c.ctl.DeleteSnapshot(ctx, &csipb.DeleteSnapshotRequest{SnapshotId: bak.GetSnapshotId()}); err != nil {
		t.Fatalf("DeleteSnapshot %s: %v", bak.GetSnapshotId(), err)
	}
	_, backup, _ := csi.ParseBackupID(bak.GetSnapshotId())
	n.eventually("backup "+backup+" deleted", 2*time.Minute, func() (bool, string) {
		_, err := n.lh.LonghornV1beta2().Backups(ns).Get(ctx, backup, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	t.Logf("volume %s made from VolumeSnapshot %s (type bak) reads the same %d MiB; deleting the snapshot deleted the backup", fromBak, bak.GetSnapshotId(), len(p)>>20)
}

// backupSnapshot takes a CSI snapshot of type bak of volume (a Longhorn
// snapshot and its backup), asking again as the snapshotter does until it
// is ready to use, and checks its id is bak://<volume>/<backup>.
func (c csiClients) backupSnapshot(t *testing.T, ctx context.Context, volume, name string) *csipb.Snapshot {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := c.ctl.CreateSnapshot(ctx, &csipb.CreateSnapshotRequest{Name: name, SourceVolumeId: volume,
			Parameters: map[string]string{"type": "bak"}})
		if err != nil {
			t.Fatalf("CreateSnapshot type bak: %v", err)
		}
		sn := r.GetSnapshot()
		if v, b, ok := csi.ParseBackupID(sn.GetSnapshotId()); !ok || v != volume || b == "" {
			t.Fatalf("snapshot id %q, want bak://%s/<backup>", sn.GetSnapshotId(), volume)
		}
		if sn.GetReadyToUse() {
			return sn
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot %s not ready to use within 2 min", sn.GetSnapshotId())
		}
		time.Sleep(time.Second)
	}
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

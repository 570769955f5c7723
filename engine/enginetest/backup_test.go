package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	"github.com/longhorn-go/longhorn/engine/backuptask"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/internal/testutil"
	"github.com/longhorn-go/longhorn/testbed/backuptarget"
)

// startMaintenanceEngine starts an engine without a frontend (Longhorn's
// maintenance mode, as restore and DR volumes run).
func startMaintenanceEngine(t *testing.T, vol string, size int64, reps []*replicaProc) enginerpc.ControllerServiceClient {
	t.Helper()
	url := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	args := []string{"engine", "controller", vol, "--size", strconv.FormatInt(size, 10), "--listen", url, "--frontend", ""}
	for _, r := range reps {
		args = append(args, "--replica", r.addr)
	}
	p := startProc(t, "engine-"+vol, args...)
	conn, err := grpc.NewClient(url, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := enginerpc.NewControllerServiceClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.ReplicaList(context.Background(), &emptypb.Empty{})
		if err == nil && len(r.GetReplicas()) == len(reps) {
			return c
		}
		if p.exited() || time.Now().After(deadline) {
			t.Fatalf("restore engine not ready: %v\n%s", err, p.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitTaskBackup(t *testing.T, task *backuptask.Task, name, replica string) *enginerpc.BackupStatusResponse {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		st, _, err := task.BackupStatus(context.Background(), name, replica)
		if err != nil {
			t.Fatalf("backup status: %v", err)
		}
		if st.GetState() != "in_progress" {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("backup %s did not finish", name)
	return nil
}

func waitTaskRestore(t *testing.T, task *backuptask.Task, backup string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		sts, err := task.RestoreStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for addr, st := range sts {
			if st.GetError() != "" {
				t.Fatalf("restore on %s: %s", addr, st.GetError())
			}
			if !st.GetIsRestoring() && st.GetLastRestored() == backup {
				done++
			}
		}
		if done == len(sts) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("restore of %s did not finish", backup)
}

// A 3-replica volume with known data is backed up to S3 and restored into a
// new 3-replica volume in maintenance mode; after 10 % of the blocks change
// a second backup uploads only those, and the restored volume follows it
// incrementally (as a DR volume does). Every restored replica holds the
// source's bytes.
func TestBackupRestoreS3ThreeReplicas(t *testing.T) {
	testutilTools(t, "qemu-img", "qemu-io")
	s3 := backuptarget.StartS3(t, "")
	testBackupRestoreThreeReplicas(t, s3.URL, s3.Credential)
}

// The same against nfs-ganesha (NFSv3, the userspace client when the
// kernel has none) and a plain directory (vfs).
func TestBackupRestoreNFSThreeReplicas(t *testing.T) {
	testutilTools(t, "qemu-img", "qemu-io")
	nfs := backuptarget.StartNFS(t)
	testBackupRestoreThreeReplicas(t, nfs.URL, nil)
}

func TestBackupRestoreVFSThreeReplicas(t *testing.T) {
	testutilTools(t, "qemu-img", "qemu-io")
	testBackupRestoreThreeReplicas(t, "vfs://"+t.TempDir(), nil)
}

func testBackupRestoreThreeReplicas(t *testing.T, target string, cred map[string]string) {
	const size = 40 << 20 // 20 blocks of 2 MiB
	dir := t.TempDir()
	var reps []*replicaProc
	for i := 0; i < 3; i++ {
		reps = append(reps, startReplica(t, filepath.Join(dir, fmt.Sprintf("r%d", i)), size))
	}
	e := startEngine(t, "vol1", size, reps)
	src := fileOf(t, size, 3)
	run(t, 2*time.Minute, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src, e.uri())
	ctx := context.Background()
	if _, err := e.api().VolumeSnapshot(ctx, &enginerpc.VolumeSnapshotRequest{Name: "snap-1"}); err != nil {
		t.Fatal(err)
	}
	task := &backuptask.Task{Controller: e.api()}
	req := &backuptask.CreateRequest{SnapshotFileName: "snap-1", BackupTarget: target, VolumeName: "vol1", Credential: cred}
	res, err := task.CreateBackup(ctx, req)
	if err != nil || res.IsIncremental {
		t.Fatalf("backup 1: %+v %v", res, err)
	}
	st1 := waitTaskBackup(t, task, res.BackupName, res.ReplicaAddress)
	if st1.GetState() != "complete" {
		t.Fatalf("backup 1: %+v", st1)
	}

	// the restore volume
	var rreps []*replicaProc
	for i := 0; i < 3; i++ {
		rreps = append(rreps, startReplica(t, filepath.Join(dir, fmt.Sprintf("restore-r%d", i)), size))
	}
	rtask := &backuptask.Task{Controller: startMaintenanceEngine(t, "vol1-restore", size, rreps)}
	if err := rtask.RestoreBackup(ctx, st1.GetBackupUrl(), cred, 2); err != nil {
		t.Fatal(err)
	}
	waitTaskRestore(t, rtask, res.BackupName)
	want, _ := os.ReadFile(src)
	for _, r := range rreps {
		if !bytes.Equal(r.readAll(size), want) {
			t.Fatalf("restored replica %s differs from the backed-up data", r.addr)
		}
	}

	// 10 % of the blocks change: blocks 3 and 11
	run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x5a 6M 1M", "-c", "write -P 0xa5 22M 4k", e.uri())
	if _, err := e.api().VolumeSnapshot(ctx, &enginerpc.VolumeSnapshotRequest{Name: "snap-2"}); err != nil {
		t.Fatal(err)
	}
	store, err := backupstore.Open(ctx, target, cred, backupstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	blocksBefore, err := store.ListBlocks(ctx, "vol1")
	if err != nil {
		t.Fatal(err)
	}
	req.SnapshotFileName = "snap-2"
	res2, err := task.CreateBackup(ctx, req)
	if err != nil || !res2.IsIncremental {
		t.Fatalf("backup 2: %+v %v; want incremental", res2, err)
	}
	st2 := waitTaskBackup(t, task, res2.BackupName, res2.ReplicaAddress)
	info, err := store.InspectBackup(ctx, "vol1", res2.BackupName)
	if err != nil {
		t.Fatal(err)
	}
	const changed = 2 // blocks 3 and 11; their data compresses, so less than 2 blocks go up
	if info.NewlyUploadedDataSize == 0 || info.NewlyUploadedDataSize > changed*(2<<20)+8192 {
		t.Fatalf("backup 2 uploaded %d bytes; want at most the %d changed blocks", info.NewlyUploadedDataSize, changed)
	}
	blocksAfter, err := store.ListBlocks(ctx, "vol1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(blocksAfter) - len(blocksBefore); n != changed {
		t.Fatalf("backup 2 added %d blocks to the store (%d -> %d); want the %d changed ones", n, len(blocksBefore), len(blocksAfter), changed)
	}
	if err := rtask.RestoreBackup(ctx, st2.GetBackupUrl(), cred, 2); err != nil {
		t.Fatal(err)
	}
	waitTaskRestore(t, rtask, res2.BackupName)
	back := filepath.Join(t.TempDir(), "after.raw")
	run(t, 2*time.Minute, "qemu-img", "convert", "-f", "raw", "-O", "raw", e.uri(), back)
	want2, _ := os.ReadFile(back)
	for _, r := range rreps {
		if !bytes.Equal(r.readAll(size), want2) {
			t.Fatalf("incrementally restored replica %s differs from snap-2", r.addr)
		}
	}
}

// A replica killed while it takes a backup: the backup fails (its status
// cannot be read, or says error), the volume keeps serving I/O on the other
// replicas, and a retry succeeds from another RW replica.
func TestBackupReplicaKilledThenRetry(t *testing.T) {
	testutilTools(t, "qemu-img", "qemu-io")
	s3 := backuptarget.StartS3(t, "")
	const size = 64 << 20
	dir := t.TempDir()
	var reps []*replicaProc
	for i := 0; i < 3; i++ {
		reps = append(reps, startReplica(t, filepath.Join(dir, fmt.Sprintf("r%d", i)), size))
	}
	e := startEngine(t, "vol2", size, reps)
	run(t, 2*time.Minute, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", fileOf(t, size, 4), e.uri())
	ctx := context.Background()
	if _, err := e.api().VolumeSnapshot(ctx, &enginerpc.VolumeSnapshotRequest{Name: "snap-k"}); err != nil {
		t.Fatal(err)
	}
	task := &backuptask.Task{Controller: e.api()}
	req := &backuptask.CreateRequest{SnapshotFileName: "snap-k", BackupTarget: s3.URL, VolumeName: "vol2", Credential: s3.Credential}
	res, err := task.CreateBackup(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if r.addr == res.ReplicaAddress {
			r.kill()
		}
	}
	if st, _, err := task.BackupStatus(ctx, res.BackupName, res.ReplicaAddress); err == nil && st.GetState() == "complete" {
		t.Fatalf("backup on the killed replica reports complete: %+v", st)
	}
	// the volume still serves I/O
	out := run(t, time.Minute, "qemu-io", "-f", "raw", "-c", "write -P 0x77 0 64k", "-c", "read -P 0x77 0 64k", e.uri())
	if strings.Contains(out, "failed") {
		t.Fatalf("I/O after the kill: %s", out)
	}
	// The dead replica's lock file would hold the next backup of the volume
	// until it expires (150 s, Longhorn's lock duration); expire it now.
	locks, _ := filepath.Glob(filepath.Join(s3.Root, s3.Bucket, "backupstore", "volumes", "*", "*", "vol2", "locks", "*"))
	for _, l := range locks {
		_ = os.RemoveAll(l)
	}
	// retry until the engine has dropped the dead replica and another RW one takes it
	deadline := time.Now().Add(60 * time.Second)
	for {
		res2, err := task.CreateBackup(ctx, req)
		if err == nil && res2.ReplicaAddress != res.ReplicaAddress {
			if st := waitTaskBackup(t, task, res2.BackupName, res2.ReplicaAddress); st.GetState() != "complete" {
				t.Fatalf("retry: %+v", st)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry never succeeded: %+v %v", res2, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

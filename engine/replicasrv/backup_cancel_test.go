package replicasrv

import (
	"context"
	"math/rand"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/syncagent"
	"github.com/longhorn-go/longhorn/engine/syncagent/backup"
)

func agentBackupStatus(t *testing.T, a *syncagent.Agent, name string) *enginerpc.BackupStatusResponse {
	t.Helper()
	st, err := a.BackupStatus(context.Background(), &enginerpc.BackupStatusRequest{Backup: name})
	if err != nil {
		t.Fatalf("backup status %s: %v", name, err)
	}
	return st
}

func waitAgentBackup(t *testing.T, a *syncagent.Agent, name string) *enginerpc.BackupStatusResponse {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if st := agentBackupStatus(t, a, name); st.GetState() != backup.StateInProgress {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("backup %s did not end", name)
	return nil
}

// A backup canceled through the sync agent's lhext.SyncAgentExtService
// while it uploads ends in error saying so, with fewer than all its blocks
// uploaded, its lock released and no .cfg left; a cancel of an ended backup
// is a no-op and of an unknown one NotFound. The next backup completes
// (reusing the canceled one's blocks), and deleting it removes every block.
func TestBackupCancelMidUpload(t *testing.T) {
	const blocks = 32
	ctx := context.Background()
	target := "vfs://" + t.TempDir()
	src := newTestServer(t, blocks*2*bmib)
	writeRandom(t, src.Store(), rand.New(rand.NewSource(7)), 0, blocks*2*bmib)
	if err := src.Store().Snapshot("snap-1", true, "", nil); err != nil {
		t.Fatal(err)
	}
	a := syncagent.NewAgent(syncReplica{src}, syncagent.Config{VolumeName: "vol"})
	defer a.Close()
	ext := a.Ext()
	if _, err := ext.BackupCancel(ctx, &enginerpc.BackupCancelRequest{Backup: "backup-unknown"}); status.Code(err) != codes.NotFound {
		t.Fatalf("cancel of an unknown backup: %v, want NotFound", err)
	}
	create := func(name string) {
		t.Helper()
		if _, err := a.BackupCreate(ctx, &enginerpc.BackupCreateRequest{SnapshotFileName: "snap-1", BackupTarget: target,
			VolumeName: "vol", BackupName: name, ConcurrentLimit: 1}); err != nil {
			t.Fatalf("backup %s: %v", name, err)
		}
	}
	create("backup-a")
	for st := agentBackupStatus(t, a, "backup-a"); st.GetProgress() == 0 && st.GetState() == backup.StateInProgress; st = agentBackupStatus(t, a, "backup-a") {
		time.Sleep(time.Millisecond)
	}
	if _, err := ext.BackupCancel(ctx, &enginerpc.BackupCancelRequest{Backup: "backup-a"}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	st := waitAgentBackup(t, a, "backup-a")
	if st.GetState() != backup.StateError || !strings.Contains(st.GetError(), "canceled") {
		t.Fatalf("canceled backup ended %q %q, want error ... canceled", st.GetState(), st.GetError())
	}
	if _, err := ext.BackupCancel(ctx, &enginerpc.BackupCancelRequest{Backup: "backup-a"}); err != nil {
		t.Fatalf("cancel of an ended backup: %v, want no error", err)
	}
	store, err := backupstore.Open(ctx, target, nil, fastStore)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	uploaded := storeFiles(t, store, backupstore.BlocksPath("vol"))
	t.Logf("canceled after %d of %d blocks", uploaded, blocks)
	if uploaded == 0 || uploaded >= blocks {
		t.Fatalf("%d of %d blocks uploaded before the cancel, want some but not all", uploaded, blocks)
	}
	if n := storeFiles(t, store, backupstore.LocksPath("vol")); n != 0 {
		t.Fatalf("%d lock files left after the cancel", n)
	}
	if names, err := store.ListBackupNames(ctx, "vol"); err != nil || len(names) != 0 {
		t.Fatalf("backups after the cancel: %v %v, want none (the in-progress .cfg removed)", names, err)
	}

	create("backup-b")
	if st := waitAgentBackup(t, a, "backup-b"); st.GetState() != backup.StateComplete {
		t.Fatalf("backup after the cancel: %+v", st)
	}
	info, err := store.InspectBackup(ctx, "vol", "backup-b")
	if err != nil {
		t.Fatal(err)
	}
	// random data: a block is a little over 2 MiB with lz4
	if info.Size != blocks*2*bmib || info.NewlyUploadedDataSize > int64(blocks-uploaded)*(2*bmib+64<<10) ||
		storeFiles(t, store, backupstore.BlocksPath("vol")) != blocks {
		t.Fatalf("next backup: size %d, new %d; want %d blocks, the canceled backup's reused", info.Size, info.NewlyUploadedDataSize, blocks)
	}
	if _, err := store.DeleteBackup(ctx, "vol", "backup-b"); err != nil {
		t.Fatal(err)
	}
	if n := storeFiles(t, store, backupstore.BlocksPath("vol")); n != 0 {
		t.Fatalf("%d blocks left after deleting the only backup", n)
	}
}

// storeFiles counts the files under dir (blocks/ is two levels of
// directories; locks/ is flat).
func storeFiles(t *testing.T, s *backupstore.Store, dir string) int {
	t.Helper()
	d := s.Driver()
	names, err := d.List(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		if strings.Contains(name, ".") {
			n++
			continue
		}
		n += storeFiles(t, s, dir+"/"+name)
	}
	return n
}

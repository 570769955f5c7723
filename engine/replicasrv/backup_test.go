package replicasrv

import (
	"bytes"
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/backupstore"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/syncagent/backup"
)

const bmib = 1 << 20

func newTestServer(t *testing.T, size int64) *Server {
	t.Helper()
	s, err := NewServer(t.TempDir(), size, replica.Options{}, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.ReplicaOpen(context.Background(), &enginerpc.ReplicaOpenRequest{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func writeRandom(t *testing.T, st *replica.Store, r *rand.Rand, off, n int64) {
	t.Helper()
	p := make([]byte, n)
	r.Read(p)
	if _, err := st.WriteAt(p, off); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, st *replica.Store) []byte {
	t.Helper()
	p := make([]byte, st.Size())
	if _, err := st.ReadAt(p, 0); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitBackup(t *testing.T, m *backup.Manager, name string) backup.BackupStatus {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		st, ok := m.Status(name)
		if ok && st.State != backup.StateInProgress {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("backup %s did not finish", name)
	return backup.BackupStatus{}
}

func waitRestore(t *testing.T, m *backup.Manager) backup.RestoreStatus {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if st := m.RestoreStatus(); !st.IsRestoring {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("restore did not finish")
	return backup.RestoreStatus{}
}

var fastStore = backupstore.Options{LockCheckWait: -1, LockCheckInterval: 20 * time.Millisecond}

// A replica with two snapshots and writes after them: the first backup is
// full, the second incremental (only the changed blocks), neither holds the
// head's writes; a new replica restores the first fully and the second
// incrementally (a DR volume's steps) and reads back each snapshot's bytes.
func TestBackupAndRestoreThroughReplica(t *testing.T) {
	ctx := context.Background()
	target := "vfs://" + t.TempDir()
	src := newTestServer(t, 32*bmib)
	st := src.Store()
	r := rand.New(rand.NewSource(1))
	writeRandom(t, st, r, 0, 20*bmib)
	if err := st.Snapshot("snap-1", true, "", nil); err != nil {
		t.Fatal(err)
	}
	want1 := readAll(t, st)
	writeRandom(t, st, r, 4*bmib, 4096)    // block 2
	writeRandom(t, st, r, 30*bmib, 8192)   // block 15, new
	writeRandom(t, st, r, 10*bmib, 2*bmib) // block 5
	if err := st.Snapshot("snap-2", true, "", nil); err != nil {
		t.Fatal(err)
	}
	want2 := readAll(t, st)
	writeRandom(t, st, r, 0, bmib) // head only: in no backup

	m := backup.New(syncReplica{src}, backup.Options{Store: fastStore})
	defer m.Close()
	res1, err := m.Create(ctx, backup.CreateRequest{SnapshotName: "snap-1", BackupTarget: target, VolumeName: "vol"})
	if err != nil || res1.IsIncremental {
		t.Fatalf("first backup: %+v %v", res1, err)
	}
	s1 := waitBackup(t, m, res1.BackupName)
	if s1.State != backup.StateComplete || s1.BackupURL == "" {
		t.Fatalf("first backup: %+v", s1)
	}
	res2, err := m.Create(ctx, backup.CreateRequest{SnapshotName: "snap-2", BackupTarget: target, VolumeName: "vol"})
	if err != nil || !res2.IsIncremental {
		t.Fatalf("second backup: %+v %v; want incremental", res2, err)
	}
	s2 := waitBackup(t, m, res2.BackupName)
	store, err := backupstore.Open(ctx, target, nil, fastStore)
	if err != nil {
		t.Fatal(err)
	}
	info, err := store.InspectBackup(ctx, "vol", res2.BackupName)
	if err != nil {
		t.Fatal(err)
	}
	// 3 changed blocks: 2 of random data (a little over 2 MiB each with
	// lz4) and block 15 (8 KiB of random data, the rest zeroes: ~8 KiB);
	// 11 blocks in all (10 written before snap-1, block 15 new)
	if info.NewlyUploadedDataSize < 2*2*bmib+8192 || info.NewlyUploadedDataSize > 2*2*bmib+64<<10 || info.Size != 11*2*bmib {
		t.Fatalf("second backup: new data %d, size %d; want 3 of 11 blocks new", info.NewlyUploadedDataSize, info.Size)
	}

	dst := newTestServer(t, 32*bmib)
	dm := backup.New(syncReplica{dst}, backup.Options{Store: fastStore})
	defer dm.Close()
	for i, tc := range []struct {
		url  string
		want []byte
	}{{s1.BackupURL, want1}, {s2.BackupURL, want2}} {
		if err := dm.Restore(ctx, backup.RestoreRequest{BackupURL: tc.url, SnapshotDiskName: "volume-snap-restored.img"}); err != nil {
			t.Fatalf("restore %d: %v", i+1, err)
		}
		rs := waitRestore(t, dm)
		if rs.State != backup.StateComplete || rs.Error != "" {
			t.Fatalf("restore %d: %+v", i+1, rs)
		}
		if got := readAll(t, dst.Store()); !bytes.Equal(got, tc.want) {
			t.Fatalf("restore %d: the replica does not read back the snapshot's bytes", i+1)
		}
	}
	if c := dst.Store().Info().Chain; len(c) != 2 || c[1] != "volume-snap-restored.img" {
		t.Fatalf("restored chain %v", dst.Store().Info().Chain)
	}
}

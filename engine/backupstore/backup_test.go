package backupstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mib = 1 << 20

// A full backup, a restore, then 10 % of the blocks change: the second
// backup is incremental, uploads only those blocks, and both restore (full,
// and incrementally on top of the first).
func TestBackupIncrementalAndRestore(t *testing.T) {
	s := newDirStore(t)
	r := rand.New(rand.NewSource(1))
	src := newMemSource(40 * mib) // 20 blocks
	randomBlocks(r, src, DefaultBlockSize, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	src.snapshot("snap-1")
	b1 := backupOf(t, s, src, "snap-1", nil)
	if b1.IsIncremental || len(b1.Blocks) != 20 || b1.Size != 40*mib {
		t.Fatalf("first backup: incremental %v, %d blocks, size %d; want full, 20 blocks, 40 MiB", b1.IsIncremental, len(b1.Blocks), b1.Size)
	}
	if blocks, _ := s.ListBlocks(context.Background(), "vol-1"); len(blocks) != 20 {
		t.Fatalf("store holds %d blocks after the first backup, want 20", len(blocks))
	}
	randomBlocks(r, src, DefaultBlockSize, []int64{3, 17}) // 10 %
	src.snapshot("snap-2")
	b2 := backupOf(t, s, src, "snap-2", nil)
	if !b2.IsIncremental || len(b2.Blocks) != 20 {
		t.Fatalf("second backup: incremental %v, %d blocks; want incremental, 20 blocks", b2.IsIncremental, len(b2.Blocks))
	}
	blocks, _ := s.ListBlocks(context.Background(), "vol-1")
	if len(blocks) != 22 {
		t.Fatalf("store holds %d blocks after the second backup, want 22 (2 new)", len(blocks))
	}
	// random data does not compress: each new block is a little over 2 MiB
	if b2.NewlyUploadedDataSize < 2*DefaultBlockSize || b2.NewlyUploadedDataSize > 2*DefaultBlockSize+4096 {
		t.Fatalf("NewlyUploadedDataSize %d, want about 2 blocks (%d)", b2.NewlyUploadedDataSize, 2*DefaultBlockSize)
	}
	vol, err := s.LoadVolume(context.Background(), "vol-1")
	if err != nil || vol.LastBackupName != b2.Name || vol.BlockCount != 22 {
		t.Fatalf("volume.cfg: %+v %v; want LastBackupName %s, BlockCount 22", vol, err, b2.Name)
	}

	full := &memDest{}
	if err := restoreInto(t, s, full, b1.Name, ""); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(full.buf, src.snaps["snap-1"]) {
		t.Fatal("restore of the first backup differs from snap-1")
	}
	if err := restoreInto(t, s, full, b2.Name, b1.Name); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(full.buf, src.snaps["snap-2"]) {
		t.Fatal("incremental restore of the second backup differs from snap-2")
	}
	fresh := &memDest{}
	if err := restoreInto(t, s, fresh, b2.Name, ""); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh.buf, src.snaps["snap-2"]) {
		t.Fatal("full restore of the second backup differs from snap-2")
	}
}

// The last backup's snapshot is gone: the next backup is full. A full mode
// backup re-uploads existing blocks (ReUploadedDataSize).
func TestBackupFullWhenBaseGoneAndFullMode(t *testing.T) {
	s := newDirStore(t)
	src := newMemSource(8 * mib)
	randomBlocks(rand.New(rand.NewSource(2)), src, DefaultBlockSize, []int64{0, 2})
	src.snapshot("a")
	backupOf(t, s, src, "a", nil)
	src.snapshot("b")
	src.remove("a")
	b := backupOf(t, s, src, "b", nil)
	if b.IsIncremental || len(b.Blocks) != 2 || b.NewlyUploadedDataSize != 0 || b.ReUploadedDataSize != 0 {
		t.Fatalf("backup after the base snapshot went: %+v; want full, 2 blocks, nothing uploaded (dedup)", b)
	}
	src.snapshot("c")
	c := backupOf(t, s, src, "c", map[string]string{ParameterBackupMode: BackupModeFull})
	if c.IsIncremental || c.ReUploadedDataSize < 2*DefaultBlockSize {
		t.Fatalf("full-mode backup: incremental %v, ReUploadedDataSize %d; want full, both blocks re-uploaded", c.IsIncremental, c.ReUploadedDataSize)
	}
}

// Identical blocks are stored once; zero data blocks are stored (once) too.
func TestBackupDedup(t *testing.T) {
	for _, method := range []string{CompressionLZ4, CompressionGzip, CompressionNone} {
		t.Run(method, func(t *testing.T) {
			s := newDirStore(t)
			src := newMemSource(16 * mib)
			p := bytes.Repeat([]byte("longhorn"), DefaultBlockSize/8)
			for _, b := range []int64{0, 1, 5} {
				src.write(b*DefaultBlockSize, p)
			}
			src.write(7*DefaultBlockSize, make([]byte, DefaultBlockSize))
			src.snapshot("s")
			job, err := s.PrepareBackup(context.Background(), BackupRequest{VolumeName: "vol-1", VolumeSize: src.size,
				SnapshotName: "s", Source: src, CompressionMethod: method})
			if err != nil {
				t.Fatal(err)
			}
			b, err := job.Run(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			blocks, _ := s.ListBlocks(context.Background(), "vol-1")
			if len(b.Blocks) != 4 || len(blocks) != 2 || b.CompressionMethod != method {
				t.Fatalf("%d mappings, %d block files, method %s; want 4, 2, %s", len(b.Blocks), len(blocks), b.CompressionMethod, method)
			}
			if method != CompressionNone && b.NewlyUploadedDataSize > DefaultBlockSize/10 {
				t.Fatalf("compressible data uploaded %d bytes", b.NewlyUploadedDataSize)
			}
			dst := &memDest{}
			if err := restoreInto(t, s, dst, b.Name, ""); err != nil || !bytes.Equal(dst.buf, src.snaps["s"]) {
				t.Fatalf("restore: %v, equal %v", err, bytes.Equal(dst.buf, src.snaps["s"]))
			}
		})
	}
}

// A corrupted block fails the restore naming the block; a missing one too.
func TestRestoreCorruptAndMissingBlock(t *testing.T) {
	s := newDirStore(t)
	src := newMemSource(8 * mib)
	randomBlocks(rand.New(rand.NewSource(3)), src, DefaultBlockSize, []int64{0, 1, 2, 3})
	src.snapshot("s")
	b := backupOf(t, s, src, "s", nil)
	root := strings.TrimPrefix(s.URL(), "vfs://")
	victim := b.Blocks[1].BlockChecksum
	file := filepath.Join(root, BlockPath("vol-1", victim))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	err = restoreInto(t, s, &memDest{}, b.Name, "")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("restore with a corrupted block: %v; want ErrCorrupt naming %s", err, victim)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	err = restoreInto(t, s, &memDest{}, b.Name, "")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("restore with a missing block: %v; want ErrNotFound naming %s", err, victim)
	}
}

// A failed read fails the backup, leaves no in-progress .cfg behind, and a
// retry succeeds.
func TestBackupReadFailureThenRetry(t *testing.T) {
	s := newDirStore(t)
	src := newMemSource(8 * mib)
	randomBlocks(rand.New(rand.NewSource(4)), src, DefaultBlockSize, []int64{0, 3})
	src.snapshot("s")
	src.readErr = errors.New("replica went away")
	job, err := s.PrepareBackup(context.Background(), BackupRequest{VolumeName: "vol-1", VolumeSize: src.size, SnapshotName: "s", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Run(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "replica went away") {
		t.Fatalf("backup with failing reads: %v", err)
	}
	if names, _ := s.ListBackupNames(context.Background(), "vol-1"); len(names) != 0 {
		t.Fatalf("backups left after a failed backup: %v", names)
	}
	if locks, _ := s.listLocks(context.Background(), "vol-1"); len(locks) != 0 {
		t.Fatalf("locks left after a failed backup: %v", locks)
	}
	src.readErr = nil
	if b := backupOf(t, s, src, "s", nil); len(b.Blocks) != 2 {
		t.Fatalf("retry: %d blocks", len(b.Blocks))
	}
}

// Canceling a running backup ends it with ErrCanceled.
func TestBackupCancel(t *testing.T) {
	s := newDirStore(t)
	src := newMemSource(8 * mib)
	randomBlocks(rand.New(rand.NewSource(5)), src, DefaultBlockSize, []int64{0, 1, 2, 3})
	src.snapshot("s")
	job, err := s.PrepareBackup(context.Background(), BackupRequest{VolumeName: "vol-1", VolumeSize: src.size, SnapshotName: "s", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := job.Run(ctx, nil); !errors.Is(err, ErrCanceled) {
		t.Fatalf("canceled backup: %v, want ErrCanceled", err)
	}
}

// Bad requests are refused with the field named, before anything is written.
func TestBackupBadInput(t *testing.T) {
	s := newDirStore(t)
	src := newMemSource(4 * mib)
	src.snapshot("s")
	for _, tc := range []struct {
		name string
		req  BackupRequest
		want string
	}{
		{"volume name", BackupRequest{VolumeName: "-bad", VolumeSize: 4 * mib, SnapshotName: "s", Source: src}, "volume name"},
		{"size", BackupRequest{VolumeName: "v1", VolumeSize: 3 * mib, SnapshotName: "s", Source: src}, "volume size"},
		{"compression", BackupRequest{VolumeName: "v1", VolumeSize: 4 * mib, SnapshotName: "s", Source: src, CompressionMethod: "zstd"}, "compression method"},
		{"block size", BackupRequest{VolumeName: "v1", VolumeSize: 4 * mib, SnapshotName: "s", Source: src,
			Parameters: map[string]string{ParameterBackupBlockSize: "4Mi"}}, "backup-block-size"},
		{"mode", BackupRequest{VolumeName: "v1", VolumeSize: 4 * mib, SnapshotName: "s", Source: src,
			Parameters: map[string]string{ParameterBackupMode: "sometimes"}}, "backup-mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.PrepareBackup(context.Background(), tc.req)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalid naming %q", err, tc.want)
			}
		})
	}
	if names, _ := s.ListVolumeNames(context.Background()); len(names) != 0 {
		t.Fatalf("volumes written by refused requests: %v", names)
	}
}

// 16 MiB blocks: backup, restore, and an incremental restore refuses a
// block size change.
func TestLargeBlockSize(t *testing.T) {
	s := newDirStore(t)
	src := newMemSource(32 * mib)
	randomBlocks(rand.New(rand.NewSource(6)), src, LargeBlockSize, []int64{1})
	src.snapshot("s")
	b := backupOf(t, s, src, "s", map[string]string{ParameterBackupBlockSize: "16Mi"})
	if len(b.Blocks) != 1 || b.Blocks[0].Offset != LargeBlockSize || b.Size != LargeBlockSize {
		t.Fatalf("16 MiB backup: %+v", b.Blocks)
	}
	dst := &memDest{}
	if err := restoreInto(t, s, dst, b.Name, ""); err != nil || !bytes.Equal(dst.buf, src.snaps["s"]) {
		t.Fatalf("restore: %v", err)
	}
	src.snapshot("t")
	b2 := backupOf(t, s, src, "t", nil) // back to 2 MiB: a full backup
	if b2.IsIncremental {
		t.Fatal("a block size change must give a full backup")
	}
	if err := restoreInto(t, s, dst, b2.Name, b.Name); !errors.Is(err, ErrInvalid) {
		t.Fatalf("incremental restore across a block size change: %v, want ErrInvalid", err)
	}
}

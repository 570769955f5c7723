package backupstore

import (
	"bytes"
	"context"
	"math/rand"
	"testing"
)

// Deleting backups removes exactly the blocks no remaining backup uses
// (Longhorn bug #1431); deleting the last one leaves no block at all, and
// the survivors still restore.
func TestDeleteBackupsLeavesNoOrphanBlock(t *testing.T) {
	s := newDirStore(t)
	ctx := context.Background()
	r := rand.New(rand.NewSource(10))
	src := newMemSource(12 * mib)
	randomBlocks(r, src, DefaultBlockSize, []int64{0, 1, 2})
	src.snapshot("s1")
	b1 := backupOf(t, s, src, "s1", nil)
	randomBlocks(r, src, DefaultBlockSize, []int64{1, 4})
	src.snapshot("s2")
	b2 := backupOf(t, s, src, "s2", nil)
	randomBlocks(r, src, DefaultBlockSize, []int64{0})
	src.snapshot("s3")
	b3 := backupOf(t, s, src, "s3", nil)

	res, err := s.DeleteBackup(ctx, "vol-1", b2.Name) // b2's own block at 1 MiB... is it shared? block 1 of s2 is only in b2 and b3
	if err != nil || res.GCSkipped != "" {
		t.Fatalf("delete %s: %+v %v", b2.Name, res, err)
	}
	// b1: blocks 0a 1a 2a; b2: 0a 1b 2a 4b; b3: 0c 1b 2a 4b. Deleting b2 frees nothing.
	if res.BlocksRemoved != 0 {
		t.Fatalf("deleting %s removed %d blocks, want 0 (all shared)", b2.Name, res.BlocksRemoved)
	}
	res, err = s.DeleteBackup(ctx, "vol-1", b1.Name)
	if err != nil || res.BlocksRemoved != 2 || res.BlocksRetained != 4 {
		t.Fatalf("delete %s: %+v %v; want 2 removed (0a, 1a), 4 retained", b1.Name, res, err)
	}
	dst := &memDest{}
	if err := restoreInto(t, s, dst, b3.Name, ""); err != nil || !bytes.Equal(dst.buf, src.snaps["s3"]) {
		t.Fatalf("restore of the surviving backup: %v", err)
	}
	vol, _ := s.LoadVolume(ctx, "vol-1")
	if vol.LastBackupName != b3.Name || vol.BlockCount != 4 {
		t.Fatalf("volume.cfg after deletions: %+v", vol)
	}
	if _, err := s.DeleteBackup(ctx, "vol-1", b3.Name); err != nil {
		t.Fatal(err)
	}
	if blocks, _ := s.ListBlocks(ctx, "vol-1"); len(blocks) != 0 {
		t.Fatalf("%d orphan blocks after deleting every backup", len(blocks))
	}
	vol, _ = s.LoadVolume(ctx, "vol-1")
	if vol.LastBackupName != "" || vol.BlockCount != 0 {
		t.Fatalf("volume.cfg after deleting every backup: %+v", vol)
	}
	// deleting a missing backup is fine; the whole volume goes
	if _, err := s.DeleteBackup(ctx, "vol-1", b3.Name); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteVolume(ctx, "vol-1"); err != nil {
		t.Fatal(err)
	}
	if vols, _ := s.ListVolumeNames(ctx); len(vols) != 0 {
		t.Fatalf("volumes after DeleteVolume: %v", vols)
	}
}

// Garbage collection is skipped while another backup is in progress.
func TestDeleteSkipsGCWithBackupInProgress(t *testing.T) {
	s := newDirStore(t)
	ctx := context.Background()
	src := newMemSource(4 * mib)
	randomBlocks(rand.New(rand.NewSource(11)), src, DefaultBlockSize, []int64{0})
	src.snapshot("s1")
	b1 := backupOf(t, s, src, "s1", nil)
	if err := s.saveBackup(ctx, &Backup{Name: "backup-inprogress00", VolumeName: "vol-1"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.DeleteBackup(ctx, "vol-1", b1.Name)
	if err != nil || res.GCSkipped == "" || res.BlocksRemoved != 0 {
		t.Fatalf("delete with a backup in progress: %+v %v; want GC skipped", res, err)
	}
	if blocks, _ := s.ListBlocks(ctx, "vol-1"); len(blocks) != 1 {
		t.Fatalf("blocks removed although GC was skipped: %v", blocks)
	}
}

func TestPlanRestore(t *testing.T) {
	bm := func(off int64, c string) BlockMapping {
		return BlockMapping{Offset: off * DefaultBlockSize, BlockChecksum: c}
	}
	last := []BlockMapping{bm(0, "a"), bm(1, "b"), bm(3, "d")}
	cur := []BlockMapping{bm(0, "a"), bm(1, "B"), bm(2, "c")}
	ops := PlanRestore(last, cur)
	want := []RestoreOp{{1 * DefaultBlockSize, "B"}, {2 * DefaultBlockSize, "c"}, {3 * DefaultBlockSize, ""}}
	if len(ops) != len(want) {
		t.Fatalf("ops %v, want %v", ops, want)
	}
	for i := range ops {
		if ops[i] != want[i] {
			t.Fatalf("ops %v, want %v", ops, want)
		}
	}
	if got := PlanRestore(nil, cur); len(got) != 3 {
		t.Fatalf("full plan %v", got)
	}
	if got := MergeBlocks(last, []BlockMapping{bm(1, "x"), bm(5, "y")}); len(got) != 4 || got[1].BlockChecksum != "x" || got[3].BlockChecksum != "y" {
		t.Fatalf("merge %v", got)
	}
}

package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/controller"
)

// dirtyPages is the number of dirty and under-write-back pages of the
// replica's head file in dir (cachestat, Linux 6.5+); -1 when the kernel
// cannot tell.
func dirtyPages(t *testing.T, dir string) int64 {
	t.Helper()
	heads, err := filepath.Glob(filepath.Join(dir, "volume-head-*.img"))
	if err != nil || len(heads) != 1 {
		t.Fatalf("head of %s: %v %v", dir, heads, err)
	}
	f, err := os.Open(heads[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Cachestat_t
	if err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{}, &st, 0); err != nil {
		return -1
	}
	return int64(st.Dirty + st.Writeback)
}

// TestSnapshotWritesBackBeforeHold: the heads' dirty pages are written back
// before a snapshot holds the volume's I/O (writeBack), so the hold, which
// stalls every client, does not cover their write-back.
func TestSnapshotWritesBackBeforeHold(t *testing.T) {
	const size = 16 << 20
	ctx := context.Background()
	c, a, b := startVolume(t, size, controller.VolumeOptions{})
	if _, err := c.Backend().WriteAt(make([]byte, 8<<20), 0); err != nil {
		t.Fatal(err)
	}
	before := dirtyPages(t, a.dir)
	if before < 0 {
		t.Skip("cachestat is not available")
	}
	if before == 0 {
		t.Skip("the kernel wrote the head back before the snapshot")
	}
	held := map[string]int64{}
	controller.SetSnapshotHeld(t, func() {
		held["a"], held["b"] = dirtyPages(t, a.dir), dirtyPages(t, b.dir)
	})
	if _, err := c.Snapshot(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	if held["a"] != 0 || held["b"] != 0 {
		t.Fatalf("dirty pages of the heads when the snapshot held I/O: %v (%d before)", held, before)
	}
}

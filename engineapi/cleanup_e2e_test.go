package engineapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// allocatedBytes sums the blocks allocated to the files under dir.
func allocatedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return err
		}
		n += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitPurged polls until no replica is purging.
func waitPurged(t *testing.T, ctx context.Context, ec EngineClient) {
	t.Helper()
	for {
		st, err := ec.SnapshotPurgeStatus(ctx)
		busy := err != nil
		for _, s := range st {
			if s.Error != "" {
				t.Fatalf("purge failed: %+v", s)
			}
			busy = busy || s.IsPurging
		}
		if !busy {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("purge not done: %+v %v", st, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestSystemSnapshotCleanupBoundsReplicaSize replays the fault-injection
// finding: nine rebuilds of a volume whose data is rewritten between them.
// Each rebuild takes a system snapshot; with the manager's cleanup after
// each rebuild (CleanupSystemSnapshots) every replica stays within 2.5x
// the volume size, where without it the newest replica carries one
// snapshot per rebuild. The data read back is the last data written.
func TestSystemSnapshotCleanupBoundsReplicaSize(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts the longhorn binary")
	}
	requireEngine(t, testutil.LonghornBinary(t))
	nbdcopy := testutil.RequireTool(t, "nbdcopy")
	im := startRealIM(t, 60)
	h := NewHandler(HandlerOptions{})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := im.connect(t, ctx, h)
	w, err := c.InstanceWatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "lh-cleanup-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	const size = 32 << 20
	v := &volumeTest{t: t, ctx: ctx, c: c, w: w, dir: t.TempDir(), size: size}
	live := []*Instance{v.replica("vol-r-0"), v.replica("vol-r-1")}
	if _, err := c.InstanceCreate(ctx, EngineInstanceSpec(EngineOptions{
		Name: "vol-e-0", VolumeName: "vol", Size: size, Frontend: "nbd",
		FrontendArgs: []string{"--nbd-listen", "unix:" + filepath.Join(sockDir, "vol.sock")},
		Replicas:     []string{ReplicaAddress("127.0.0.1", live[0]), ReplicaAddress("127.0.0.1", live[1])},
		ListenHost:   "127.0.0.1",
	})); err != nil {
		t.Fatal(err)
	}
	e := waitInstance(t, w, "vol-e-0", InstanceStateRunning, false)
	ec, err := h.Engine(ctx, im.addr, EngineRef{Name: "vol-e-0", VolumeName: "vol", Address: EngineAddress("127.0.0.1", e)})
	if err != nil {
		t.Fatal(err)
	}
	endpoint := waitVolume(t, ctx, ec, 2).Endpoint
	data := make([]byte, size)
	src := filepath.Join(v.dir, "src.raw")
	for round := 2; round <= 10; round++ {
		rand.Read(data)
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, nbdcopy, src, endpoint)
		name := fmt.Sprintf("vol-r-%d", round)
		r := v.replica(name)
		addr := ReplicaAddress("127.0.0.1", r)
		if err := ec.ReplicaAdd(ctx, ReplicaAddRequest{Address: addr, InstanceName: name, Size: size, CurrentSize: size}); err != nil {
			t.Fatal(err)
		}
		waitRebuilt(t, ctx, ec, addr)
		old := live[0]
		if err := ec.ReplicaRemove(ctx, ReplicaAddress("127.0.0.1", old), old.Spec.Name); err != nil {
			t.Fatal(err)
		}
		if _, err := c.InstanceDelete(ctx, old.Spec.Name, "", ""); err != nil {
			t.Fatal(err)
		}
		waitInstance(t, w, old.Spec.Name, InstanceStateStopped, true)
		live = append(live[1:], r)
		if _, err := CleanupSystemSnapshots(ctx, ec); err != nil {
			t.Fatalf("round %d: cleanup: %v", round, err)
		}
		waitPurged(t, ctx, ec)
	}
	snaps, err := ec.SnapshotList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(snaps); n > 3 {
		t.Errorf("%d snapshot entries left after nine rebuilds: %v", n, snaps)
	}
	for _, r := range live {
		got := allocatedBytes(t, filepath.Join(v.dir, r.Spec.Name))
		t.Logf("replica %s: %d MiB allocated for a %d MiB volume", r.Spec.Name, got>>20, size>>20)
		if got > size*5/2 {
			t.Errorf("replica %s holds %d bytes after nine rebuilds, over 2.5x the volume size", r.Spec.Name, got)
		}
	}
	back := filepath.Join(v.dir, "back.raw")
	run(t, nbdcopy, endpoint, back)
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("data read back differs from the last data written (%v)", err)
	}
}

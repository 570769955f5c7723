package engineapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// requireEngine skips when the longhorn binary has no engine subcommand yet.
func requireEngine(t *testing.T, bin string) {
	t.Helper()
	if err := exec.Command(bin, "engine", "replica", "--help").Run(); err != nil {
		t.Skipf("longhorn binary has no `engine replica` command yet: %v", err)
	}
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return out
}

type volumeTest struct {
	t    *testing.T
	ctx  context.Context
	c    *InstanceManagerClient
	w    *InstanceWatcher
	dir  string
	size int64
}

func (v *volumeTest) replica(name string) *Instance {
	v.t.Helper()
	spec := ReplicaInstanceSpec(ReplicaOptions{Name: name, VolumeName: "vol", DataDir: filepath.Join(v.dir, name), Size: v.size, ListenHost: "127.0.0.1"})
	if _, err := v.c.InstanceCreate(v.ctx, spec); err != nil {
		v.t.Fatal(err)
	}
	return waitInstance(v.t, v.w, name, InstanceStateRunning, false)
}

// waitVolume polls VolumeGet until the engine serves the volume with its frontend up.
func waitVolume(t *testing.T, ctx context.Context, ec EngineClient, replicas int) *Volume {
	t.Helper()
	for {
		vol, err := ec.VolumeGet(ctx)
		if err == nil && vol.State == "running" && vol.FrontendState == "up" && vol.ReplicaCount == replicas && vol.Endpoint != "" {
			return vol
		}
		select {
		case <-ctx.Done():
			t.Fatalf("volume not up: %+v %v", vol, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitRebuilt polls until the replica at addr is RW in the engine.
func waitRebuilt(t *testing.T, ctx context.Context, ec EngineClient, addr string) {
	t.Helper()
	for {
		st, err := ec.ReplicaRebuildingStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s := st[addr]; s != nil && s.Error != "" {
			t.Fatalf("rebuild of %s failed: %+v", addr, s)
		}
		reps, err := ec.ReplicaList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reps {
			if r.Address == addr && r.Mode == ReplicaModeRW {
				t.Logf("rebuild status at completion: %+v", st[addr])
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("replica %s not rebuilt: status %+v, replicas %+v", addr, st, reps)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestRealEngineThroughInstanceManager runs two replicas and an engine as
// instances of a real `longhorn instance-manager`, does I/O through the NBD
// frontend with nbdcopy and qemu-io, snapshots and lists through the proxy,
// rebuilds a third replica, checks the data is served by it alone, kills a
// replica with kill -9, and deletes everything.
func TestRealEngineThroughInstanceManager(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts the longhorn binary")
	}
	requireEngine(t, testutil.LonghornBinary(t))
	nbdcopy := testutil.RequireTool(t, "nbdcopy")
	qemuIO := testutil.RequireTool(t, "qemu-io")
	im := startRealIM(t, 40)
	h := NewHandler(HandlerOptions{})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := im.connect(t, ctx, h)
	w, err := c.InstanceWatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "lh-im-nbd-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	v := &volumeTest{t: t, ctx: ctx, c: c, w: w, dir: t.TempDir(), size: 64 << 20}

	r1, r2 := v.replica("vol-r-1"), v.replica("vol-r-2")
	espec := EngineInstanceSpec(EngineOptions{
		Name: "vol-e-0", VolumeName: "vol", Size: v.size, Frontend: "nbd",
		FrontendArgs: []string{"--nbd-listen", "unix:" + filepath.Join(sockDir, "vol.sock")},
		Replicas:     []string{ReplicaAddress("127.0.0.1", r1), ReplicaAddress("127.0.0.1", r2)},
		ListenHost:   "127.0.0.1",
	})
	if _, err := c.InstanceCreate(ctx, espec); err != nil {
		t.Fatal(err)
	}
	e := waitInstance(t, w, "vol-e-0", InstanceStateRunning, false)
	ec, err := h.Engine(ctx, im.addr, EngineRef{Name: "vol-e-0", VolumeName: "vol", Address: EngineAddress("127.0.0.1", e)})
	if err != nil {
		t.Fatal(err)
	}
	vol := waitVolume(t, ctx, ec, 2)
	if vol.Size != v.size || vol.Frontend != "nbd" {
		t.Fatalf("volume %+v", vol)
	}
	if ver, err := ec.VersionGet(ctx); err != nil || ver.ControllerAPIVersion == 0 {
		t.Fatalf("engine version %+v %v", ver, err)
	}

	// Real I/O: 8 MiB of random data with nbdcopy, a pattern with qemu-io.
	data := make([]byte, 8<<20)
	rand.Read(data)
	src := filepath.Join(v.dir, "src.raw")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, nbdcopy, src, vol.Endpoint)
	name, err := ec.VolumeSnapshot(ctx, "snap1", map[string]string{"test": "im"})
	if err != nil || name != "snap1" {
		t.Fatalf("snapshot %q %v", name, err)
	}
	snaps, err := ec.SnapshotList(ctx)
	if err != nil || snaps["snap1"] == nil || snaps["volume-head"] == nil || snaps["volume-head"].Parent != "snap1" || !snaps["snap1"].UserCreated {
		t.Fatalf("snapshots %+v %v", snaps, err)
	}
	run(t, qemuIO, "-f", "raw", "-c", "write -P 0xcd 16M 1M", vol.Endpoint)

	// Rebuild a third replica, then let it serve alone.
	r3 := v.replica("vol-r-3")
	r3addr := ReplicaAddress("127.0.0.1", r3)
	if err := ec.ReplicaAdd(ctx, ReplicaAddRequest{Address: r3addr, InstanceName: "vol-r-3", Size: v.size, CurrentSize: v.size}); err != nil {
		t.Fatal(err)
	}
	waitRebuilt(t, ctx, ec, r3addr)
	for _, r := range []*Instance{r1, r2} {
		if err := ec.ReplicaRemove(ctx, ReplicaAddress("127.0.0.1", r), r.Spec.Name); err != nil {
			t.Fatal(err)
		}
	}
	if reps, err := ec.ReplicaList(ctx); err != nil || len(reps) != 1 || reps[0].Address != r3addr {
		t.Fatalf("replicas after removing r1, r2: %+v %v", reps, err)
	}
	back := filepath.Join(v.dir, "back.raw")
	run(t, nbdcopy, vol.Endpoint, back)
	got, err := os.ReadFile(back)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got[:len(data)]) != sha256.Sum256(data) {
		t.Fatal("data read from the rebuilt replica differs from what was written")
	}
	if !bytes.Equal(got[16<<20:17<<20], bytes.Repeat([]byte{0xcd}, 1<<20)) {
		t.Fatal("qemu-io pattern missing on the rebuilt replica")
	}
	run(t, qemuIO, "-f", "raw", "-c", "read -P 0xcd 16M 1M", vol.Endpoint)

	// kill -9 of a replica process: error on InstanceWatch within 2 s.
	pid := pidListeningAs(t, ReplicaAddress("127.0.0.1", r1)[len("tcp://"):])
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitInstance(t, w, "vol-r-1", InstanceStateError, false)
	if d := time.Since(killed); d > 2*time.Second {
		t.Fatalf("error reported %v after kill -9", d)
	}

	for _, n := range []string{"vol-e-0", "vol-r-1", "vol-r-2", "vol-r-3"} {
		if _, err := c.InstanceDelete(ctx, n, "", ""); err != nil {
			t.Fatal(err)
		}
		waitInstance(t, w, n, InstanceStateStopped, true)
	}
	if p := im.busyPort(); p != 0 {
		t.Fatalf("port %d still in use after deleting everything", p)
	}
}

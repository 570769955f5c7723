package engineapi

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// TestFallbackToEngineWithoutProxy: an instance manager started with
// --no-proxy (one older than the engine proxy) reports proxy API version
// 0 and listens on no proxy port; the handler accepts it, and Engine
// returns the direct client (IsGRPC false) through which the volume is
// read, snapshotted, expanded and rebuilt onto a new replica, as through
// the proxy.
func TestFallbackToEngineWithoutProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts the longhorn binary")
	}
	requireEngine(t, testutil.LonghornBinary(t))
	im := startRealIM(t, 40, "--no-proxy")
	h := NewHandler(HandlerOptions{})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := im.connect(t, ctx, h)
	if v := c.Versions(); v.ProxyCurrent != 0 || v.ProxyMin != 0 || v.InstanceManagerCurrent == 0 || ProxySupported(v) {
		t.Fatalf("versions %+v: want an instance manager without proxy", v)
	}
	if conn, err := net.DialTimeout("tcp", im.addr.ProxyAddress, time.Second); err == nil {
		conn.Close()
		t.Fatalf("something listens on the proxy address %s", im.addr.ProxyAddress)
	}
	w, err := c.InstanceWatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "lh-fb-nbd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	v := &volumeTest{t: t, ctx: ctx, c: c, w: w, dir: t.TempDir(), size: 32 << 20}
	r1, r2 := v.replica("vol-r-1"), v.replica("vol-r-2")
	if _, err := c.InstanceCreate(ctx, EngineInstanceSpec(EngineOptions{
		Name: "vol-e-0", VolumeName: "vol", Size: v.size, Frontend: "nbd",
		FrontendArgs: []string{"--nbd-listen", "unix:" + filepath.Join(sockDir, "vol.sock")},
		Replicas:     []string{ReplicaAddress("127.0.0.1", r1), ReplicaAddress("127.0.0.1", r2)}, ListenHost: "127.0.0.1",
	})); err != nil {
		t.Fatal(err)
	}
	e := waitInstance(t, w, "vol-e-0", InstanceStateRunning, false)
	ec, err := h.Engine(ctx, im.addr, EngineRef{Name: "vol-e-0", VolumeName: "vol", Address: EngineAddress("127.0.0.1", e)})
	if err != nil {
		t.Fatal(err)
	}
	if ec.IsGRPC() {
		t.Fatal("engine client goes through a proxy the instance manager does not have")
	}
	waitVolume(t, ctx, ec, 2)
	if _, err := ec.VolumeSnapshot(ctx, "fallback-snap", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	snaps, err := ec.SnapshotList(ctx)
	if err != nil || snaps["fallback-snap"] == nil || snaps["fallback-snap"].Labels["k"] != "v" {
		t.Fatalf("snapshots %v: %v", snaps, err)
	}
	if err := ec.VolumeExpand(ctx, 64<<20); err != nil {
		t.Fatal(err)
	}
	for {
		vol, err := ec.VolumeGet(ctx)
		if err == nil && vol.Size == 64<<20 && !vol.IsExpanding {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("expansion: %+v %v", vol, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	v.size = 64 << 20
	r3 := v.replica("vol-r-3")
	addr3 := ReplicaAddress("127.0.0.1", r3)
	if err := ec.ReplicaAdd(ctx, ReplicaAddRequest{Address: addr3, InstanceName: "vol-r-3", Size: v.size, CurrentSize: v.size}); err != nil {
		t.Fatal(err)
	}
	waitRebuilt(t, ctx, ec, addr3)
	if err := ec.ReplicaRemove(ctx, ReplicaAddress("127.0.0.1", r1), "vol-r-1"); err != nil {
		t.Fatal(err)
	}
	reps, err := ec.ReplicaList(ctx)
	if err != nil || len(reps) != 2 {
		t.Fatalf("replicas after remove %+v %v", reps, err)
	}
	// The engine refuses a call meant for another volume on its address.
	other, err := h.Engine(ctx, im.addr, EngineRef{Name: "other-e-0", VolumeName: "other", Address: EngineAddress("127.0.0.1", e)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.VolumeGet(ctx); err == nil {
		t.Error("engine answered a call for another volume")
	}
}

// TestPingDropsDeadConnectionsAndRedials: Ping checks an instance manager
// and its proxy; when the instance manager dies the check fails and the
// connections are dropped, and once it is back Ping dials a new client.
func TestPingDropsDeadConnectionsAndRedials(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts the longhorn binary")
	}
	im := startRealIM(t, 10)
	h := NewHandler(HandlerOptions{})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	im.connect(t, ctx, h)
	v, err := h.Ping(ctx, im.addr)
	if err != nil || !ProxySupported(v) {
		t.Fatalf("ping: %+v %v", v, err)
	}
	live, dials := h.Connections() // connect may have dialed more than once while the process started
	if live != 1 {
		t.Fatalf("connections %d", live)
	}
	if _, err := h.Ping(ctx, im.addr); err != nil {
		t.Fatal(err)
	}
	if _, d := h.Connections(); d != dials {
		t.Fatalf("a ping of a live instance manager dialed again (%d -> %d)", dials, d)
	}
	_ = im.cmd.Process.Kill()
	<-im.exited
	im.exited <- nil // for the cleanup
	if _, err := h.Ping(ctx, im.addr); err == nil {
		t.Fatal("ping of a dead instance manager succeeded")
	}
	if live, _ := h.Connections(); live != 0 {
		t.Fatalf("%d connections kept after a failed ping", live)
	}
	im2 := startRealIMAt(t, im.addr, im.portStart, im.portEnd)
	for {
		if _, err = h.Ping(ctx, im2.addr); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("ping after restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if live, d := h.Connections(); live != 1 || d <= dials {
		t.Fatalf("after restart: %d connections, %d dials (was %d)", live, d, dials)
	}
}

package controller_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// stateFrontend is a frontend that serves nothing: these tests only need
// the controller to see a frontend that is up.
type stateFrontend struct{ up bool }

func (f *stateFrontend) FrontendName() string { return "test" }
func (f *stateFrontend) Startup(context.Context, string, int64, frontend.Backend) error {
	f.up = true
	return nil
}
func (f *stateFrontend) Shutdown() error    { f.up = false; return nil }
func (f *stateFrontend) Expand(int64) error { return nil }
func (f *stateFrontend) Endpoint() string   { return "test://" }
func (f *stateFrontend) State() string {
	if f.up {
		return controller.FrontendUp
	}
	return controller.FrontendDown
}

func withTestFrontend(opts controller.VolumeOptions) controller.VolumeOptions {
	opts.Frontend = "test"
	opts.NewFrontend = func(string) (frontend.Frontend, error) { return &stateFrontend{}, nil }
	return opts
}

// TestExpandBeyondMaxSizeRefused: an expansion past replica.MaxVolumeSize is
// refused at once as a bad argument (not started and failed later).
func TestExpandBeyondMaxSizeRefused(t *testing.T) {
	const size = 4 << 20
	a := startReplica(t, filepath.Join(t.TempDir(), "a"), size, replica.Options{})
	ctx := context.Background()
	c := newController(t, size, controller.VolumeOptions{})
	if err := c.Start(ctx, addrs(a), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	err := c.Expand(ctx, replica.MaxVolumeSize+4096)
	if !errors.Is(err, controller.ErrInvalid) {
		t.Fatalf("expand past the maximum: %v, want ErrInvalid", err)
	}
	if info := c.Info(); info.IsExpanding || info.LastExpansionError != "" || info.Size != size {
		t.Fatalf("refused expansion left %+v", info)
	}
	if _, err := controller.NewVolume(controller.VolumeOptions{Name: "v", Size: replica.MaxVolumeSize + 4096}); !errors.Is(err, controller.ErrInvalid) {
		t.Fatalf("New with a size past the maximum: %v", err)
	}
}

// TestRemoveLastRWReplicaRefused: with the frontend up, the only RW replica
// cannot be removed even when ERR or WO replicas remain listed (the volume
// would have nothing to read from); with the frontend down it can.
func TestRemoveLastRWReplicaRefused(t *testing.T) {
	const size = 4 << 20
	c, a, b := startVolume(t, size, withTestFrontend(controller.VolumeOptions{}))
	if err := c.SetReplicaMode(b.addr, controller.ModeERR); err != nil {
		t.Fatal(err)
	}
	err := c.RemoveReplica(a.addr)
	if !errors.Is(err, controller.ErrPrecondition) {
		t.Fatalf("removing the last RW replica with the frontend up: %v, want ErrPrecondition", err)
	}
	if m := modes(c); m[a.addr] != controller.ModeRW {
		t.Fatalf("modes after the refused removal: %v", m)
	}
	if _, err := c.Backend().WriteAt(bytes.Repeat([]byte{1}, 4096), 0); err != nil {
		t.Fatalf("volume unusable after the refused removal: %v", err)
	}
	if err := c.RemoveReplica(b.addr); err != nil {
		t.Fatalf("removing the ERR replica: %v", err)
	}
	if err := c.ShutdownFrontend(); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveReplica(a.addr); err != nil {
		t.Fatalf("removing the last replica with the frontend down: %v", err)
	}
}

// TestSecondEngineRefused: replicas serving one engine cannot be started by
// a second engine (both would write, the replicas would diverge); once the
// first engine is gone the second can start.
func TestSecondEngineRefused(t *testing.T) {
	const size = 4 << 20
	dir := t.TempDir()
	a := startReplica(t, filepath.Join(dir, "a"), size, replica.Options{})
	b := startReplica(t, filepath.Join(dir, "b"), size, replica.Options{})
	ctx := context.Background()
	c1 := newController(t, size, controller.VolumeOptions{})
	if err := c1.Start(ctx, addrs(a, b), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	c2 := newController(t, size, controller.VolumeOptions{})
	err := c2.Start(ctx, addrs(a, b), 0, 0, false)
	if !errors.Is(err, controller.ErrPrecondition) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second engine on the same replicas: %v, want ErrPrecondition (in use)", err)
	}
	if m := modes(c1); m[a.addr] != controller.ModeRW || m[b.addr] != controller.ModeRW {
		t.Fatalf("first engine's replicas after the refused start: %v", m)
	}
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Start(ctx, addrs(a, b), 0, 0, false); err != nil {
		t.Fatalf("start after the first engine stopped: %v", err)
	}
	if m := modes(c2); m[a.addr] != controller.ModeRW || m[b.addr] != controller.ModeRW {
		t.Fatalf("modes %v", m)
	}
}

// TestAddReplicaTwiceUnderAnotherAddress: a replica already in the volume,
// named by another address (localhost instead of 127.0.0.1), is refused and
// left untouched (not flagged rebuilding, no snapshot taken).
func TestAddReplicaTwiceUnderAnotherAddress(t *testing.T) {
	const size = 4 << 20
	ctx := context.Background()
	c, a, _ := startVolume(t, size, controller.VolumeOptions{})
	alias := "tcp://localhost:" + strconv.Itoa(a.port)
	err := c.AddReplica(ctx, controller.AddRequest{Address: alias})
	if !errors.Is(err, controller.ErrPrecondition) {
		t.Fatalf("adding %s (= %s) again: %v, want ErrPrecondition", alias, a.addr, err)
	}
	info := a.pr.Server.Store().Info()
	if info.Rebuilding {
		t.Fatal("the refused add left the live replica flagged rebuilding")
	}
	snaps, err := c.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Fatalf("the refused add took a snapshot: %v", snaps)
	}
	if len(c.Replicas()) != 2 {
		t.Fatalf("replicas %v", c.Replicas())
	}
}

// TestReAddReplicaAfterInterruptedRebuild: a replica whose rebuild was cut
// short (volume.meta still says Rebuilding) can be added again and rebuilds
// (Longhorn resets the failed rebuild flag before adding).
func TestReAddReplicaAfterInterruptedRebuild(t *testing.T) {
	const size = 4 << 20
	dir := t.TempDir()
	a := startReplica(t, filepath.Join(dir, "a"), size, replica.Options{})
	ctx := context.Background()
	c := newController(t, size, controller.VolumeOptions{})
	if err := c.Start(ctx, addrs(a), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{0x5c}, 64<<10)
	if _, err := c.Backend().WriteAt(want, 8192); err != nil {
		t.Fatal(err)
	}
	n := startReplica(t, filepath.Join(dir, "n"), size, replica.Options{})
	// Leave volume.meta saying Rebuilding, as a cut-short rebuild does.
	if _, err := n.pr.Server.ReplicaOpen(ctx, &enginerpc.ReplicaOpenRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.pr.Server.RebuildingSet(ctx, &enginerpc.RebuildingSetRequest{Rebuilding: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.pr.Server.ReplicaClose(ctx, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddReplica(ctx, controller.AddRequest{Address: n.addr}); err != nil {
		t.Fatalf("re-adding a replica left rebuilding: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for modes(c)[n.addr] != controller.ModeRW {
		if st := c.RebuildStatus()[n.addr]; st.State == controller.RebuildError || time.Now().After(deadline) {
			t.Fatalf("rebuild: %+v, modes %v", st, modes(c))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := n.readAll(size); !bytes.Equal(got[8192:8192+len(want)], want) {
		t.Fatal("rebuilt replica misses the data")
	}
}

package controller_test

import (
	"bytes"
	"context"
	"math/rand"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// serveController serves c's gRPC API on a loopback port and returns it.
func serveController(t *testing.T, c *controller.Controller) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	enginerpc.RegisterControllerServiceServer(gs, controller.NewServer(c))
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}

func TestSnapshotCloneFromAnotherVolume(t *testing.T) {
	const size = 16 << 20
	dir := t.TempDir()
	ctx := context.Background()
	sa := startReplica(t, filepath.Join(dir, "sa"), size, replica.Options{})
	sb := startReplica(t, filepath.Join(dir, "sb"), size, replica.Options{})
	src := newController(t, size, controller.VolumeOptions{})
	if err := src.Start(ctx, addrs(sa, sb), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	srcURL := serveController(t, src)
	rng := rand.New(rand.NewSource(5))
	model := make([]byte, size)
	write := func(n int) {
		for i := 0; i < n; i++ {
			off := rng.Int63n(size-40000) &^ 511
			p := randBytes(rng, 512*(1+rng.Intn(64)))
			if _, err := src.Backend().WriteAt(p, off); err != nil {
				t.Fatal(err)
			}
			copy(model[off:], p)
		}
	}
	write(50)
	if _, err := src.Snapshot(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	write(50)
	if _, err := src.Snapshot(ctx, "s2", nil); err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(model)
	write(50) // after s2: must not reach the clone

	ta := startReplica(t, filepath.Join(dir, "ta"), size, replica.Options{})
	tb := startReplica(t, filepath.Join(dir, "tb"), size, replica.Options{})
	dst := newController(t, size, controller.VolumeOptions{})
	if err := dst.Start(ctx, addrs(ta, tb), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if err := dst.SnapshotClone(ctx, controller.CloneRequest{FromEngine: srcURL, FromVolume: "vol", Snapshot: "nope"}); err != nil {
		t.Fatalf("clone start: %v", err)
	}
	waitClone(t, dst, false)
	if err := dst.SnapshotClone(ctx, controller.CloneRequest{FromEngine: srcURL, FromVolume: "vol", Snapshot: "s2"}); err != nil {
		t.Fatal(err)
	}
	waitClone(t, dst, true)
	got := make([]byte, size)
	if _, err := dst.Backend().ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("cloned volume differs from the source at snapshot s2")
	}
	for _, r := range []*testReplica{ta, tb} {
		if !bytes.Equal(r.readAll(size), want) {
			t.Fatalf("replica %s differs from s2", r.addr)
		}
	}
	snaps, err := dst.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snaps[controller.HeadName].Parent != "s2" {
		t.Fatalf("head parent %q, want s2", snaps[controller.HeadName].Parent)
	}
}

// waitClone waits until no replica is cloning and checks the outcome.
func waitClone(t *testing.T, c *controller.Controller, wantOK bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		busy, failed := false, ""
		for addr, st := range c.CloneStatus(context.Background()) {
			busy = busy || st.GetIsCloning()
			if st.GetError() != "" {
				failed = addr + ": " + st.GetError()
			}
		}
		if !busy {
			if wantOK && failed != "" {
				t.Fatalf("clone failed: %s", failed)
			}
			if !wantOK && failed == "" {
				t.Fatal("clone of an unknown snapshot succeeded")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("clone did not finish")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

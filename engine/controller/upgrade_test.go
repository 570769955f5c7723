package controller_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/replica"
)

// handOverFrontend is a stateFrontend that says it can be taken over.
type handOverFrontend struct {
	stateFrontend
	socket string
}

func (f *handOverFrontend) CanHandOver() error { return nil }

// HandOverSocket names a path where nothing listens: the watch of a hand-over
// finds the new engine gone at once.
func (f *handOverFrontend) HandOverSocket() string { return f.socket }

// TestHandOverRefusals: a frontend that cannot hand over is refused "not
// supported yet", as is a volume with a replica that is not RW, and a new
// engine that took over another endpoint.
func TestHandOverRefusals(t *testing.T) {
	const size = 4 << 20
	dir := t.TempDir()
	a := startReplica(t, filepath.Join(dir, "a"), size, replica.Options{})
	b := startReplica(t, filepath.Join(dir, "b"), size, replica.Options{})
	ctx := context.Background()
	plain := newController(t, size, withTestFrontend(controller.VolumeOptions{}))
	if _, err := plain.HandOver(ctx, "test://", nil); !errors.Is(err, controller.ErrPrecondition) ||
		!strings.Contains(err.Error(), "not started") {
		t.Fatalf("hand-over before start: %v", err)
	}
	if err := plain.Start(ctx, addrs(a), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.HandOver(ctx, "test://", nil); !errors.Is(err, controller.ErrPrecondition) ||
		!strings.Contains(err.Error(), "not supported yet for frontend test") {
		t.Fatalf("hand-over of a frontend without CanHandOver: %v", err)
	}
	if err := plain.Shutdown(); err != nil {
		t.Fatal(err)
	}

	c := newController(t, size, handOverOpts(""))
	if err := c.Start(ctx, addrs(a, b), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HandOver(ctx, "nbd+unix:///other", nil); !errors.Is(err, controller.ErrInvalid) {
		t.Fatalf("hand-over of another endpoint: %v", err)
	}
	if err := c.SetReplicaMode(b.addr, controller.ModeERR); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HandOver(ctx, "test://", nil); !errors.Is(err, controller.ErrPrecondition) || !strings.Contains(err.Error(), "ERR") {
		t.Fatalf("hand-over with an ERR replica: %v", err)
	}
	if info := c.Info(); info.FrontendState != controller.FrontendUp || info.State != controller.StateRunning {
		t.Fatalf("refused hand-over left %+v", info)
	}
}

func handOverOpts(socket string) controller.VolumeOptions {
	return controller.VolumeOptions{Frontend: "test",
		NewFrontend: func(string) (frontend.Frontend, error) { return &handOverFrontend{socket: socket}, nil }}
}

// TestHandOverAndAbort: HandOver drains the frontend and closes every
// replica; the volume refuses a new Start; AbortHandOver opens them again
// and serves; a second abort is refused.
func TestHandOverAndAbort(t *testing.T) {
	const size = 4 << 20
	ctx := context.Background()
	c, a, b := startVolume(t, size, handOverOpts(""))
	if _, err := c.Backend().WriteAt([]byte("handed over"), 4096); err != nil {
		t.Fatal(err)
	}
	res, err := c.HandOver(ctx, "test://", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Size != size || len(res.Replicas) != 2 || res.Frontend != "test" {
		t.Fatalf("hand-over result %+v", res)
	}
	for _, r := range []*testReplica{a, b} {
		if st := r.pr.Server.Store(); st != nil {
			t.Fatalf("replica %s still open after the hand-over", r.addr)
		}
	}
	if info := c.Info(); info.FrontendState != controller.FrontendDown || info.State != controller.StateStopped {
		t.Fatalf("after hand-over %+v", info)
	}
	if err := c.Start(ctx, addrs(a, b), 0, 0, false); !errors.Is(err, controller.ErrPrecondition) {
		t.Fatalf("Start after hand-over: %v", err)
	}
	if err := c.AbortHandOver(ctx); err != nil {
		t.Fatal(err)
	}
	if m := modes(c); m[a.addr] != controller.ModeRW || m[b.addr] != controller.ModeRW || c.Info().FrontendState != controller.FrontendUp {
		t.Fatalf("after abort: modes %v info %+v", m, c.Info())
	}
	buf := make([]byte, len("handed over"))
	if _, err := c.Backend().ReadAt(buf, 4096); err != nil || string(buf) != "handed over" {
		t.Fatalf("read after abort: %q %v", buf, err)
	}
	if err := c.AbortHandOver(ctx); err != nil {
		t.Fatalf("abort of a volume already taken back: %v", err)
	}
	if err := c.HandOverDone(); !errors.Is(err, controller.ErrPrecondition) {
		t.Fatalf("done without a hand-over: %v", err)
	}
}

// TestHandOverSelfAbort: when nothing listens on the socket after a
// hand-over (the new engine died), the engine closes the new engine's
// replicas and takes the volume back by itself; after HandOverDone it
// does not.
func TestHandOverSelfAbort(t *testing.T) {
	const size = 4 << 20
	dir := t.TempDir()
	a := startReplica(t, filepath.Join(dir, "a"), size, replica.Options{})
	n := startReplica(t, filepath.Join(dir, "n"), size, replica.Options{})
	ctx := context.Background()
	gone := filepath.Join(dir, "gone.sock")
	c := newController(t, size, handOverOpts(gone))
	if err := c.Start(ctx, addrs(a), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	// The new replica as a dead new engine left it: open.
	if _, err := n.pr.Server.ReplicaOpen(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HandOver(ctx, "test://", addrs(n)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for c.Info().FrontendState != controller.FrontendUp {
		if time.Now().After(deadline) {
			t.Fatalf("volume not taken back: %+v", c.Info())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n.pr.Server.Store() != nil {
		t.Fatal("the new replica is still open after the self-abort")
	}
	if m := modes(c); m[a.addr] != controller.ModeRW {
		t.Fatalf("after self-abort: %v", m)
	}

	if _, err := c.HandOver(ctx, "test://", addrs(n)); err != nil {
		t.Fatal(err)
	}
	if err := c.HandOverDone(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // longer than the watch needs to give up on the socket
	if info := c.Info(); info.FrontendState != controller.FrontendDown || info.State != controller.StateStopped {
		t.Fatalf("volume taken back after HandOverDone: %+v", info)
	}
	if err := c.AbortHandOver(ctx); !errors.Is(err, controller.ErrPrecondition) {
		t.Fatalf("abort after done: %v", err)
	}
	if err := c.Start(ctx, addrs(a), 0, 0, false); !errors.Is(err, controller.ErrPrecondition) {
		t.Fatalf("Start after done: %v", err)
	}
}

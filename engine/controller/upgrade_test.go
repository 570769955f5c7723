package controller_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/replica"
)

// handOverFrontend is a stateFrontend that says it can be taken over.
type handOverFrontend struct{ stateFrontend }

func (f *handOverFrontend) CanHandOver() error { return nil }

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
	if _, err := plain.HandOver(ctx, "test://"); !errors.Is(err, controller.ErrPrecondition) ||
		!strings.Contains(err.Error(), "not started") {
		t.Fatalf("hand-over before start: %v", err)
	}
	if err := plain.Start(ctx, addrs(a), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.HandOver(ctx, "test://"); !errors.Is(err, controller.ErrPrecondition) ||
		!strings.Contains(err.Error(), "not supported yet for frontend test") {
		t.Fatalf("hand-over of a frontend without CanHandOver: %v", err)
	}
	if err := plain.Shutdown(); err != nil {
		t.Fatal(err)
	}

	c := newController(t, size, handOverOpts())
	if err := c.Start(ctx, addrs(a, b), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HandOver(ctx, "nbd+unix:///other"); !errors.Is(err, controller.ErrInvalid) {
		t.Fatalf("hand-over of another endpoint: %v", err)
	}
	if err := c.SetReplicaMode(b.addr, controller.ModeERR); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HandOver(ctx, "test://"); !errors.Is(err, controller.ErrPrecondition) || !strings.Contains(err.Error(), "ERR") {
		t.Fatalf("hand-over with an ERR replica: %v", err)
	}
	if info := c.Info(); info.FrontendState != controller.FrontendUp || info.State != controller.StateRunning {
		t.Fatalf("refused hand-over left %+v", info)
	}
}

func handOverOpts() controller.VolumeOptions {
	return controller.VolumeOptions{Frontend: "test",
		NewFrontend: func(string) (frontend.Frontend, error) { return &handOverFrontend{}, nil }}
}

// TestHandOverAndAbort: HandOver drains the frontend and closes every
// replica; the volume refuses a new Start; AbortHandOver opens them again
// and serves; a second abort is refused.
func TestHandOverAndAbort(t *testing.T) {
	const size = 4 << 20
	dir := t.TempDir()
	a := startReplica(t, filepath.Join(dir, "a"), size, replica.Options{})
	b := startReplica(t, filepath.Join(dir, "b"), size, replica.Options{})
	ctx := context.Background()
	c := newController(t, size, handOverOpts())
	if err := c.Start(ctx, addrs(a, b), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Backend().WriteAt([]byte("handed over"), 4096); err != nil {
		t.Fatal(err)
	}
	res, err := c.HandOver(ctx, "test://")
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
	if err := c.AbortHandOver(ctx); !errors.Is(err, controller.ErrPrecondition) {
		t.Fatalf("second abort: %v", err)
	}
}

package nbd

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestTakeOver: a second server renames its socket over the first one's
// path; from then on clients reach the second server, the first one's
// Shutdown leaves the path alone, and the second's Shutdown removes it.
func TestTakeOver(t *testing.T) {
	spec, path := unixListen(t)
	ctx := context.Background()
	oldBe, newBe := newMemBackend(1<<20), newMemBackend(2<<20)
	old := startServer(t, Config{Listen: spec}, 1<<20, oldBe)
	c := dialRaw(t, old)
	if size, _ := c.negotiateGo("vol"); size != 1<<20 {
		t.Fatalf("old server size %d", size)
	}
	if err := old.CanHandOver(); err != nil {
		t.Fatal(err)
	}
	nw, err := New(Config{Listen: spec})
	if err != nil {
		t.Fatal(err)
	}
	if ep, _ := nw.EndpointFor("vol"); ep != old.Endpoint() {
		t.Fatalf("EndpointFor %q, old serves %q", ep, old.Endpoint())
	}
	_, oldIno, _ := inodeOf(path)
	take, err := nw.PrepareTakeOver(ctx, "vol")
	if err != nil {
		t.Fatal(err)
	}
	if _, ino, _ := inodeOf(path); ino == oldIno {
		t.Fatal("socket path still names the old socket")
	}
	if _, err := nw.PrepareTakeOver(ctx, "vol"); !errors.Is(err, ErrHandOver) {
		t.Fatalf("second PrepareTakeOver: %v", err)
	}
	if err := old.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("old server's Shutdown removed the taken-over socket: %v", err)
	}
	if err := nw.Startup(ctx, "vol", 2<<20, newBe); err != nil {
		t.Fatal(err)
	}
	take.Commit()
	if _, err := os.Lstat(path + ".prev"); !os.IsNotExist(err) {
		t.Fatalf("link to the old socket left: %v", err)
	}
	c2 := dialRaw(t, nw)
	if size, _ := c2.negotiateGo("vol"); size != 2<<20 {
		t.Fatalf("after take-over size %d, want the new server's", size)
	}
	if err := nw.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("new server's Shutdown left its socket: %v", err)
	}
}

// TestTakeOverRevert: Revert gives the path back to the old socket, which
// serves again; nothing of the attempt is left.
func TestTakeOverRevert(t *testing.T) {
	spec, path := unixListen(t)
	ctx := context.Background()
	old := startServer(t, Config{Listen: spec}, 1<<20, newMemBackend(1<<20))
	nw, _ := New(Config{Listen: spec})
	take, err := nw.PrepareTakeOver(ctx, "vol")
	if err != nil {
		t.Fatal(err)
	}
	if err := take.Revert(); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, old)
	if size, _ := c.negotiateGo("vol"); size != 1<<20 {
		t.Fatalf("old server after revert: size %d", size)
	}
	for _, p := range []string{path + ".prev", path + ".upgrade"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left: %v", p, err)
		}
	}
}

// TestTakeOverRefused: TCP listeners and paths without a socket cannot be
// taken over, with a clear reason.
func TestTakeOverRefused(t *testing.T) {
	ctx := context.Background()
	tcp := startServer(t, Config{Listen: "tcp:127.0.0.1:0"}, 1<<20, newMemBackend(1<<20))
	if err := tcp.CanHandOver(); !errors.Is(err, ErrHandOver) || !strings.Contains(err.Error(), "not supported yet") {
		t.Fatalf("CanHandOver over tcp: %v", err)
	}
	s, _ := New(Config{Listen: "tcp:127.0.0.1:0"})
	if _, err := s.PrepareTakeOver(ctx, "vol"); !errors.Is(err, ErrHandOver) || !strings.Contains(err.Error(), "not supported yet") {
		t.Fatalf("PrepareTakeOver over tcp: %v", err)
	}
	spec, _ := unixListen(t)
	u, _ := New(Config{Listen: spec})
	if _, err := u.PrepareTakeOver(ctx, "vol"); !errors.Is(err, ErrHandOver) || !strings.Contains(err.Error(), "no server socket") {
		t.Fatalf("PrepareTakeOver without a server: %v", err)
	}
	if err := u.CanHandOver(); !errors.Is(err, ErrHandOver) {
		t.Fatalf("CanHandOver of a stopped server: %v", err)
	}
}

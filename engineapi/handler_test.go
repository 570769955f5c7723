package engineapi

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/instance-manager/process"
	"github.com/longhorn-go/longhorn/instance-manager/server"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// startInProcessIM runs the instance manager's servers in this process on
// the given addresses ("127.0.0.1:0" picks ports).
func startInProcessIM(t *testing.T, listen, proxyListen string) *server.Server {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	start := int32(testutil.FreePortRange(t, 12))
	m, err := process.NewManager(process.Config{
		PortRange: process.PortRange{Start: start, End: start + 11}, PortProbe: process.HostPortFree,
		LogDir: t.TempDir(), StopTimeout: 2 * time.Second, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Listen: listen, ProxyListen: proxyListen, Manager: m, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stopIM(t, srv)
		}
	})
	return srv
}

func stopIM(t *testing.T, srv *server.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

func TestHandlerReusesChecksAndRedials(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	srv := startInProcessIM(t, "127.0.0.1:0", "127.0.0.1:0")
	im := IMAddress{Address: srv.Addr(), ProxyAddress: srv.ProxyAddr()}
	h := NewHandler(HandlerOptions{CheckInterval: 50 * time.Millisecond, CheckTimeout: time.Second})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	a, err := h.InstanceManager(ctx, im)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.InstanceManager(ctx, im)
	if err != nil || a.entry != b.entry || a.entry.cc == nil {
		t.Fatalf("second client: %v, shared entry %v", err, a.entry == b.entry)
	}
	if v := a.Versions(); v.InstanceManagerCurrent != imrpc.InstanceManagerAPIVersion {
		t.Fatalf("versions %+v", v)
	}
	firstConn := a.entry.cc

	stopIM(t, srv)
	time.Sleep(60 * time.Millisecond) // past CheckInterval: the next use checks
	if _, err := h.InstanceManager(ctx, im); !IsUnavailable(err) {
		t.Fatalf("instance manager down: %v, want Unavailable", err)
	}
	if _, err := a.InstanceList(ctx); err == nil {
		t.Fatal("client of a closed connection still works")
	}

	// Same addresses again: the handler dials anew.
	startInProcessIM(t, im.Address, im.ProxyAddress)
	c, err := h.InstanceManager(ctx, im)
	if err != nil {
		t.Fatal(err)
	}
	if c.entry.cc == firstConn {
		t.Fatal("broken connection was not re-dialed")
	}
	if _, err := c.InstanceList(ctx); err != nil {
		t.Fatal(err)
	}
	h.Forget(im)
	h.Close()
	if _, err := h.InstanceManager(ctx, im); !errors.Is(err, ErrHandlerClosed) {
		t.Fatalf("closed handler: %v", err)
	}
}

// oldIM is an instance manager reporting API versions this client does not speak.
type oldIM struct {
	imrpc.UnimplementedInstanceServiceServer
	min, cur int64
}

func (o *oldIM) VersionGet(context.Context, *imrpc.Empty) (*imrpc.VersionResponse, error) {
	return &imrpc.VersionResponse{Version: "v0.old", InstanceManagerApiMinVersion: o.min, InstanceManagerApiVersion: o.cur,
		InstanceManagerProxyApiMinVersion: 1, InstanceManagerProxyApiVersion: 1}, nil
}

func TestHandlerRefusesIncompatibleInstanceManager(t *testing.T) {
	for _, v := range []struct{ min, cur int64 }{{0, 0}, {CurrentInstanceManagerAPIVersion + 1, CurrentInstanceManagerAPIVersion + 5}} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		imrpc.RegisterInstanceServiceServer(s, &oldIM{min: v.min, cur: v.cur})
		go s.Serve(l)
		h := NewHandler(HandlerOptions{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = h.InstanceManager(ctx, IMAddress{Address: l.Addr().String(), ProxyAddress: l.Addr().String()})
		cancel()
		h.Close()
		s.Stop()
		if !errors.Is(err, ErrIncompatible) {
			t.Errorf("versions %d..%d: %v, want ErrIncompatible", v.min, v.cur, err)
		}
	}
}

func TestCallContextAddsDeadline(t *testing.T) {
	ctx, cancel := callContext(context.Background())
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > DefaultCallTimeout {
		t.Fatalf("deadline %v %v", d, ok)
	}
	parent, pcancel := context.WithTimeout(context.Background(), time.Second)
	defer pcancel()
	ctx2, cancel2 := callContext(parent)
	defer cancel2()
	if d1, _ := parent.Deadline(); func() bool { d2, _ := ctx2.Deadline(); return !d1.Equal(d2) }() {
		t.Fatal("existing deadline replaced")
	}
}

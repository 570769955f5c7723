package server

import (
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// engineConns keeps one gRPC client connection per engine address for the
// proxy and closes connections unused for idleTimeout. grpc.ClientConn
// reconnects by itself, so a restarted engine on the same address is reached
// again without a new dial.
type engineConns struct {
	idleTimeout time.Duration

	mu     sync.Mutex
	conns  map[string]*engineConn
	closed bool
	stop   chan struct{}
}

type engineConn struct {
	cc       *grpc.ClientConn
	lastUsed time.Time
}

func newEngineConns(idle time.Duration) *engineConns {
	ec := &engineConns{idleTimeout: idle, conns: map[string]*engineConn{}, stop: make(chan struct{})}
	go ec.janitor()
	return ec
}

// engineClient is an engine's two services on one connection: Longhorn's
// ControllerService and this implementation's ControllerExtService.
type engineClient interface {
	enginerpc.ControllerServiceClient
	enginerpc.ControllerExtServiceClient
}

type engineClients struct {
	enginerpc.ControllerServiceClient
	enginerpc.ControllerExtServiceClient
}

// client returns the clients for the engine at address.
func (ec *engineConns) client(address string) (engineClient, error) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if ec.closed {
		return nil, grpc.ErrServerStopped
	}
	c, ok := ec.conns[address]
	if !ok {
		cc, err := grpc.NewClient("passthrough:///"+address, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		c = &engineConn{cc: cc}
		ec.conns[address] = c
	}
	c.lastUsed = time.Now()
	return engineClients{enginerpc.NewControllerServiceClient(c.cc), enginerpc.NewControllerExtServiceClient(c.cc)}, nil
}

func (ec *engineConns) janitor() {
	t := time.NewTicker(ec.idleTimeout / 2)
	defer t.Stop()
	for {
		select {
		case <-ec.stop:
			return
		case now := <-t.C:
			ec.mu.Lock()
			for addr, c := range ec.conns {
				if now.Sub(c.lastUsed) > ec.idleTimeout {
					_ = c.cc.Close()
					delete(ec.conns, addr)
				}
			}
			ec.mu.Unlock()
		}
	}
}

// close closes every connection; later calls to client fail.
func (ec *engineConns) close() {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if ec.closed {
		return
	}
	ec.closed = true
	close(ec.stop)
	for addr, c := range ec.conns {
		_ = c.cc.Close()
		delete(ec.conns, addr)
	}
}

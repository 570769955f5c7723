package engineapi

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// Metrics are an engine's I/O rates over its last window
// (ControllerService.MetricsGet): throughput in bytes/s, IOPS, and average
// latency in nanoseconds.
type Metrics struct {
	ReadThroughput, WriteThroughput uint64
	ReadIOPS, WriteIOPS             uint64
	ReadLatency, WriteLatency       uint64
}

// MetricsClient reads engines' I/O metrics straight from each engine's gRPC
// address (host:port, the engine's Status.IP and Status.Port), keeping one
// connection per address. It is safe for concurrent use; Close drops the
// connections.
type MetricsClient struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// EngineMetrics calls MetricsGet on the engine at address. Errors: the
// address cannot be dialed, or the call fails (the connection is dropped, so
// the next call dials again).
func (m *MetricsClient) EngineMetrics(ctx context.Context, address string) (Metrics, error) {
	cc, err := m.conn(address)
	if err != nil {
		return Metrics{}, err
	}
	r, err := enginerpc.NewControllerServiceClient(cc).MetricsGet(ctx, &emptypb.Empty{})
	if err != nil {
		m.drop(address)
		return Metrics{}, fmt.Errorf("engine %s MetricsGet: %w", address, err)
	}
	x := r.GetMetrics()
	return Metrics{ReadThroughput: x.GetReadThroughput(), WriteThroughput: x.GetWriteThroughput(),
		ReadIOPS: x.GetReadIOPS(), WriteIOPS: x.GetWriteIOPS(),
		ReadLatency: x.GetReadLatency(), WriteLatency: x.GetWriteLatency()}, nil
}

func (m *MetricsClient) conn(address string) (*grpc.ClientConn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cc := m.conns[address]; cc != nil {
		return cc, nil
	}
	cc, err := grpc.NewClient("passthrough:///"+address, dialOptions...)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", address, err)
	}
	if m.conns == nil {
		m.conns = map[string]*grpc.ClientConn{}
	}
	m.conns[address] = cc
	return cc, nil
}

func (m *MetricsClient) drop(address string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cc := m.conns[address]; cc != nil {
		_ = cc.Close()
		delete(m.conns, address)
	}
}

// Close closes every connection.
func (m *MetricsClient) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for a, cc := range m.conns {
		_ = cc.Close()
		delete(m.conns, a)
	}
}

package controller

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/syncagent"
)

// rpcTimeout bounds one control call to a replica.
const rpcTimeout = 30 * time.Second

// remote is the control side of one replica process: its ReplicaService on
// P and its SyncAgentService on P+2. gRPC clients connect lazily.
type remote struct {
	addr string // "tcp://HOST:P" as given
	host string
	port int

	conn      *grpc.ClientConn
	ctl       enginerpc.ReplicaServiceClient
	agentConn *grpc.ClientConn
	agent     enginerpc.SyncAgentServiceClient
}

// NormalizeAddress returns the canonical "tcp://HOST:P" form of a replica
// address given as "tcp://HOST:P" or "HOST:P".
func NormalizeAddress(addr string) (string, error) {
	host, port, err := syncagent.ParseReplicaAddress(addr)
	if err != nil {
		return "", err
	}
	return "tcp://" + net.JoinHostPort(host, strconv.Itoa(port)), nil
}

func newRemote(addr string) (*remote, error) {
	host, port, err := syncagent.ParseReplicaAddress(addr)
	if err != nil {
		return nil, err
	}
	r := &remote{addr: addr, host: host, port: port}
	creds := grpc.WithTransportCredentials(insecure.NewCredentials())
	if r.conn, err = grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(port)), creds); err != nil {
		return nil, err
	}
	if r.agentConn, err = grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(port+2)), creds); err != nil {
		r.conn.Close()
		return nil, err
	}
	r.ctl = enginerpc.NewReplicaServiceClient(r.conn)
	r.agent = enginerpc.NewSyncAgentServiceClient(r.agentConn)
	return r, nil
}

func (r *remote) close() {
	r.conn.Close()
	r.agentConn.Close()
}

// dataAddr is the data server, P+1.
func (r *remote) dataAddr() string { return net.JoinHostPort(r.host, strconv.Itoa(r.port+1)) }

// dialData opens the dataconn connections to P+1, over the replica's local
// socket when it runs on this node (dataconn.DialReplica).
func (r *remote) dialData(ctx context.Context, opts dataconn.Options) (*dataconn.Client, error) {
	c, err := dataconn.DialReplica(ctx, r.dataAddr(), opts)
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", r.addr, err)
	}
	// Once every connection answered a Ping the replica counts them in its
	// DataConnections, so a second engine checking whether the replica is
	// in use (notInUse) cannot slip in before the accept loop ran.
	if err := c.PingAll(); err != nil {
		c.Close()
		return nil, fmt.Errorf("replica %s: ping after dial: %w", r.addr, err)
	}
	return c, nil
}

func callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, rpcTimeout)
}

// get returns the replica's state.
func (r *remote) get(ctx context.Context) (*enginerpc.Replica, error) {
	ctx, cancel := callCtx(ctx)
	defer cancel()
	return r.ctl.ReplicaGet(ctx, &enginerpc.Empty{})
}

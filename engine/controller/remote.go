package controller

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/rpcmeta"
	"github.com/longhorn-go/longhorn/engine/syncagent"
)

// rpcTimeout bounds one control call to a replica.
const rpcTimeout = 30 * time.Second

// empty is the request of the methods that take none.
var empty = &emptypb.Empty{}

// remote is the control side of one replica process: its ReplicaService on
// P and its SyncAgentService on P+2, both Longhorn's services, so the
// replica may be Longhorn's or ours. gRPC clients connect lazily; every
// call carries the volume name (Longhorn's identity check).
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

func newRemote(addr, volume string) (*remote, error) {
	host, port, err := syncagent.ParseReplicaAddress(addr)
	if err != nil {
		return nil, err
	}
	r := &remote{addr: addr, host: host, port: port}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithNoProxy(),
		grpc.WithDisableServiceConfig(), rpcmeta.ClientIdentity(volume, "")}
	if r.conn, err = grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(port)), opts...); err != nil {
		return nil, err
	}
	if r.agentConn, err = grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(port+2)), opts...); err != nil {
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

// dialData opens the dataconn connections to P+1, with the extensions the
// replica listed (info.extensions: our replicas' flush, local socket and
// shared memory; a Longhorn replica lists none and gets Longhorn's wire).
func (r *remote) dialData(ctx context.Context, opts dataconn.Options, info *enginerpc.Replica) (*dataconn.Client, error) {
	c, err := dataconn.DialReplica(ctx, r.dataAddr(), dataconn.OptionsFor(opts, info.GetExtensions()))
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", r.addr, err)
	}
	// Once every connection answered a Ping the replica counts them in its
	// data_connections, so a second engine checking whether the replica is
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
	resp, err := r.ctl.ReplicaGet(ctx, empty)
	return resp.GetReplica(), err
}

// snapshotExists is the text by which Longhorn's controller recognises a
// replica refusing a snapshot name it already has (control.go
// isSnapshotDiskExist); a Longhorn replica sends it with codes.Unknown.
var snapshotExists = regexp.MustCompile(`snapshot (.*) is already existing`)

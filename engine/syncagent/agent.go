package syncagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	gosync "sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/rpcmeta"
	"github.com/longhorn-go/longhorn/engine/syncagent/backup"
)

// Replica is what the sync agent needs from the replica process it belongs to.
type Replica interface {
	// FilePath returns the path of a replica layout file (volume-snap-X.img,
	// its .meta, ...) or an error for any other name.
	FilePath(name string) (string, error)
	// Purge purges every snapshot marked removed (see replica.Store.Purge).
	Purge(ctx context.Context, progress func(disk string, done, total int64)) error
}

// Operation states as Longhorn reports them (types.ProcessState*).
const (
	StateInProgress = "in_progress"
	StateComplete   = "complete"
	StateError      = "error"
)

// opStatus is the state of a background operation (rebuild, purge, clone).
type opStatus struct {
	active   bool
	err      string
	progress int32 // percent
	state    string
	from     []string
	name     string // snapshot being cloned
}

// Config configures an Agent.
type Config struct {
	// Host and PortStart..PortEnd are where transfer receivers listen
	// (Longhorn: P+3..P+9).
	Host               string
	PortStart, PortEnd int
	// VolumeName is sent as volume-name metadata to other agents.
	VolumeName string
	// HashLockPath is the node-wide lock file of snapshot hashing
	// (Longhorn: /var/lib/longhorn/.lock/hash); "" = DefaultHashLockPath.
	HashLockPath string
	Log          logrus.FieldLogger
}

// Agent implements SyncAgentService for one replica.
type Agent struct {
	enginerpc.UnimplementedSyncAgentServiceServer

	r   Replica
	cfg Config
	log logrus.FieldLogger

	mu      gosync.Mutex
	rebuild opStatus
	purge   opStatus
	clone   opStatus
	cancel  context.CancelFunc // of the running FilesSync
	hashes  map[string]*hashTask
	recvs   map[*Receiver]bool // running receivers, stopped by Close
	bk      *backup.Manager    // nil when the replica cannot take backups
	ctx     context.Context
	stop    context.CancelFunc
	wg      gosync.WaitGroup
}

// NewAgent returns an agent for r.
func NewAgent(r Replica, cfg Config) *Agent {
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.HashLockPath == "" {
		cfg.HashLockPath = DefaultHashLockPath
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Agent{r: r, cfg: cfg, log: cfg.Log, ctx: ctx, stop: stop, hashes: map[string]*hashTask{},
		recvs: map[*Receiver]bool{}, bk: newBackups(r, cfg)}
}

// Close cancels running transfers, purges and hashes, stops the receivers
// and waits for them.
func (a *Agent) Close() {
	a.stop()
	a.mu.Lock()
	for r := range a.recvs {
		r.Close()
	}
	a.mu.Unlock()
	if a.bk != nil {
		a.bk.Close()
	}
	a.wg.Wait()
}

func invalid(err error) error { return status.Error(codes.InvalidArgument, err.Error()) }

// FileRemove deletes one layout file of the replica directory.
func (a *Agent) FileRemove(_ context.Context, req *enginerpc.FileRemoveRequest) (*emptypb.Empty, error) {
	p, err := a.r.FilePath(req.GetFileName())
	if err != nil {
		return nil, invalid(err)
	}
	if err := removeIfExists(p); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &emptypb.Empty{}, nil
}

// FileRename renames one layout file to another layout file name.
func (a *Agent) FileRename(_ context.Context, req *enginerpc.FileRenameRequest) (*emptypb.Empty, error) {
	from, err := a.r.FilePath(req.GetOldFileName())
	if err != nil {
		return nil, invalid(err)
	}
	to, err := a.r.FilePath(req.GetNewFileName())
	if err != nil {
		return nil, invalid(err)
	}
	if err := rename(from, to); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &emptypb.Empty{}, nil
}

// ReceiverLaunch opens a receiver for one file on a free transfer port.
func (a *Agent) ReceiverLaunch(_ context.Context, req *enginerpc.ReceiverLaunchRequest) (*enginerpc.ReceiverLaunchResponse, error) {
	r, err := a.launch(req.GetToFileName())
	if err != nil {
		return nil, err
	}
	return &enginerpc.ReceiverLaunchResponse{Port: int32(r.Port())}, nil
}

func (a *Agent) launch(name string) (*Receiver, error) {
	p, err := a.r.FilePath(name)
	if err != nil {
		return nil, invalid(err)
	}
	for port := a.cfg.PortStart; port <= a.cfg.PortEnd; port++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(a.cfg.Host, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		r := NewReceiver(ln, p, 0)
		a.mu.Lock()
		a.recvs[r] = true
		a.mu.Unlock()
		go func() {
			<-r.Done()
			a.mu.Lock()
			delete(a.recvs, r)
			a.mu.Unlock()
		}()
		return r, nil
	}
	return nil, status.Errorf(codes.ResourceExhausted, "out of ports: no free transfer port in %d-%d", a.cfg.PortStart, a.cfg.PortEnd)
}

// FileSend sends one local file to a receiver and returns when it is done:
// with directIO unless it is a .meta file, with the fast path when asked
// (Longhorn's FileSend).
func (a *Agent) FileSend(ctx context.Context, req *enginerpc.FileSendRequest) (*emptypb.Empty, error) {
	p, err := a.r.FilePath(req.GetFromFileName())
	if err != nil {
		return nil, invalid(err)
	}
	if req.GetHost() == "" || req.GetPort() <= 0 || req.GetPort() > 65535 {
		return nil, invalid(fmt.Errorf("host %q port %d: want a host and a port 1-65535", req.GetHost(), req.GetPort()))
	}
	if req.GetBandwidthLimitBytesPerSecond() < 0 {
		return nil, invalid(fmt.Errorf("bandwidth_limit_bytes_per_second %d: want 0 (no limit) or more", req.GetBandwidthLimitBytesPerSecond()))
	}
	t0 := time.Now()
	st, err := SendFile(ctx, p, hostPort(req.GetHost(), int(req.GetPort())), SendOptions{
		FastSync:       req.GetFastSync(),
		DirectIO:       !strings.HasSuffix(req.GetFromFileName(), ".meta"),
		Timeout:        time.Duration(req.GetFileSyncHttpClientTimeout()) * time.Second,
		BandwidthLimit: req.GetBandwidthLimitBytesPerSecond(),
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "send %s: %v", req.GetFromFileName(), err)
	}
	a.log.WithFields(logrus.Fields{"file": req.GetFromFileName(), "sent": st.Sent, "skipped": st.Skipped,
		"holes": st.Holes, "took": time.Since(t0).Round(time.Millisecond).String()}).Info("sync agent: file sent")
	if st.Unhashed {
		// SendFile has returned: the receiver closed (synced) the file,
		// so its change time now is the one its bytes were written at.
		var ms []mirror
		if st.Mirror != "" {
			if ct, err := ChangeTime(st.Mirror); err == nil {
				ms = append(ms, mirror{path: st.Mirror, changeTime: ct})
			}
		}
		a.hashLater(p, ms...)
	}
	return &emptypb.Empty{}, nil
}

// dialAgent connects to the sync agent of the replica at addr ("tcp://HOST:P"
// or "HOST:P": the agent is at P+2).
func (a *Agent) dialAgent(addr string) (*grpc.ClientConn, enginerpc.SyncAgentServiceClient, error) {
	host, port, err := ParseReplicaAddress(addr)
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(port+2)),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return conn, enginerpc.NewSyncAgentServiceClient(conn), nil
}

// outgoing is ctx with this agent's identity for calls to other agents
// (its volume name, no instance name, as Longhorn's agents send).
func (a *Agent) outgoing(ctx context.Context) context.Context {
	return rpcmeta.WithIdentity(ctx, a.cfg.VolumeName, "")
}

// ReplicaRebuildStatus reports the last or running FilesSync.
func (a *Agent) ReplicaRebuildStatus(context.Context, *emptypb.Empty) (*enginerpc.ReplicaRebuildStatusResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.rebuild
	out := &enginerpc.ReplicaRebuildStatusResponse{IsRebuilding: st.active, Error: st.err, Progress: st.progress,
		State: st.state, FromReplicaAddressList: st.from}
	if len(st.from) > 0 {
		out.FromReplicaAddress = st.from[0]
	}
	return out, nil
}

// SnapshotPurge starts purging the snapshots marked removed (Longhorn: an
// error when a purge already runs, "replica is already purging snapshots").
func (a *Agent) SnapshotPurge(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.purge.active {
		return nil, status.Error(codes.FailedPrecondition, "replica is already purging snapshots")
	}
	if a.rebuild.active {
		return nil, status.Error(codes.FailedPrecondition, "cannot purge snapshots: the replica is rebuilding")
	}
	if a.backupsBusy() {
		return nil, status.Error(codes.FailedPrecondition, "cannot purge snapshots: a backup or restore is running")
	}
	a.purge = opStatus{active: true, state: StateInProgress}
	a.wg.Add(1)
	go a.runPurge()
	return &emptypb.Empty{}, nil
}

func (a *Agent) runPurge() {
	defer a.wg.Done()
	err := a.r.Purge(a.ctx, func(_ string, done, total int64) {
		a.mu.Lock()
		a.purge.progress = percent(done, total)
		a.mu.Unlock()
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	a.purge.active = false
	if err != nil {
		a.purge.state, a.purge.err = StateError, err.Error()
		a.log.WithError(err).Error("sync agent: snapshot purge failed")
		return
	}
	a.purge.state, a.purge.progress = StateComplete, 100
}

// percent is done/total as a percentage below 100 until complete.
func percent(done, total int64) int32 {
	if total > 0 && done < total {
		return int32(done * 100 / total)
	}
	return 99
}

// SnapshotPurgeStatus reports the last or running purge.
func (a *Agent) SnapshotPurgeStatus(context.Context, *emptypb.Empty) (*enginerpc.SnapshotPurgeStatusResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.purge
	return &enginerpc.SnapshotPurgeStatusResponse{IsPurging: st.active, Error: st.err, Progress: st.progress, State: st.state}, nil
}

// Reset cancels a running files sync and clears the finished statuses.
func (a *Agent) Reset(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	a.mu.Lock()
	if a.cancel != nil {
		a.cancel()
	}
	if !a.rebuild.active {
		a.rebuild = opStatus{}
	}
	if !a.purge.active {
		a.purge = opStatus{}
	}
	if !a.clone.active {
		a.clone = opStatus{}
	}
	a.mu.Unlock()
	if a.bk != nil {
		a.bk.ResetRestore()
	}
	return &emptypb.Empty{}, nil
}

// ErrBadAddress is a replica address that is not [tcp://|http://]HOST:P[/v1].
var ErrBadAddress = errors.New("bad replica address")

// ParseReplicaAddress splits a replica address "tcp://HOST:P" (or "HOST:P",
// "http://HOST:P/v1", the forms Longhorn's clients accept) into host and
// its first port P.
func ParseReplicaAddress(addr string) (string, int, error) {
	hp := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(addr, "tcp://"), "http://"), "/v1")
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, fmt.Errorf("%w %q: %v (want tcp://HOST:PORT)", ErrBadAddress, addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port <= 0 || port > 65535-9 {
		return "", 0, fmt.Errorf("%w %q: port %q must be 1..65526", ErrBadAddress, addr, ps)
	}
	if host == "" {
		return "", 0, fmt.Errorf("%w %q: empty host", ErrBadAddress, addr)
	}
	return host, port, nil
}

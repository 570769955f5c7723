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

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// Replica is what the sync agent needs from the replica process it belongs to.
type Replica interface {
	// FilePath returns the path of a replica layout file (volume-snap-X.img,
	// its .meta, ...) or an error for any other name.
	FilePath(name string) (string, error)
	// Purge purges every snapshot marked removed (see replica.Store.Purge).
	Purge(ctx context.Context, progress func(disk string, done, total int64)) error
}

// Operation states as Longhorn reports them.
const (
	StateInProgress = "in_progress"
	StateComplete   = "complete"
	StateError      = "error"
)

// opStatus is the state of a background operation (rebuild or purge).
type opStatus struct {
	active   bool
	err      string
	progress int32 // percent
	state    string
	from     string
	name     string // snapshot being cloned
}

// Agent implements SyncAgentService for one replica. Transfer receivers bind
// ports from [PortStart, PortEnd] on Host.
type Agent struct {
	enginerpc.UnimplementedSyncAgentServiceServer

	r         Replica
	host      string
	portStart int
	portEnd   int
	log       logrus.FieldLogger

	mu      gosync.Mutex
	rebuild opStatus
	purge   opStatus
	clone   opStatus
	cancel  context.CancelFunc // of the running FilesSync
	ctx     context.Context
	stop    context.CancelFunc
	wg      gosync.WaitGroup
}

// NewAgent returns an agent for r whose receivers listen on host, ports
// portStart..portEnd (Longhorn: P+3..P+9).
func NewAgent(r Replica, host string, portStart, portEnd int, log logrus.FieldLogger) *Agent {
	if log == nil {
		log = logrus.StandardLogger()
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Agent{r: r, host: host, portStart: portStart, portEnd: portEnd, log: log, ctx: ctx, stop: stop}
}

// Close cancels running transfers and purges and waits for them.
func (a *Agent) Close() {
	a.stop()
	a.wg.Wait()
}

func invalid(err error) error { return status.Error(codes.InvalidArgument, err.Error()) }

// FileRemove deletes one layout file of the replica directory.
func (a *Agent) FileRemove(_ context.Context, req *enginerpc.FileRemoveRequest) (*enginerpc.Empty, error) {
	p, err := a.r.FilePath(req.GetFileName())
	if err != nil {
		return nil, invalid(err)
	}
	if err := removeIfExists(p); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &enginerpc.Empty{}, nil
}

// FileRename renames one layout file to another layout file name.
func (a *Agent) FileRename(_ context.Context, req *enginerpc.FileRenameRequest) (*enginerpc.Empty, error) {
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
	return &enginerpc.Empty{}, nil
}

// ReceiverLaunch opens a receiver for one file on a free transfer port.
func (a *Agent) ReceiverLaunch(_ context.Context, req *enginerpc.ReceiverLaunchRequest) (*enginerpc.ReceiverLaunchReply, error) {
	r, err := a.launch(req.GetToFileName())
	if err != nil {
		return nil, err
	}
	return &enginerpc.ReceiverLaunchReply{Port: int32(r.Port())}, nil
}

func (a *Agent) launch(name string) (*Receiver, error) {
	p, err := a.r.FilePath(name)
	if err != nil {
		return nil, invalid(err)
	}
	for port := a.portStart; port <= a.portEnd; port++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(a.host, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		return NewReceiver(ln, p, 0), nil
	}
	return nil, status.Errorf(codes.ResourceExhausted, "no free transfer port in %d-%d", a.portStart, a.portEnd)
}

// FileSend sends one local file to a receiver and returns when it is done.
func (a *Agent) FileSend(ctx context.Context, req *enginerpc.FileSendRequest) (*enginerpc.FileSendReply, error) {
	p, err := a.r.FilePath(req.GetFromFileName())
	if err != nil {
		return nil, invalid(err)
	}
	if req.GetHost() == "" || req.GetPort() <= 0 || req.GetPort() > 65535 {
		return nil, invalid(fmt.Errorf("host %q port %d: want a host and a port 1-65535", req.GetHost(), req.GetPort()))
	}
	st, err := SendFile(ctx, p, hostPort(req.GetHost(), int(req.GetPort())), SendOptions{
		FastSync: req.GetFastSync(),
		Timeout:  time.Duration(req.GetFileSyncHttpClientTimeout()) * time.Second,
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "send %s: %v", req.GetFromFileName(), err)
	}
	return &enginerpc.FileSendReply{SentBytes: st.Sent, SkippedBytes: st.Skipped}, nil
}

// FilesSync starts pulling files from another replica's sync agent; progress
// is in ReplicaRebuildStatus.
func (a *Agent) FilesSync(_ context.Context, req *enginerpc.FilesSyncRequest) (*enginerpc.Empty, error) {
	host, port, err := ParseReplicaAddress(req.GetFromAddress())
	if err != nil {
		return nil, invalid(err)
	}
	if req.GetToHost() == "" {
		return nil, invalid(errors.New("to_host is empty"))
	}
	for _, fi := range req.GetSyncFileInfoList() {
		if _, err := a.r.FilePath(fi.GetToFileName()); err != nil {
			return nil, invalid(err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rebuild.active {
		return nil, status.Error(codes.FailedPrecondition, "a rebuild is already in progress")
	}
	if a.purge.active {
		return nil, status.Error(codes.FailedPrecondition, "a snapshot purge is in progress")
	}
	a.rebuild = opStatus{active: true, state: StateInProgress, from: req.GetFromAddress()}
	ctx, cancel := context.WithCancel(a.ctx)
	a.cancel = cancel
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		err := a.syncFiles(ctx, net.JoinHostPort(host, strconv.Itoa(port+2)), req)
		a.finishRebuild(err)
	}()
	return &enginerpc.Empty{}, nil
}

func (a *Agent) finishRebuild(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rebuild.active = false
	a.cancel = nil
	if err != nil {
		a.rebuild.state, a.rebuild.err = StateError, err.Error()
		a.log.WithError(err).Error("sync agent: files sync failed")
		return
	}
	a.rebuild.state, a.rebuild.progress = StateComplete, 100
}

func (a *Agent) setRebuildProgress(done, total int64) {
	pct := int32(99)
	if total > 0 && done < total {
		pct = int32(done * 100 / total)
	}
	a.mu.Lock()
	a.rebuild.progress = pct
	a.mu.Unlock()
}

// syncFiles pulls each file: a receiver here, FileSend on the source agent.
func (a *Agent) syncFiles(ctx context.Context, sourceAgent string, req *enginerpc.FilesSyncRequest) error {
	conn, err := grpc.NewClient(sourceAgent, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	src := enginerpc.NewSyncAgentServiceClient(conn)
	var total, done int64
	for _, fi := range req.GetSyncFileInfoList() {
		total += max(fi.GetActualSize(), 1)
	}
	for _, fi := range req.GetSyncFileInfoList() {
		base := done // the progress callback must not read done while this loop writes it
		if err := a.pullFile(ctx, src, req, fi, func(n int64) { a.setRebuildProgress(base+n, total) }); err != nil {
			return err
		}
		done += max(fi.GetActualSize(), 1)
		a.setRebuildProgress(done, total)
	}
	return nil
}

func (a *Agent) pullFile(ctx context.Context, src enginerpc.SyncAgentServiceClient, req *enginerpc.FilesSyncRequest,
	fi *enginerpc.SyncFileInfo, progress func(int64)) error {
	recv, err := a.launch(fi.GetToFileName())
	if err != nil {
		return err
	}
	defer recv.Close()
	stopWatch, watchDone := make(chan struct{}), make(chan struct{})
	defer func() { close(stopWatch); <-watchDone }() // no progress report after the file is done
	go func() {
		defer close(watchDone)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-t.C:
				progress(recv.Processed())
			}
		}
	}()
	_, err = src.FileSend(ctx, &enginerpc.FileSendRequest{
		FromFileName: fi.GetFromFileName(), Host: req.GetToHost(), Port: int32(recv.Port()),
		FastSync: req.GetFastSync(), FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout(),
	})
	if err != nil {
		return fmt.Errorf("sync %s from %s: %w", fi.GetFromFileName(), req.GetFromAddress(), err)
	}
	select {
	case <-recv.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := recv.Err(); err != nil {
		return fmt.Errorf("receive %s: %w", fi.GetToFileName(), err)
	}
	return nil
}

// ReplicaRebuildStatus reports the last or running FilesSync.
func (a *Agent) ReplicaRebuildStatus(context.Context, *enginerpc.Empty) (*enginerpc.SyncReplicaRebuildStatus, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.rebuild
	return &enginerpc.SyncReplicaRebuildStatus{IsRebuilding: st.active, Error: st.err, Progress: st.progress,
		State: st.state, FromReplicaAddress: st.from}, nil
}

// SnapshotPurge starts purging the snapshots marked removed.
func (a *Agent) SnapshotPurge(context.Context, *enginerpc.Empty) (*enginerpc.Empty, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.purge.active {
		return nil, status.Error(codes.FailedPrecondition, "a snapshot purge is already in progress")
	}
	if a.rebuild.active {
		return nil, status.Error(codes.FailedPrecondition, "a rebuild is in progress")
	}
	a.purge = opStatus{active: true, state: StateInProgress}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		err := a.r.Purge(a.ctx, func(_ string, done, total int64) {
			pct := int32(99)
			if total > 0 && done < total {
				pct = int32(done * 100 / total)
			}
			a.mu.Lock()
			a.purge.progress = pct
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
	}()
	return &enginerpc.Empty{}, nil
}

// SnapshotPurgeStatus reports the last or running purge.
func (a *Agent) SnapshotPurgeStatus(context.Context, *enginerpc.Empty) (*enginerpc.SyncSnapshotPurgeStatus, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.purge
	return &enginerpc.SyncSnapshotPurgeStatus{IsPurging: st.active, Error: st.err, Progress: st.progress, State: st.state}, nil
}

// Reset cancels a running files sync and clears the finished statuses.
func (a *Agent) Reset(context.Context, *enginerpc.Empty) (*enginerpc.Empty, error) {
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
	return &enginerpc.Empty{}, nil
}

// ParseReplicaAddress splits a replica address "tcp://HOST:P" (or "HOST:P")
// into host and its first port P.
func ParseReplicaAddress(addr string) (string, int, error) {
	hp := strings.TrimPrefix(addr, "tcp://")
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, fmt.Errorf("replica address %q: %w (want tcp://HOST:PORT)", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port <= 0 || port > 65535-9 {
		return "", 0, fmt.Errorf("replica address %q: port %q must be 1..65526", addr, ps)
	}
	if host == "" {
		return "", 0, fmt.Errorf("replica address %q: empty host", addr)
	}
	return host, port, nil
}

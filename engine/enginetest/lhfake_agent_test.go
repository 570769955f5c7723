package enginetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// lhAgent is the Longhorn-shaped replica's sync agent (longhorn-engine-wire.md
// §3.3): FileSend runs the fake's ssync sender (directIO unless .meta),
// ReceiverLaunch the fake's receiver, FilesSync pulls every file from the
// sources' agents and returns when done, SnapshotPurge runs in the
// background.
type lhAgent struct {
	enginerpc.UnimplementedSyncAgentServiceServer
	r                  *lhReplica
	portStart, portEnd int

	mu                      sync.Mutex
	rebuilding, purging     bool
	rebuildErr, purgeErr    string
	rebuildState, purgeDone string
	from                    []string
}

func (a *lhAgent) ReceiverLaunch(_ context.Context, req *enginerpc.ReceiverLaunchRequest) (*enginerpc.ReceiverLaunchResponse, error) {
	a.r.note("ReceiverLaunch")
	rc, err := a.launch(req.GetToFileName())
	if err != nil {
		return nil, plain(err)
	}
	return &enginerpc.ReceiverLaunchResponse{Port: int32(rc.port())}, nil
}

func (a *lhAgent) launch(name string) (*lhReceiver, error) {
	path, err := a.r.filePath(name)
	if err != nil {
		return nil, err
	}
	for p := a.portStart; p <= a.portEnd; p++ {
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			return startLHReceiver(ln, path), nil
		}
	}
	return nil, errors.New("out of ports")
}

func (a *lhAgent) FileSend(_ context.Context, req *enginerpc.FileSendRequest) (*emptypb.Empty, error) {
	a.r.note("FileSend")
	path, err := a.r.filePath(req.GetFromFileName())
	if err != nil {
		return nil, plain(err)
	}
	timeout := time.Duration(max(req.GetFileSyncHttpClientTimeout(), 5)) * time.Second
	hp := net.JoinHostPort(req.GetHost(), strconv.Itoa(int(req.GetPort())))
	if err := lhSend(path, hp, !strings.HasSuffix(path, ".meta"), req.GetFastSync(), timeout); err != nil {
		return nil, plain(err)
	}
	return &emptypb.Empty{}, nil
}

func (a *lhAgent) FilesSync(ctx context.Context, req *enginerpc.FilesSyncRequest) (*emptypb.Empty, error) {
	a.r.note("FilesSync")
	var sources []string
	for s := range req.GetFromAddressMap() {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	if len(sources) == 0 && req.GetFromAddress() != "" {
		sources = []string{req.GetFromAddress()}
	}
	a.mu.Lock()
	if a.rebuilding || a.purging || len(sources) == 0 {
		a.mu.Unlock()
		return nil, plain(fmt.Errorf("cannot sync files: rebuilding %v, purging %v, %d sources", a.rebuilding, a.purging, len(sources)))
	}
	a.rebuilding, a.rebuildState, a.rebuildErr, a.from = true, "in_progress", "", sources
	a.mu.Unlock()
	err := a.syncFiles(ctx, sources, req)
	a.mu.Lock()
	a.rebuilding, a.rebuildState = false, "complete"
	if err != nil {
		a.rebuildState, a.rebuildErr = "error", err.Error()
	}
	a.mu.Unlock()
	if err != nil {
		return nil, plain(err)
	}
	return &emptypb.Empty{}, nil
}

func (a *lhAgent) syncFiles(ctx context.Context, sources []string, req *enginerpc.FilesSyncRequest) error {
	for i, fi := range req.GetSyncFileInfoList() {
		src := strings.TrimPrefix(sources[i%len(sources)], "tcp://")
		host, port, err := net.SplitHostPort(src)
		if err != nil {
			return err
		}
		p, _ := strconv.Atoi(port)
		conn, err := grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(p+2)), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		rc, err := a.launch(fi.GetToFileName())
		if err == nil {
			_, err = enginerpc.NewSyncAgentServiceClient(conn).FileSend(ctx, &enginerpc.FileSendRequest{
				FromFileName: fi.GetFromFileName(), Host: req.GetToHost(), Port: int32(rc.port()),
				FastSync: req.GetFastSync(), FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout()})
		}
		conn.Close()
		if err == nil {
			select {
			case err = <-rc.done:
			case <-time.After(time.Minute):
				err = errors.New("receiver did not finish")
			}
		}
		if err != nil {
			return fmt.Errorf("sync %s from %s: %w", fi.GetFromFileName(), src, err)
		}
	}
	return nil
}

func (a *lhAgent) ReplicaRebuildStatus(context.Context, *emptypb.Empty) (*enginerpc.ReplicaRebuildStatusResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := &enginerpc.ReplicaRebuildStatusResponse{IsRebuilding: a.rebuilding, State: a.rebuildState, Error: a.rebuildErr,
		FromReplicaAddressList: a.from}
	if len(a.from) > 0 {
		out.FromReplicaAddress = a.from[0]
	}
	return out, nil
}

func (a *lhAgent) SnapshotPurge(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	a.r.note("SnapshotPurge")
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.purging {
		return nil, plain(errors.New("replica is already purging snapshots"))
	}
	st := a.r.store()
	if st == nil {
		return nil, plain(errors.New("replica is closed"))
	}
	a.purging, a.purgeDone, a.purgeErr = true, "in_progress", ""
	go func() {
		err := st.Purge(context.Background(), nil)
		a.mu.Lock()
		defer a.mu.Unlock()
		a.purging, a.purgeDone = false, "complete"
		if err != nil {
			a.purgeDone, a.purgeErr = "error", err.Error()
		}
	}()
	return &emptypb.Empty{}, nil
}

func (a *lhAgent) SnapshotPurgeStatus(context.Context, *emptypb.Empty) (*enginerpc.SnapshotPurgeStatusResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return &enginerpc.SnapshotPurgeStatusResponse{IsPurging: a.purging, State: a.purgeDone, Error: a.purgeErr,
		Progress: map[bool]int32{true: 50, false: 100}[a.purging]}, nil
}

func (a *lhAgent) RestoreStatus(context.Context, *emptypb.Empty) (*enginerpc.RestoreStatusResponse, error) {
	return &enginerpc.RestoreStatusResponse{}, nil
}

package syncagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// Cloner is what snapshot clone needs from the replica, besides Replica.
type Cloner interface {
	// SnapshotLayers returns the layer files that make up the volume as of
	// snapshot name (paths, oldest first, backing file excluded) and the
	// volume size in bytes. NotFound-like errors for an unknown snapshot.
	SnapshotLayers(name string) ([]string, int64, error)
	// HasDisk reports whether the replica has the disk file.
	HasDisk(file string) bool
	// FinishClone adopts a received snapshot file: writes its .meta,
	// reloads the replica and reverts it to the snapshot.
	FinishClone(name string) error
}

// VolumeExport sends the flattened content of a snapshot to a receiver.
func (a *Agent) VolumeExport(ctx context.Context, req *enginerpc.VolumeExportRequest) (*enginerpc.FileSendReply, error) {
	cl, ok := a.r.(Cloner)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this replica cannot export snapshots")
	}
	if req.GetHost() == "" || req.GetPort() <= 0 || req.GetPort() > 65535 {
		return nil, invalid(fmt.Errorf("host %q port %d: want a host and a port 1-65535", req.GetHost(), req.GetPort()))
	}
	layers, size, err := cl.SnapshotLayers(req.GetSnapshotName())
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s: %v", req.GetSnapshotName(), err)
	}
	st, err := SendLayers(ctx, layers, size, hostPort(req.GetHost(), int(req.GetPort())), SendOptions{
		Timeout: time.Duration(req.GetFileSyncHttpClientTimeout()) * time.Second})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "export %s: %v", req.GetSnapshotName(), err)
	}
	return &enginerpc.FileSendReply{SentBytes: st.Sent}, nil
}

// SnapshotClone starts pulling a snapshot of another volume into this replica.
func (a *Agent) SnapshotClone(_ context.Context, req *enginerpc.SyncSnapshotCloneRequest) (*enginerpc.Empty, error) {
	cl, ok := a.r.(Cloner)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this replica cannot clone snapshots")
	}
	host, port, err := ParseReplicaAddress(req.GetFromAddress())
	if err != nil {
		return nil, invalid(err)
	}
	if req.GetToHost() == "" {
		return nil, invalid(errors.New("to_host is empty"))
	}
	file := "volume-snap-" + req.GetSnapshotName() + ".img"
	if _, err := a.r.FilePath(file); err != nil {
		return nil, invalid(err)
	}
	if cl.HasDisk(file) {
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %s already exists in this replica", req.GetSnapshotName())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.clone.active || a.rebuild.active || a.purge.active {
		return nil, status.Error(codes.FailedPrecondition, "a clone, rebuild or purge is in progress")
	}
	a.clone = opStatus{active: true, state: StateInProgress, from: req.GetFromAddress(), name: req.GetSnapshotName()}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		err := a.cloneFrom(a.ctx, net.JoinHostPort(host, strconv.Itoa(port+2)), file, req, cl)
		a.mu.Lock()
		defer a.mu.Unlock()
		a.clone.active = false
		if err != nil {
			a.clone.state, a.clone.err = StateError, err.Error()
			a.log.WithError(err).Error("sync agent: snapshot clone failed")
			return
		}
		a.clone.state, a.clone.progress = StateComplete, 100
	}()
	return &enginerpc.Empty{}, nil
}

func (a *Agent) cloneFrom(ctx context.Context, sourceAgent, file string, req *enginerpc.SyncSnapshotCloneRequest, cl Cloner) error {
	conn, err := grpc.NewClient(sourceAgent, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	recv, err := a.launch(file)
	if err != nil {
		return err
	}
	defer recv.Close()
	_, err = enginerpc.NewSyncAgentServiceClient(conn).VolumeExport(ctx, &enginerpc.VolumeExportRequest{
		SnapshotName: req.GetSnapshotName(), Host: req.GetToHost(), Port: int32(recv.Port()),
		ExportBackingImageIfExist: req.GetExportBackingImageIfExist(),
		FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout()})
	if err != nil {
		return fmt.Errorf("export %s from %s: %w", req.GetSnapshotName(), req.GetFromAddress(), err)
	}
	select {
	case <-recv.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := recv.Err(); err != nil {
		return fmt.Errorf("receive %s: %w", file, err)
	}
	return cl.FinishClone(req.GetSnapshotName())
}

// SnapshotCloneStatus reports the last or running clone.
func (a *Agent) SnapshotCloneStatus(context.Context, *enginerpc.Empty) (*enginerpc.SyncSnapshotCloneStatus, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.clone
	return &enginerpc.SyncSnapshotCloneStatus{IsCloning: st.active, Error: st.err, Progress: st.progress, State: st.state,
		FromReplicaAddress: st.from, SnapshotName: st.name}, nil
}

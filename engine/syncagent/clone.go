package syncagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/rpcmeta"
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

// VolumeExport sends the flattened content of a snapshot (snapshot_file_name
// is the bare snapshot name) to a receiver, with directIO and without the
// fast path (Longhorn's VolumeExport).
func (a *Agent) VolumeExport(ctx context.Context, req *enginerpc.VolumeExportRequest) (*emptypb.Empty, error) {
	cl, ok := a.r.(Cloner)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this replica cannot export snapshots")
	}
	if req.GetHost() == "" || req.GetPort() <= 0 || req.GetPort() > 65535 {
		return nil, invalid(fmt.Errorf("host %q port %d: want a host and a port 1-65535", req.GetHost(), req.GetPort()))
	}
	layers, size, err := cl.SnapshotLayers(req.GetSnapshotFileName())
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s: %v", req.GetSnapshotFileName(), err)
	}
	_, err = SendLayers(ctx, layers, size, hostPort(req.GetHost(), int(req.GetPort())), SendOptions{DirectIO: true,
		Timeout: time.Duration(req.GetFileSyncHttpClientTimeout()) * time.Second})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "export %s: %v", req.GetSnapshotFileName(), err)
	}
	return &emptypb.Empty{}, nil
}

// SnapshotClone starts pulling snapshot snapshot_file_name (a bare name) of
// another volume into this replica; SnapshotCloneStatus follows it.
func (a *Agent) SnapshotClone(_ context.Context, req *enginerpc.SnapshotCloneRequest) (*emptypb.Empty, error) {
	cl, ok := a.r.(Cloner)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this replica cannot clone snapshots")
	}
	if _, _, err := ParseReplicaAddress(req.GetFromAddress()); err != nil {
		return nil, invalid(err)
	}
	if req.GetToHost() == "" {
		return nil, invalid(errors.New("to_host is empty"))
	}
	file := "volume-snap-" + req.GetSnapshotFileName() + ".img"
	if _, err := a.r.FilePath(file); err != nil {
		return nil, invalid(err)
	}
	if cl.HasDisk(file) {
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %s already exists in this replica", req.GetSnapshotFileName())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.clone.active || a.rebuild.active || a.purge.active {
		return nil, status.Error(codes.FailedPrecondition, "a clone, rebuild or purge is in progress")
	}
	a.clone = opStatus{active: true, state: StateInProgress, from: []string{req.GetFromAddress()}, name: req.GetSnapshotFileName()}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		err := a.cloneFrom(a.ctx, file, req, cl)
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
	return &emptypb.Empty{}, nil
}

func (a *Agent) cloneFrom(ctx context.Context, file string, req *enginerpc.SnapshotCloneRequest, cl Cloner) error {
	conn, agent, err := a.dialAgent(req.GetFromAddress())
	if err != nil {
		return err
	}
	defer conn.Close()
	recv, err := a.launch(file)
	if err != nil {
		return err
	}
	defer recv.Close()
	octx := rpcmeta.WithIdentity(ctx, req.GetFromVolumeName(), "")
	_, err = agent.VolumeExport(octx, &enginerpc.VolumeExportRequest{
		SnapshotFileName: req.GetSnapshotFileName(), Host: req.GetToHost(), Port: int32(recv.Port()),
		ExportBackingImageIfExist: req.GetExportBackingImageIfExist(),
		FileSyncHttpClientTimeout: req.GetFileSyncHttpClientTimeout()})
	if err != nil {
		return fmt.Errorf("export %s from %s: %w", req.GetSnapshotFileName(), req.GetFromAddress(), err)
	}
	select {
	case <-recv.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := recv.Err(); err != nil {
		return fmt.Errorf("receive %s: %w", file, err)
	}
	return cl.FinishClone(req.GetSnapshotFileName())
}

// SnapshotCloneStatus reports the last or running clone.
func (a *Agent) SnapshotCloneStatus(context.Context, *emptypb.Empty) (*enginerpc.SnapshotCloneStatusResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.clone
	out := &enginerpc.SnapshotCloneStatusResponse{IsCloning: st.active, Error: st.err, Progress: st.progress, State: st.state,
		SnapshotName: st.name}
	if len(st.from) > 0 {
		out.FromReplicaAddress = st.from[0]
	}
	return out, nil
}

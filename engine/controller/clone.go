package controller

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// CloneRequest is SnapshotClone: copy a snapshot of another volume into this
// one (Longhorn's volume clone from a snapshot).
type CloneRequest struct {
	// FromEngine is the source engine's gRPC HOST:PORT.
	FromEngine string
	FromVolume string
	Snapshot   string
	// ExportBackingImage and FileSyncHTTPClientTimeout (seconds) are passed
	// to the transfer.
	ExportBackingImage        bool
	FileSyncHTTPClientTimeout int
}

// SnapshotClone starts copying snapshot req.Snapshot of the source volume
// into every RW replica of this one, each of which then reverts to it. The
// frontend must be down and no replica rebuilding. Progress in CloneStatus.
func (c *Controller) SnapshotClone(ctx context.Context, req CloneRequest) error {
	if req.FromEngine == "" || req.Snapshot == "" {
		return fmt.Errorf("%w: source engine address and snapshot name are required", ErrInvalid)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.frontendUp() {
		return fmt.Errorf("%w: the frontend is up; clone into a volume in maintenance mode", ErrPrecondition)
	}
	if len(c.targets(ModeWO)) > 0 {
		return fmt.Errorf("%w: cannot clone while a replica is rebuilding", ErrPrecondition)
	}
	src, err := sourceReplica(ctx, req.FromEngine)
	if err != nil {
		return err
	}
	bs := c.targets(ModeRW)
	if len(bs) == 0 {
		return fmt.Errorf("%w: no healthy replica", ErrPrecondition)
	}
	timeout := req.FileSyncHTTPClientTimeout
	if timeout <= 0 {
		timeout = c.opts.FileSyncHTTPClientTimeout
	}
	errs := onEach(ctx, bs, func(ctx context.Context, b *backend) error {
		_, err := b.rem.agent.SnapshotClone(ctx, &enginerpc.SnapshotCloneRequest{FromAddress: src, ToHost: b.rem.host,
			SnapshotFileName: req.Snapshot, ExportBackingImageIfExist: req.ExportBackingImage,
			FileSyncHttpClientTimeout: int32(timeout), FromVolumeName: req.FromVolume})
		return err
	})
	return c.settle("clone snapshot "+req.Snapshot, bs, errs)
}

// sourceReplica asks the source engine for one of its RW replicas.
func sourceReplica(ctx context.Context, engine string) (string, error) {
	conn, err := grpc.NewClient(engine, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithNoProxy())
	if err != nil {
		return "", fmt.Errorf("%w: source engine %q: %v", ErrInvalid, engine, err)
	}
	defer conn.Close()
	cctx, cancel := callCtx(ctx)
	defer cancel()
	l, err := enginerpc.NewControllerServiceClient(conn).ReplicaList(cctx, empty)
	if err != nil {
		return "", fmt.Errorf("%w: list replicas of source engine %s: %v", ErrPrecondition, engine, err)
	}
	for _, r := range l.GetReplicas() {
		if r.GetMode() == enginerpc.ReplicaMode_RW {
			return r.GetAddress().GetAddress(), nil
		}
	}
	return "", fmt.Errorf("%w: source engine %s has no RW replica", ErrPrecondition, engine)
}

// CloneStatus reports each RW replica's clone by address.
func (c *Controller) CloneStatus(ctx context.Context) map[string]*enginerpc.SnapshotCloneStatusResponse {
	out := map[string]*enginerpc.SnapshotCloneStatusResponse{}
	for _, b := range c.targets(ModeRW) {
		cctx, cancel := callCtx(ctx)
		st, err := b.rem.agent.SnapshotCloneStatus(cctx, empty)
		cancel()
		if err != nil {
			st = &enginerpc.SnapshotCloneStatusResponse{State: "error", Error: err.Error()}
		}
		out[b.addr] = st
	}
	return out
}

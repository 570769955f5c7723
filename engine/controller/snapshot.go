package controller

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// HeadName is the name `snapshot ls` uses for the volume head.
const HeadName = "volume-head"

const (
	snapPrefix = "volume-snap-"
	headPrefix = "volume-head-"
	imgSuffix  = ".img"
)

// NewUUID returns a random RFC 4122 version 4 UUID, the default snapshot name.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// isRequestError reports whether a replica rejected a request as such (bad
// name, name in use, limit reached): the replica is fine, the request is not.
// Our replicas say so with the gRPC code; a Longhorn replica answers
// codes.Unknown, and the one refusal its controller tells apart is a
// snapshot name in use, by its text.
func isRequestError(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound:
		return true
	case codes.Unknown:
		return snapshotExists.MatchString(status.Convert(err).Message())
	}
	return false
}

// requestError converts a replica's rejection into the controller's errors.
func requestError(err error) error {
	msg := status.Convert(err).Message()
	switch status.Code(err) {
	case codes.Unknown:
		return fmt.Errorf("%w: %s", ErrPrecondition, msg)
	case codes.NotFound:
		return fmt.Errorf("%w: %s", ErrNotFound, msg)
	case codes.FailedPrecondition, codes.AlreadyExists:
		return fmt.Errorf("%w: %s", ErrPrecondition, msg)
	}
	return fmt.Errorf("%w: %s", ErrInvalid, msg)
}

// targets returns the replicas in the given modes.
func (c *Controller) targets(modes ...Mode) []*backend {
	var out []*backend
	for _, b := range c.r.list() {
		m := b.getMode()
		for _, want := range modes {
			if m == want && b.rem != nil {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// onEach runs fn on every backend in parallel and returns the errors by
// backend (nil entries for successes).
func onEach(ctx context.Context, bs []*backend, fn func(ctx context.Context, b *backend) error) []error {
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Add(1)
		go func(i int, b *backend) {
			defer wg.Done()
			cctx, cancel := callCtx(ctx)
			defer cancel()
			errs[i] = fn(cctx, b)
		}(i, b)
	}
	wg.Wait()
	return errs
}

// settle marks ERR the replicas that failed with something other than a
// request error, and returns a request error if any replica reported one, or
// an error when no RW replica succeeded.
func (c *Controller) settle(op string, bs []*backend, errs []error) error {
	var reqErr error
	okRW := 0
	for i, err := range errs {
		switch {
		case err == nil:
			if bs[i].getMode() == ModeRW {
				okRW++
			}
		case isRequestError(err):
			if reqErr == nil {
				reqErr = requestError(err)
			}
		default:
			c.r.markERR(bs[i], fmt.Errorf("%s: %w", op, err))
		}
	}
	if reqErr != nil {
		return fmt.Errorf("%s: %w", op, reqErr)
	}
	if okRW == 0 {
		return fmt.Errorf("%w: %s failed on every RW replica", ErrPrecondition, op)
	}
	return nil
}

// Snapshot takes a snapshot with the same name and creation time on every RW
// and WO replica, with no I/O in flight. name "" picks a UUID; it returns the name.
func (c *Controller) Snapshot(ctx context.Context, name string, labels map[string]string) (string, error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if name == "" {
		name = NewUUID()
	}
	return name, c.snapshotLocked(ctx, name, true, labels)
}

// snapshotLocked snapshots every RW and WO replica; caller holds opMu.
func (c *Controller) snapshotLocked(ctx context.Context, name string, userCreated bool, labels map[string]string) error {
	created := time.Now().UTC().Format(time.RFC3339)
	c.writeBack()
	c.r.ioMu.Lock()
	defer c.r.ioMu.Unlock()
	if snapshotHeld != nil {
		snapshotHeld()
	}
	bs := c.targets(ModeRW, ModeWO)
	if len(bs) == 0 {
		return fmt.Errorf("%w: no healthy replica", ErrPrecondition)
	}
	errs := onEach(ctx, bs, func(ctx context.Context, b *backend) error {
		_, err := b.rem.ctl.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{
			Name: name, UserCreated: userCreated, Created: created, Labels: labels})
		return err
	})
	return c.settle("snapshot "+name, bs, errs)
}

// writeBack flushes the replicas (each fdatasyncs its head) before a
// snapshot takes ioMu exclusively: the snapshot's own fdatasync, which runs
// with the volume's I/O held, then only covers what was written in
// between, so the clients stall for that instead of for the write-back of
// every dirty page (300-380 ms at the start of the bench's 1 GiB rebuild).
// As any flush, it marks a replica that fails it ERR; with no replica
// there is nothing to do and the snapshot says why.
func (c *Controller) writeBack() { _ = c.r.Flush() }

// snapshotHeld, when set (tests only), runs as soon as a snapshot holds the
// volume's I/O.
var snapshotHeld func()

// Revert makes every RW replica start over from snapshot name. Longhorn's
// rules: the frontend must be down and no replica may be rebuilding.
func (c *Controller) Revert(ctx context.Context, name string) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if name == "" {
		return fmt.Errorf("%w: snapshot name is empty", ErrInvalid)
	}
	if c.frontendUp() {
		return fmt.Errorf("%w: the frontend is up; shut it down before a revert", ErrPrecondition)
	}
	if len(c.targets(ModeWO)) > 0 {
		return fmt.Errorf("%w: cannot revert while a replica is rebuilding", ErrPrecondition)
	}
	created := time.Now().UTC().Format(time.RFC3339)
	c.r.ioMu.Lock()
	defer c.r.ioMu.Unlock()
	bs := c.targets(ModeRW)
	if len(bs) == 0 {
		return fmt.Errorf("%w: no healthy replica", ErrPrecondition)
	}
	file := snapshotFile(name)
	errs := onEach(ctx, bs, func(ctx context.Context, b *backend) error {
		_, err := b.rem.ctl.ReplicaRevert(ctx, &enginerpc.ReplicaRevertRequest{Name: file, Created: created})
		return err
	})
	return c.settle("revert to "+name, bs, errs)
}

// SnapshotInfo is one layer as `snapshot ls/info` shows it; names are
// snapshot names ("volume-head" for the head).
type SnapshotInfo struct {
	Name        string
	Parent      string
	Children    map[string]bool
	Removed     bool
	UserCreated bool
	Created     string
	Size        int64
	Labels      map[string]string
}

// snapshotFile is the disk file name of a snapshot given by name or file
// name: Longhorn's ReplicaRevert takes the file name.
func snapshotFile(name string) string {
	if strings.HasPrefix(name, snapPrefix) && strings.HasSuffix(name, imgSuffix) {
		return name
	}
	return snapPrefix + name + imgSuffix
}

// DiskToSnapshotName turns a disk file name into the name `snapshot ls`
// shows: volume-snap-X.img -> X, volume-head-NNN.img -> volume-head.
func DiskToSnapshotName(disk string) string {
	if strings.HasPrefix(disk, headPrefix) && strings.HasSuffix(disk, imgSuffix) {
		return HeadName
	}
	if strings.HasPrefix(disk, snapPrefix) && strings.HasSuffix(disk, imgSuffix) {
		return strings.TrimSuffix(strings.TrimPrefix(disk, snapPrefix), imgSuffix)
	}
	return disk
}

// Snapshots lists the layers of one RW replica (as Longhorn's `snapshot ls`).
func (c *Controller) Snapshots(ctx context.Context) (map[string]SnapshotInfo, error) {
	bs := c.targets(ModeRW)
	if len(bs) == 0 {
		return nil, fmt.Errorf("%w: no healthy replica", ErrPrecondition)
	}
	var lastErr error
	for _, b := range bs {
		info, err := b.rem.get(ctx)
		if err != nil {
			lastErr = err
			continue
		}
		return snapshotsOf(info), nil
	}
	return nil, fmt.Errorf("list snapshots: %w", lastErr)
}

func snapshotsOf(info *enginerpc.Replica) map[string]SnapshotInfo {
	out := map[string]SnapshotInfo{}
	for file, d := range info.GetDisks() {
		s := SnapshotInfo{Name: DiskToSnapshotName(file), Removed: d.GetRemoved(), UserCreated: d.GetUserCreated(),
			Created: d.GetCreated(), Size: d.SizeBytes(), Labels: d.GetLabels(), Children: map[string]bool{}}
		if d.GetParent() != "" {
			s.Parent = DiskToSnapshotName(d.GetParent())
		}
		for ch := range d.GetChildren() {
			s.Children[DiskToSnapshotName(ch)] = true
		}
		out[s.Name] = s
	}
	return out
}

// RemoveSnapshots marks snapshots removed on every RW replica; a purge
// deletes their data. The head cannot be removed, and nothing is removed
// while a replica is rebuilding (Longhorn's DeleteSnapshot).
func (c *Controller) RemoveSnapshots(ctx context.Context, names []string) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if len(names) == 0 {
		return fmt.Errorf("%w: no snapshot named", ErrInvalid)
	}
	if len(c.targets(ModeWO)) > 0 {
		return fmt.Errorf("%w: cannot remove a snapshot while a replica is rebuilding", ErrPrecondition)
	}
	snaps, err := c.Snapshots(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == HeadName || strings.HasPrefix(n, headPrefix) {
			return fmt.Errorf("%w: cannot remove the volume head", ErrInvalid)
		}
		if _, ok := snaps[DiskToSnapshotName(n)]; !ok {
			return fmt.Errorf("%w: snapshot %s", ErrNotFound, n)
		}
	}
	bs := c.targets(ModeRW)
	for _, n := range names {
		errs := onEach(ctx, bs, func(ctx context.Context, b *backend) error {
			_, err := b.rem.ctl.DiskMarkAsRemoved(ctx, &enginerpc.DiskMarkAsRemovedRequest{Name: n})
			return err
		})
		if err := c.settle("remove snapshot "+n, bs, errs); err != nil {
			return err
		}
	}
	return nil
}

// Purge starts a snapshot purge on every RW replica (not while a replica is
// rebuilding). With skipIfInProgress a purge already running is not an error.
func (c *Controller) Purge(ctx context.Context, skipIfInProgress bool) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if len(c.targets(ModeWO)) > 0 {
		return fmt.Errorf("%w: cannot purge snapshots while a replica is rebuilding", ErrPrecondition)
	}
	bs := c.targets(ModeRW)
	if len(bs) == 0 {
		return fmt.Errorf("%w: no healthy replica", ErrPrecondition)
	}
	if skipIfInProgress {
		for _, st := range c.purgeStatus(ctx, bs) {
			if st.GetIsPurging() {
				return nil
			}
		}
	}
	errs := onEach(ctx, bs, func(ctx context.Context, b *backend) error {
		_, err := b.rem.agent.SnapshotPurge(ctx, empty)
		return err
	})
	var started []*backend
	for i, err := range errs {
		if err == nil {
			started = append(started, bs[i])
		}
	}
	if len(started) > 0 {
		c.watchPurge(started)
	}
	return c.settle("purge", bs, errs)
}

// PurgeStatus reports each RW replica's purge by address.
func (c *Controller) PurgeStatus(ctx context.Context) map[string]*enginerpc.SnapshotPurgeStatusResponse {
	bs := c.targets(ModeRW)
	out := map[string]*enginerpc.SnapshotPurgeStatusResponse{}
	for i, st := range c.purgeStatus(ctx, bs) {
		out[bs[i].addr] = st
	}
	return out
}

func (c *Controller) purgeStatus(ctx context.Context, bs []*backend) []*enginerpc.SnapshotPurgeStatusResponse {
	out := make([]*enginerpc.SnapshotPurgeStatusResponse, len(bs))
	for i, b := range bs {
		cctx, cancel := callCtx(ctx)
		st, err := b.rem.agent.SnapshotPurgeStatus(cctx, empty)
		cancel()
		if err != nil {
			st = &enginerpc.SnapshotPurgeStatusResponse{State: "error", Error: err.Error()}
		}
		out[i] = st
	}
	return out
}

// Package replicasrv is the replica process (`longhorn engine replica DIR`):
// it serves one replica store (engine/replica) as Longhorn's replica does,
// on ten consecutive ports starting at P:
//
//	P        ReplicaService gRPC (this package): state, snapshot, revert, expand, ...
//	P+1      data server (engine/dataconn): read, write, unmap, flush, ping
//	P+2      SyncAgentService gRPC (engine/syncagent): rebuild file sync, purge
//	P+3..P+9 ssync transfer receivers, one per file being received
package replicasrv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// Replica states as Longhorn reports them (types.ReplicaState).
const (
	StateInitial    = "initial"
	StateOpen       = "open"
	StateClosed     = "closed"
	StateDirty      = "dirty"
	StateRebuilding = "rebuilding"
	StateError      = "error"
)

// Server holds the replica store of one directory and implements
// ReplicaService. The store may be closed and reopened through the API; the
// data server and sync agent always act on the current one.
type Server struct {
	enginerpc.UnimplementedReplicaServiceServer

	dir          string
	opts         replica.Options
	instanceName string
	log          logrus.FieldLogger

	// mu serialises control operations; cur is read lock-free by the data path.
	mu  sync.Mutex
	cur atomic.Pointer[replica.Store]
	// dataConns counts the data server's open connections (nil: no data
	// server); set by Start before serving.
	dataConns func() int
}

// NewServer opens the replica in dir, creating one of size bytes when the
// directory holds none and size > 0 (Longhorn's replica command). With size 0
// and no replica the server starts in state "initial" and waits for
// ReplicaCreate.
func NewServer(dir string, size int64, opts replica.Options, instanceName string, log logrus.FieldLogger) (*Server, error) {
	if log == nil {
		log = logrus.StandardLogger()
	}
	s := &Server{dir: dir, opts: opts, instanceName: instanceName, log: log}
	var st *replica.Store
	var err error
	if size > 0 {
		st, err = replica.OpenOrCreate(dir, size, opts)
	} else {
		st, err = replica.Open(dir, opts)
		if errors.Is(err, replica.ErrNotExist) {
			return s, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if size > 0 && st.Size() != size {
		log.WithFields(logrus.Fields{"dir": dir, "size": st.Size(), "requested": size}).
			Warn("replica: existing replica has a different size than --size; serving the existing one")
	}
	s.cur.Store(st)
	return s, nil
}

// Store returns the open store or nil when closed.
func (s *Server) Store() *replica.Store { return s.cur.Load() }

// Close closes the store (a clean close marks volume.meta not dirty).
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.cur.Swap(nil); st != nil {
		return st.Close()
	}
	return nil
}

// grpcErr maps a store error to a gRPC status with the code callers can
// branch on (see replica.proto).
func grpcErr(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Internal
	switch {
	case errors.Is(err, replica.ErrInvalidName), errors.Is(err, replica.ErrUnaligned),
		errors.Is(err, replica.ErrInvalidSize), errors.Is(err, replica.ErrOutOfRange),
		errors.Is(err, replica.ErrShrink), errors.Is(err, replica.ErrInvalidOption):
		code = codes.InvalidArgument
	case errors.Is(err, replica.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, replica.ErrSnapshotExists), errors.Is(err, replica.ErrExists):
		code = codes.AlreadyExists
	case errors.Is(err, replica.ErrClosed), errors.Is(err, replica.ErrNotExist),
		errors.Is(err, replica.ErrSnapshotCountLimit), errors.Is(err, replica.ErrSnapshotSizeLimit),
		errors.Is(err, replica.ErrChainTooLong), errors.Is(err, replica.ErrIsHead),
		errors.Is(err, replica.ErrRemoved), errors.Is(err, replica.ErrNotRemoved),
		errors.Is(err, replica.ErrHasChildren):
		code = codes.FailedPrecondition
	}
	return status.Error(code, err.Error())
}

var errClosed = status.Error(codes.FailedPrecondition, "replica is closed")

// withStore runs fn on the open store under the control lock and returns the
// replica state afterwards.
func (s *Server) withStore(fn func(st *replica.Store) error) (*enginerpc.Replica, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.cur.Load()
	if st == nil {
		return nil, errClosed
	}
	if err := fn(st); err != nil {
		return nil, grpcErr(err)
	}
	return s.replicaLocked(), nil
}

// replicaLocked describes the replica (Longhorn's ptypes.Replica).
func (s *Server) replicaLocked() *enginerpc.Replica {
	st := s.cur.Load()
	r := &enginerpc.Replica{InstanceName: s.instanceName, Dir: s.dir}
	if s.dataConns != nil {
		r.DataConnections = int32(s.dataConns())
	}
	if st == nil {
		r.State = StateInitial
		if m, err := replica.ReadVolumeMeta(s.dir); err == nil {
			r.State, r.Size, r.Head, r.Parent, r.SectorSize = StateClosed, m.Size, m.Head, m.Parent, m.SectorSize
			r.Dirty, r.Rebuilding = m.Dirty, m.Rebuilding
		} else if !errors.Is(err, replica.ErrNotExist) {
			r.State = StateError
		}
		return r
	}
	info := st.Info()
	r.Dirty, r.Rebuilding, r.Head, r.Parent = info.Dirty, info.Rebuilding, info.Head, info.Parent
	r.Size, r.SectorSize, r.BackingFile = info.Size, info.SectorSize, info.BackingFilePath
	r.Chain = info.Chain
	r.RevisionCounter, r.RevisionCounterDisabled = info.RevisionCounter, info.RevisionCounterDisabled
	r.UnmapMarkDiskChainRemoved = info.UnmapMarkSnapChainRemoved
	r.RemainSnapshots = int32(info.SnapshotMaxCount - info.SnapshotCount)
	count, size := st.SnapshotUsage()
	r.SnapshotCountUsage, r.SnapshotSizeUsage = int32(count), size
	switch {
	case info.Rebuilding:
		r.State = StateRebuilding
	case info.Dirty:
		r.State = StateDirty
	default:
		r.State = StateOpen
	}
	if hs, err := st.HeadStat(); err == nil {
		r.LastModifyTime, r.HeadFileSize = hs.ModTime.UnixNano(), hs.Allocated
	}
	r.Disks = map[string]*enginerpc.Disk{}
	for name, d := range st.ListDisks() {
		r.Disks[name] = &enginerpc.Disk{Name: d.Name, Parent: d.Parent, Children: d.Children, Removed: d.Removed,
			UserCreated: d.UserCreated, Created: d.Created, Size: d.Size, Labels: d.Labels}
	}
	return r
}

// ReplicaGet returns the replica state.
func (s *Server) ReplicaGet(context.Context, *enginerpc.Empty) (*enginerpc.Replica, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replicaLocked(), nil
}

// ReplicaCreate creates a replica of size bytes in an empty directory.
func (s *Server) ReplicaCreate(_ context.Context, req *enginerpc.ReplicaCreateRequest) (*enginerpc.Replica, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Load() != nil {
		return nil, status.Error(codes.AlreadyExists, "replica is already open")
	}
	st, err := replica.Create(s.dir, req.GetSize(), s.opts)
	if err != nil {
		return nil, grpcErr(err)
	}
	s.cur.Store(st)
	return s.replicaLocked(), nil
}

// ReplicaDelete closes the replica and removes its files.
func (s *Server) ReplicaDelete(context.Context, *enginerpc.Empty) (*enginerpc.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.cur.Swap(nil)
	if st == nil {
		var err error
		if st, err = replica.Open(s.dir, s.opts); errors.Is(err, replica.ErrNotExist) {
			return &enginerpc.Empty{}, nil
		} else if err != nil {
			return nil, grpcErr(err)
		}
	}
	if err := st.Delete(); err != nil {
		return nil, grpcErr(err)
	}
	return &enginerpc.Empty{}, nil
}

// ReplicaOpen opens a closed replica.
func (s *Server) ReplicaOpen(context.Context, *enginerpc.Empty) (*enginerpc.Replica, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Load() == nil {
		st, err := replica.Open(s.dir, s.opts)
		if err != nil {
			return nil, grpcErr(err)
		}
		s.cur.Store(st)
	}
	return s.replicaLocked(), nil
}

// ReplicaClose closes the replica (the process keeps serving the API).
func (s *Server) ReplicaClose(context.Context, *enginerpc.Empty) (*enginerpc.Replica, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.cur.Swap(nil); st != nil {
		if err := st.Close(); err != nil {
			return nil, grpcErr(err)
		}
	}
	return s.replicaLocked(), nil
}

// ReplicaReload re-reads the directory (after a rebuild replaced files).
func (s *Server) ReplicaReload(context.Context, *enginerpc.Empty) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.Reload() })
}

// ReplicaRevert starts a new head on top of the named snapshot.
func (s *Server) ReplicaRevert(_ context.Context, req *enginerpc.ReplicaRevertRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.Revert(req.GetName(), req.GetCreated()) })
}

// ReplicaSnapshot snapshots the head under the given snapshot name.
func (s *Server) ReplicaSnapshot(_ context.Context, req *enginerpc.ReplicaSnapshotRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error {
		return st.Snapshot(req.GetName(), req.GetUserCreated(), req.GetCreated(), req.GetLabels())
	})
}

// ReplicaExpand grows the replica (never shrinks).
func (s *Server) ReplicaExpand(_ context.Context, req *enginerpc.ReplicaExpandRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.Expand(req.GetSize()) })
}

// DiskRemove deletes a disk that is not the head (rebuild drops extra disks).
func (s *Server) DiskRemove(_ context.Context, req *enginerpc.DiskRemoveRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.RemoveDiffDisk(req.GetName(), req.GetForce()) })
}

// DiskPrepareRemove shows what purging a removed disk would do.
func (s *Server) DiskPrepareRemove(_ context.Context, req *enginerpc.DiskPrepareRemoveRequest) (*enginerpc.DiskPrepareRemoveReply, error) {
	var out []*enginerpc.PrepareRemoveAction
	_, err := s.withStore(func(st *replica.Store) error {
		acts, err := st.PrepareRemoveDisk(req.GetName())
		for _, a := range acts {
			out = append(out, &enginerpc.PrepareRemoveAction{Action: a.Action, Source: a.Source, Target: a.Target})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &enginerpc.DiskPrepareRemoveReply{Operations: out}, nil
}

// DiskMarkAsRemoved marks a snapshot removed (deleted by the next purge).
func (s *Server) DiskMarkAsRemoved(_ context.Context, req *enginerpc.DiskMarkAsRemovedRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.MarkDiskAsRemoved(req.GetName()) })
}

// RebuildingSet sets volume.meta Rebuilding.
func (s *Server) RebuildingSet(_ context.Context, req *enginerpc.RebuildingSetRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.SetRebuilding(req.GetRebuilding()) })
}

// RevisionCounterSet stores the revision counter.
func (s *Server) RevisionCounterSet(_ context.Context, req *enginerpc.RevisionCounterSetRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.SetRevisionCounter(req.GetCounter()) })
}

// UnmapMarkDiskChainRemovedSet changes --unmap-mark-snap-chain-removed.
func (s *Server) UnmapMarkDiskChainRemovedSet(_ context.Context, req *enginerpc.UnmapMarkDiskChainRemovedSetRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error {
		st.SetUnmapMarkSnapChainRemoved(req.GetEnabled())
		return nil
	})
}

// SnapshotMaxCountSet changes snapshot-max-count.
func (s *Server) SnapshotMaxCountSet(_ context.Context, req *enginerpc.SnapshotMaxCountSetRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.SetSnapshotMaxCount(int(req.GetCount())) })
}

// SnapshotMaxSizeSet changes snapshot-max-size.
func (s *Server) SnapshotMaxSizeSet(_ context.Context, req *enginerpc.SnapshotMaxSizeSetRequest) (*enginerpc.Replica, error) {
	return s.withStore(func(st *replica.Store) error { return st.SetSnapshotMaxSize(req.GetSize()) })
}

// errNoStore is returned on the data path while the replica is closed.
var errNoStore = fmt.Errorf("replica: %w", replica.ErrClosed)

// dataHandler serves dataconn requests from the current store.
type dataHandler struct{ s *Server }

func (h dataHandler) store() (*replica.Store, error) {
	if st := h.s.cur.Load(); st != nil {
		return st, nil
	}
	return nil, errNoStore
}

func (h dataHandler) ReadAt(p []byte, off int64) (int, error) {
	st, err := h.store()
	if err != nil {
		return 0, err
	}
	return st.ReadAt(p, off)
}

func (h dataHandler) WriteAt(p []byte, off int64) (int, error) {
	st, err := h.store()
	if err != nil {
		return 0, err
	}
	return st.WriteAt(p, off)
}

func (h dataHandler) UnmapAt(length uint32, off int64) (int, error) {
	st, err := h.store()
	if err != nil {
		return 0, err
	}
	return st.UnmapAt(length, off)
}

func (h dataHandler) Flush() error {
	st, err := h.store()
	if err != nil {
		return err
	}
	return st.Flush()
}

func (h dataHandler) PingResponse() error {
	_, err := h.store()
	return err
}

// syncReplica adapts the server to what the sync agent needs.
type syncReplica struct{ s *Server }

func (r syncReplica) FilePath(name string) (string, error) {
	if err := replica.ValidateFileName(name); err != nil {
		return "", err
	}
	return r.s.dir + string(os.PathSeparator) + name, nil
}

func (r syncReplica) Purge(ctx context.Context, progress func(disk string, done, total int64)) error {
	st := r.s.cur.Load()
	if st == nil {
		return errNoStore
	}
	return st.Purge(ctx, progress)
}

func itoa(n int) string { return strconv.Itoa(n) }

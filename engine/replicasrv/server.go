// Package replicasrv is the replica process (`longhorn engine replica DIR`):
// it serves one replica store (engine/replica) as Longhorn's replica does,
// on ten consecutive ports starting at P:
//
//	P        ptypes.ReplicaService gRPC (this package) and grpc.health.v1
//	P+1      data server (engine/dataconn): read, write, unmap, ping (+ our flush, shared memory)
//	P+2      ptypes.SyncAgentService gRPC (engine/syncagent): rebuild, purge, hash, clone
//	P+3..P+9 ssync transfer receivers, one per file being received
//
// As Longhorn's, the process starts with the replica closed (created first
// when the directory holds none and --size is given); an engine opens it
// with ReplicaOpen and closes it when it lets go.
package replicasrv

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/dataconn"
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
// ReplicaService. The store is opened and closed through the API; the data
// server and sync agent always act on the current one.
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
	// extensions are the dataconn extensions the data server serves.
	extensions []string
	// directRead: the data server gives read views (ExtensionDirectRead).
	directRead bool
}

// NewServer serves the replica in dir, closed. When the directory holds no
// replica and size > 0 it creates one of size bytes first (Longhorn's
// `replica --size`); with size 0 and no replica the server starts in state
// "initial" and waits for ReplicaCreate.
func NewServer(dir string, size int64, opts replica.Options, instanceName string, log logrus.FieldLogger) (*Server, error) {
	if log == nil {
		log = logrus.StandardLogger()
	}
	s := &Server{dir: dir, opts: opts, instanceName: instanceName, log: log,
		extensions: []string{dataconn.ExtensionFlush, dataconn.ExtensionLocal, dataconn.ExtensionShm}}
	m, err := replica.ReadVolumeMeta(dir)
	switch {
	case err == nil:
		if size > 0 && m.Size != size {
			log.WithFields(logrus.Fields{"dir": dir, "size": m.Size, "requested": size}).
				Warn("replica: existing replica has a different size than --size; serving the existing one")
		}
		return s, nil
	case !errors.Is(err, replica.ErrNotExist) || size == 0:
		return s, nil
	}
	st, err := replica.Create(dir, size, opts)
	if err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
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
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Internal
	msg := err.Error()
	switch {
	case errors.Is(err, replica.ErrInvalidName),
		errors.Is(err, replica.ErrInvalidSize), errors.Is(err, replica.ErrOutOfRange),
		errors.Is(err, replica.ErrShrink), errors.Is(err, replica.ErrInvalidOption):
		code = codes.InvalidArgument
	case errors.Is(err, replica.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, replica.ErrSnapshotExists), errors.Is(err, replica.ErrExists):
		code = codes.AlreadyExists
	case errors.Is(err, replica.ErrSnapshotCountLimit), errors.Is(err, replica.ErrChainTooLong):
		// Longhorn's text when no snapshot is left.
		code, msg = codes.FailedPrecondition, "too many active disks: "+msg
	case errors.Is(err, replica.ErrClosed), errors.Is(err, replica.ErrNotExist),
		errors.Is(err, replica.ErrSnapshotSizeLimit), errors.Is(err, replica.ErrIsHead),
		errors.Is(err, replica.ErrRemoved), errors.Is(err, replica.ErrNotRemoved),
		errors.Is(err, replica.ErrHasChildren):
		code = codes.FailedPrecondition
	}
	return status.Error(code, msg)
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

// replicaLocked describes the replica (Longhorn's ptypes.Replica; while
// closed only the fields of volume.meta, as Longhorn).
func (s *Server) replicaLocked() *enginerpc.Replica {
	st := s.cur.Load()
	r := &enginerpc.Replica{InstanceName: s.instanceName, Dir: s.dir, Extensions: s.extensions,
		Disks: map[string]*enginerpc.DiskInfo{}}
	if s.dataConns != nil {
		r.DataConnections = int32(s.dataConns())
	}
	if st == nil {
		r.State = StateInitial
		if m, err := replica.ReadVolumeMeta(s.dir); err == nil {
			r.State, r.Size, r.Head, r.Parent, r.SectorSize = StateClosed, decimal(m.Size), m.Head, m.Parent, m.SectorSize
			r.Dirty, r.Rebuilding, r.BackingFile = m.Dirty, m.Rebuilding, m.BackingFilePath
		} else if !errors.Is(err, replica.ErrNotExist) {
			r.State = StateError
		}
		return r
	}
	fillOpen(r, st)
	return r
}

// fillOpen fills r from the open store st.
func fillOpen(r *enginerpc.Replica, st *replica.Store) {
	info := st.Info()
	r.Dirty, r.Rebuilding, r.Head, r.Parent = info.Dirty, info.Rebuilding, info.Head, info.Parent
	r.Size, r.SectorSize, r.BackingFile = decimal(info.Size), info.SectorSize, info.BackingFilePath
	r.Chain = info.Chain
	r.RevisionCounterDisabled = info.RevisionCounterDisabled
	if !info.RevisionCounterDisabled {
		r.RevisionCounter = info.RevisionCounter
	}
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
	for name, d := range st.ListDisks() {
		r.Disks[name] = &enginerpc.DiskInfo{Name: d.Name, Parent: d.Parent, Children: d.Children, Removed: d.Removed,
			UserCreated: d.UserCreated, Created: d.Created, Size: decimal(d.Size), Labels: d.Labels}
	}
	r.SnapshotCountTotal = int32(len(r.Disks))
}

func decimal(n int64) string { return enginerpc.FormatSize(n) }

package replicasrv

import (
	"context"
	"encoding/json"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// The ReplicaService methods, with Longhorn's requests and responses
// (engine/rpc/replica.proto).

// ReplicaGet returns the replica state.
func (s *Server) ReplicaGet(context.Context, *emptypb.Empty) (*enginerpc.ReplicaGetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &enginerpc.ReplicaGetResponse{Replica: s.replicaLocked()}, nil
}

// ReplicaCreate creates a replica of size bytes (decimal) in state initial
// and leaves it closed; in any other state it does nothing (Longhorn).
func (s *Server) ReplicaCreate(_ context.Context, req *enginerpc.ReplicaCreateRequest) (*enginerpc.ReplicaCreateResponse, error) {
	size, err := enginerpc.ParseSize("size", req.GetSize())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replicaLocked().GetState() == StateInitial {
		st, err := replica.Create(s.dir, size, s.opts)
		if err != nil {
			return nil, grpcErr(err)
		}
		if err := st.Close(); err != nil {
			return nil, grpcErr(err)
		}
	}
	return &enginerpc.ReplicaCreateResponse{Replica: s.replicaLocked()}, nil
}

// ReplicaDelete removes the replica's files (the replica stays served, in
// state initial); a replica that does not exist is a no-op.
func (s *Server) ReplicaDelete(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.cur.Swap(nil)
	if st == nil {
		var err error
		if st, err = replica.Open(s.dir, s.opts); errors.Is(err, replica.ErrNotExist) {
			return &emptypb.Empty{}, nil
		} else if err != nil {
			return nil, grpcErr(err)
		}
	}
	if err := st.Delete(); err != nil {
		return nil, grpcErr(err)
	}
	return &emptypb.Empty{}, nil
}

// ReplicaOpen opens a closed replica; an open one is refused with
// Longhorn's "replica is already open".
func (s *Server) ReplicaOpen(context.Context, *enginerpc.ReplicaOpenRequest) (*enginerpc.ReplicaOpenResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Load() != nil {
		return nil, status.Error(codes.FailedPrecondition, "replica is already open")
	}
	st, err := replica.Open(s.dir, s.opts)
	if err != nil {
		return nil, grpcErr(err)
	}
	s.cur.Store(st)
	return &enginerpc.ReplicaOpenResponse{Replica: s.replicaLocked()}, nil
}

// ReplicaClose closes the replica (the process keeps serving the API); a
// closed replica is left as it is.
func (s *Server) ReplicaClose(context.Context, *emptypb.Empty) (*enginerpc.ReplicaCloseResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.cur.Swap(nil); st != nil {
		if err := st.Close(); err != nil {
			return nil, grpcErr(err)
		}
	}
	return &enginerpc.ReplicaCloseResponse{Replica: s.replicaLocked()}, nil
}

// ReplicaReload re-reads the directory (after a rebuild replaced files).
func (s *Server) ReplicaReload(context.Context, *emptypb.Empty) (*enginerpc.ReplicaReloadResponse, error) {
	r, err := s.withStore(func(st *replica.Store) error { return st.Reload() })
	return &enginerpc.ReplicaReloadResponse{Replica: r}, err
}

// ReplicaRevert starts a new head on top of the snapshot (its disk file
// name, as Longhorn sends it, or its bare name).
func (s *Server) ReplicaRevert(_ context.Context, req *enginerpc.ReplicaRevertRequest) (*enginerpc.ReplicaRevertResponse, error) {
	if req.GetName() == "" || req.GetCreated() == "" {
		return nil, status.Error(codes.InvalidArgument, "name and created are required")
	}
	r, err := s.withStore(func(st *replica.Store) error { return st.Revert(req.GetName(), req.GetCreated()) })
	return &enginerpc.ReplicaRevertResponse{Replica: r}, err
}

// ReplicaSnapshot snapshots the head under the given snapshot name. A name
// in use fails with Longhorn's "snapshot volume-snap-NAME.img is already
// existing", which Longhorn's controller recognises.
func (s *Server) ReplicaSnapshot(_ context.Context, req *enginerpc.ReplicaSnapshotRequest) (*enginerpc.ReplicaSnapshotResponse, error) {
	if req.GetName() == "" || req.GetCreated() == "" {
		return nil, status.Error(codes.InvalidArgument, "name and created are required")
	}
	r, err := s.withStore(func(st *replica.Store) error {
		err := st.Snapshot(req.GetName(), req.GetUserCreated(), req.GetCreated(), req.GetLabels())
		if errors.Is(err, replica.ErrSnapshotExists) {
			return status.Errorf(codes.AlreadyExists, "snapshot %s is already existing", replica.SnapshotFileName(req.GetName()))
		}
		return err
	})
	return &enginerpc.ReplicaSnapshotResponse{Replica: r}, err
}

// Result codes of Longhorn's ReplicaExpand error body (pkg/types/error.go)
// that this replica produces; Longhorn also has ResultUnknown and
// FunctionFailedRollbackFailed, which make its controller mark the replica
// ERR, as a non-JSON error does.
const (
	expandFailedWithoutRollback   = "FunctionFailedWithoutRollback"
	expandFailedRollbackSucceeded = "FunctionFailedRollbackSucceeded"
)

// expandError is the JSON body of a failed ReplicaExpand (Longhorn's
// types.Error), which Longhorn's controller parses to decide whether the
// replica is still consistent.
type expandError struct {
	Code            string `json:"code"`
	Message         string `json:"message"`
	RollbackMessage string `json:"rollbackMessage"`
}

// ReplicaExpand grows the replica (never shrinks). Errors are
// codes.Internal with Longhorn's JSON body: a refused request changed
// nothing (FunctionFailedWithoutRollback); an I/O failure was rolled back by
// the store (FunctionFailedRollbackSucceeded).
func (s *Server) ReplicaExpand(_ context.Context, req *enginerpc.ReplicaExpandRequest) (*enginerpc.ReplicaExpandResponse, error) {
	r, err := s.withStore(func(st *replica.Store) error { return st.Expand(req.GetSize()) })
	if err != nil {
		code := expandFailedRollbackSucceeded
		if c := status.Code(err); c != codes.Internal && c != codes.Unknown {
			code = expandFailedWithoutRollback
		}
		b, _ := json.Marshal(expandError{Code: code, Message: status.Convert(err).Message()})
		return nil, status.Error(codes.Internal, string(b))
	}
	return &enginerpc.ReplicaExpandResponse{Replica: r}, nil
}

// DiskRemove deletes a disk that is not the head (rebuild drops extra disks).
func (s *Server) DiskRemove(_ context.Context, req *enginerpc.DiskRemoveRequest) (*enginerpc.DiskRemoveResponse, error) {
	r, err := s.withStore(func(st *replica.Store) error { return st.RemoveDiffDisk(req.GetName(), req.GetForce()) })
	return &enginerpc.DiskRemoveResponse{Replica: r}, err
}

// DiskReplace gives source's file (into which target was folded) target's
// name, a step of a purge driven from outside.
func (s *Server) DiskReplace(_ context.Context, req *enginerpc.DiskReplaceRequest) (*enginerpc.DiskReplaceResponse, error) {
	r, err := s.withStore(func(st *replica.Store) error { return st.ReplaceDisk(req.GetTarget(), req.GetSource()) })
	return &enginerpc.DiskReplaceResponse{Replica: r}, err
}

// DiskPrepareRemove shows what purging a removed disk would do.
func (s *Server) DiskPrepareRemove(_ context.Context, req *enginerpc.DiskPrepareRemoveRequest) (*enginerpc.DiskPrepareRemoveResponse, error) {
	out := &enginerpc.DiskPrepareRemoveResponse{}
	_, err := s.withStore(func(st *replica.Store) error {
		acts, err := st.PrepareRemoveDisk(req.GetName())
		for _, a := range acts {
			out.Operations = append(out.Operations, &enginerpc.PrepareRemoveAction{Action: a.Action, Source: a.Source, Target: a.Target})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DiskMarkAsRemoved marks a snapshot removed (deleted by the next purge).
func (s *Server) DiskMarkAsRemoved(_ context.Context, req *enginerpc.DiskMarkAsRemovedRequest) (*enginerpc.DiskMarkAsRemovedResponse, error) {
	r, err := s.withStore(func(st *replica.Store) error { return st.MarkDiskAsRemoved(req.GetName()) })
	return &enginerpc.DiskMarkAsRemovedResponse{Replica: r}, err
}

// RebuildingSet sets volume.meta Rebuilding.
func (s *Server) RebuildingSet(_ context.Context, req *enginerpc.RebuildingSetRequest) (*enginerpc.RebuildingSetResponse, error) {
	r, err := s.withStore(func(st *replica.Store) error { return st.SetRebuilding(req.GetRebuilding()) })
	return &enginerpc.RebuildingSetResponse{Replica: r}, err
}

// RevisionCounterSet stores the revision counter.
func (s *Server) RevisionCounterSet(_ context.Context, req *enginerpc.RevisionCounterSetRequest) (*enginerpc.RevisionCounterSetResponse, error) {
	r, err := s.withStore(func(st *replica.Store) error { return st.SetRevisionCounter(req.GetCounter()) })
	return &enginerpc.RevisionCounterSetResponse{Replica: r}, err
}

// UnmapMarkDiskChainRemovedSet changes --unmap-mark-snap-chain-removed; it
// holds while closed too (the next open takes it).
func (s *Server) UnmapMarkDiskChainRemovedSet(_ context.Context, req *enginerpc.UnmapMarkDiskChainRemovedSetRequest) (*enginerpc.UnmapMarkDiskChainRemovedSetResponse, error) {
	r := s.setOption(func(o *replica.Options) error { o.UnmapMarkSnapChainRemoved = req.GetEnabled(); return nil },
		func(st *replica.Store) error { st.SetUnmapMarkSnapChainRemoved(req.GetEnabled()); return nil })
	return r.unmap()
}

// SnapshotMaxCountSet changes snapshot-max-count.
func (s *Server) SnapshotMaxCountSet(_ context.Context, req *enginerpc.SnapshotMaxCountSetRequest) (*enginerpc.SnapshotMaxCountSetResponse, error) {
	n := int(req.GetCount())
	r := s.setOption(func(o *replica.Options) error { o.SnapshotMaxCount = n; return nil },
		func(st *replica.Store) error { return st.SetSnapshotMaxCount(n) })
	return &enginerpc.SnapshotMaxCountSetResponse{Replica: r.replica}, r.err
}

// SnapshotMaxSizeSet changes snapshot-max-size.
func (s *Server) SnapshotMaxSizeSet(_ context.Context, req *enginerpc.SnapshotMaxSizeSetRequest) (*enginerpc.SnapshotMaxSizeSetResponse, error) {
	n := req.GetSize()
	r := s.setOption(func(o *replica.Options) error { o.SnapshotMaxSize = n; return nil },
		func(st *replica.Store) error { return st.SetSnapshotMaxSize(n) })
	return &enginerpc.SnapshotMaxSizeSetResponse{Replica: r.replica}, r.err
}

type optionResult struct {
	replica *enginerpc.Replica
	err     error
}

func (r optionResult) unmap() (*enginerpc.UnmapMarkDiskChainRemovedSetResponse, error) {
	return &enginerpc.UnmapMarkDiskChainRemovedSetResponse{Replica: r.replica}, r.err
}

// setOption applies a setting to the open store, or only to the options
// the next open uses when closed (Longhorn keeps these flags while closed).
func (s *Server) setOption(opt func(*replica.Options) error, open func(*replica.Store) error) optionResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.cur.Load(); st != nil {
		if err := open(st); err != nil {
			return optionResult{err: grpcErr(err)}
		}
	}
	o := s.opts
	err := opt(&o)
	if err == nil {
		err = o.Validate()
	}
	if err != nil {
		return optionResult{err: grpcErr(err)}
	}
	s.opts = o
	return optionResult{replica: s.replicaLocked()}
}

package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// lhReplica is a Longhorn-shaped replica process, written from
// longhorn-engine-wire.md (§2.4, §3.2, §4, §6) for the mixed replica set
// tests: ptypes.ReplicaService on P with Longhorn's states and texts
// (closed until an engine opens it, calls on a closed replica succeed
// doing nothing, plain errors arrive as codes.Unknown, no extension
// fields), Longhorn's dataconn server on P+1 (types 0-8 only, anything else
// dropped without an answer), and its sync agent on P+2 with the ssync ends
// of lhfake_ssync_test.go. The layered files are kept by engine/replica,
// whose on-disk format is Longhorn's.
type lhReplica struct {
	enginerpc.UnimplementedReplicaServiceServer
	t    *testing.T
	dir  string
	port int
	addr string // tcp://127.0.0.1:P

	mu    sync.Mutex
	st    *replica.Store // nil while closed
	calls map[string]int // methods called, ReplicaService and SyncAgentService

	ctl, sync *grpc.Server
	data      *lhDataServer
	agent     *lhAgent
}

func startLHReplica(t *testing.T, dir string, size int64) *lhReplica {
	t.Helper()
	r := &lhReplica{t: t, dir: dir, calls: map[string]int{}}
	if _, err := replica.ReadVolumeMeta(dir); errors.Is(err, replica.ErrNotExist) {
		st, err := replica.Create(dir, size, replica.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r.port = testutil.FreePortRange(t, 10)
	r.addr = "tcp://127.0.0.1:" + strconv.Itoa(r.port)
	var lns [3]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(r.port+i))
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	r.ctl, r.sync = grpc.NewServer(), grpc.NewServer()
	enginerpc.RegisterReplicaServiceServer(r.ctl, r)
	r.agent = &lhAgent{r: r, portStart: r.port + 3, portEnd: r.port + 9}
	enginerpc.RegisterSyncAgentServiceServer(r.sync, r.agent)
	r.data = &lhDataServer{r: r, ln: lns[1]}
	go func() { _ = r.ctl.Serve(lns[0]) }()
	go r.data.serve()
	go func() { _ = r.sync.Serve(lns[2]) }()
	t.Cleanup(r.stop)
	return r
}

func (r *lhReplica) stop() {
	r.ctl.Stop()
	r.sync.Stop()
	r.data.close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st != nil {
		_ = r.st.Close()
		r.st = nil
	}
}

func (r *lhReplica) count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[method]
}

func (r *lhReplica) note(method string) {
	r.mu.Lock()
	r.calls[method]++
	r.mu.Unlock()
}

// store is the open store or nil.
func (r *lhReplica) store() *replica.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// plain turns an error into what Longhorn's handlers send: codes.Unknown
// with the text.
func plain(err error) error {
	if err == nil {
		return nil
	}
	return status.Error(codes.Unknown, err.Error())
}

// info is Longhorn's getReplica: while closed only the volume.meta fields.
func (r *lhReplica) info() *enginerpc.Replica {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &enginerpc.Replica{Disks: map[string]*enginerpc.DiskInfo{}}
	if r.st == nil {
		m, err := replica.ReadVolumeMeta(r.dir)
		if err != nil {
			out.State = "initial"
			return out
		}
		out.State, out.Size, out.Head, out.Parent, out.SectorSize = "closed", strconv.FormatInt(m.Size, 10), m.Head, m.Parent, 512
		out.Dirty, out.Rebuilding = m.Dirty, m.Rebuilding
		return out
	}
	i := r.st.Info()
	out.Dirty, out.Rebuilding, out.Head, out.Parent = i.Dirty, i.Rebuilding, i.Head, i.Parent
	out.Size, out.SectorSize, out.Chain = strconv.FormatInt(i.Size, 10), 512, i.Chain
	out.RevisionCounter = i.RevisionCounter
	out.State = map[bool]string{true: "dirty", false: "open"}[i.Dirty]
	if i.Rebuilding {
		out.State = "rebuilding"
	}
	for name, d := range r.st.ListDisks() {
		out.Disks[name] = &enginerpc.DiskInfo{Name: d.Name, Parent: d.Parent, Children: d.Children, Removed: d.Removed,
			UserCreated: d.UserCreated, Created: d.Created, Size: strconv.FormatInt(d.Size, 10), Labels: d.Labels}
	}
	count, size := r.st.SnapshotUsage()
	out.SnapshotCountUsage, out.SnapshotSizeUsage, out.SnapshotCountTotal = int32(count), size, int32(len(out.Disks))
	out.RemainSnapshots = int32(250 - count)
	if hs, err := r.st.HeadStat(); err == nil {
		out.LastModifyTime, out.HeadFileSize = hs.ModTime.UnixNano(), hs.Allocated
	}
	return out
}

// open runs fn on the open store; on a closed replica Longhorn's handlers
// do nothing and succeed.
func (r *lhReplica) open(method string, fn func(st *replica.Store) error) (*enginerpc.Replica, error) {
	r.note(method)
	r.mu.Lock()
	st := r.st
	r.mu.Unlock()
	if st != nil {
		if err := fn(st); err != nil {
			return nil, err
		}
	}
	return r.info(), nil
}

func (r *lhReplica) ReplicaGet(context.Context, *emptypb.Empty) (*enginerpc.ReplicaGetResponse, error) {
	r.note("ReplicaGet")
	return &enginerpc.ReplicaGetResponse{Replica: r.info()}, nil
}

func (r *lhReplica) ReplicaOpen(context.Context, *enginerpc.ReplicaOpenRequest) (*enginerpc.ReplicaOpenResponse, error) {
	r.note("ReplicaOpen")
	r.mu.Lock()
	if r.st != nil {
		r.mu.Unlock()
		return nil, plain(errors.New("replica is already open"))
	}
	st, err := replica.Open(r.dir, replica.Options{})
	if err == nil {
		r.st = st
	}
	r.mu.Unlock()
	if err != nil {
		return nil, plain(err)
	}
	return &enginerpc.ReplicaOpenResponse{Replica: r.info()}, nil
}

func (r *lhReplica) ReplicaClose(context.Context, *emptypb.Empty) (*enginerpc.ReplicaCloseResponse, error) {
	r.note("ReplicaClose")
	r.mu.Lock()
	if r.st != nil {
		_ = r.st.Close()
		r.st = nil
	}
	r.mu.Unlock()
	return &enginerpc.ReplicaCloseResponse{Replica: r.info()}, nil
}

func (r *lhReplica) ReplicaReload(context.Context, *emptypb.Empty) (*enginerpc.ReplicaReloadResponse, error) {
	x, err := r.open("ReplicaReload", func(st *replica.Store) error { return plain(st.Reload()) })
	return &enginerpc.ReplicaReloadResponse{Replica: x}, err
}

func (r *lhReplica) ReplicaRevert(_ context.Context, req *enginerpc.ReplicaRevertRequest) (*enginerpc.ReplicaRevertResponse, error) {
	x, err := r.open("ReplicaRevert", func(st *replica.Store) error {
		if _, ok := replica.SnapshotName(req.GetName()); !ok {
			return plain(fmt.Errorf("revert: %q is not a disk file name", req.GetName()))
		}
		return plain(st.Revert(req.GetName(), req.GetCreated()))
	})
	return &enginerpc.ReplicaRevertResponse{Replica: x}, err
}

func (r *lhReplica) ReplicaSnapshot(_ context.Context, req *enginerpc.ReplicaSnapshotRequest) (*enginerpc.ReplicaSnapshotResponse, error) {
	x, err := r.open("ReplicaSnapshot", func(st *replica.Store) error {
		if req.GetName() == "" || req.GetCreated() == "" {
			return plain(errors.New("name and created are required"))
		}
		err := st.Snapshot(req.GetName(), req.GetUserCreated(), req.GetCreated(), req.GetLabels())
		if errors.Is(err, replica.ErrSnapshotExists) {
			return plain(fmt.Errorf("snapshot %s is already existing", replica.SnapshotFileName(req.GetName())))
		}
		return plain(err)
	})
	return &enginerpc.ReplicaSnapshotResponse{Replica: x}, err
}

func (r *lhReplica) ReplicaExpand(_ context.Context, req *enginerpc.ReplicaExpandRequest) (*enginerpc.ReplicaExpandResponse, error) {
	x, err := r.open("ReplicaExpand", func(st *replica.Store) error {
		if err := st.Expand(req.GetSize()); err != nil {
			b, _ := json.Marshal(map[string]string{"code": "FunctionFailedWithoutRollback", "message": err.Error()})
			return status.Error(codes.Internal, string(b))
		}
		return nil
	})
	return &enginerpc.ReplicaExpandResponse{Replica: x}, err
}

func (r *lhReplica) DiskRemove(_ context.Context, req *enginerpc.DiskRemoveRequest) (*enginerpc.DiskRemoveResponse, error) {
	x, err := r.open("DiskRemove", func(st *replica.Store) error {
		return plain(st.RemoveDiffDisk(req.GetName(), req.GetForce()))
	})
	return &enginerpc.DiskRemoveResponse{Replica: x}, err
}

func (r *lhReplica) DiskPrepareRemove(_ context.Context, req *enginerpc.DiskPrepareRemoveRequest) (*enginerpc.DiskPrepareRemoveResponse, error) {
	out := &enginerpc.DiskPrepareRemoveResponse{}
	_, err := r.open("DiskPrepareRemove", func(st *replica.Store) error {
		acts, err := st.PrepareRemoveDisk(req.GetName())
		for _, a := range acts {
			out.Operations = append(out.Operations, &enginerpc.PrepareRemoveAction{Action: a.Action, Source: a.Source, Target: a.Target})
		}
		return plain(err)
	})
	return out, err
}

func (r *lhReplica) DiskMarkAsRemoved(_ context.Context, req *enginerpc.DiskMarkAsRemovedRequest) (*enginerpc.DiskMarkAsRemovedResponse, error) {
	x, err := r.open("DiskMarkAsRemoved", func(st *replica.Store) error { return plain(st.MarkDiskAsRemoved(req.GetName())) })
	return &enginerpc.DiskMarkAsRemovedResponse{Replica: x}, err
}

// RebuildingSet: true needs open or dirty, false needs rebuilding (Longhorn).
func (r *lhReplica) RebuildingSet(_ context.Context, req *enginerpc.RebuildingSetRequest) (*enginerpc.RebuildingSetResponse, error) {
	x, err := r.open("RebuildingSet", func(st *replica.Store) error {
		if st.Info().Rebuilding == req.GetRebuilding() {
			return plain(fmt.Errorf("invalid state for rebuilding set %v", req.GetRebuilding()))
		}
		return plain(st.SetRebuilding(req.GetRebuilding()))
	})
	return &enginerpc.RebuildingSetResponse{Replica: x}, err
}

func (r *lhReplica) RevisionCounterSet(_ context.Context, req *enginerpc.RevisionCounterSetRequest) (*enginerpc.RevisionCounterSetResponse, error) {
	x, err := r.open("RevisionCounterSet", func(st *replica.Store) error { return plain(st.SetRevisionCounter(req.GetCounter())) })
	return &enginerpc.RevisionCounterSetResponse{Replica: x}, err
}

func (r *lhReplica) UnmapMarkDiskChainRemovedSet(_ context.Context, req *enginerpc.UnmapMarkDiskChainRemovedSetRequest) (*enginerpc.UnmapMarkDiskChainRemovedSetResponse, error) {
	x, err := r.open("UnmapMarkDiskChainRemovedSet", func(st *replica.Store) error {
		st.SetUnmapMarkSnapChainRemoved(req.GetEnabled())
		return nil
	})
	return &enginerpc.UnmapMarkDiskChainRemovedSetResponse{Replica: x}, err
}

func (r *lhReplica) SnapshotMaxCountSet(_ context.Context, req *enginerpc.SnapshotMaxCountSetRequest) (*enginerpc.SnapshotMaxCountSetResponse, error) {
	x, err := r.open("SnapshotMaxCountSet", func(st *replica.Store) error { return plain(st.SetSnapshotMaxCount(int(req.GetCount()))) })
	return &enginerpc.SnapshotMaxCountSetResponse{Replica: x}, err
}

func (r *lhReplica) SnapshotMaxSizeSet(_ context.Context, req *enginerpc.SnapshotMaxSizeSetRequest) (*enginerpc.SnapshotMaxSizeSetResponse, error) {
	x, err := r.open("SnapshotMaxSizeSet", func(st *replica.Store) error { return plain(st.SetSnapshotMaxSize(req.GetSize())) })
	return &enginerpc.SnapshotMaxSizeSetResponse{Replica: x}, err
}

// filePath is a file of the replica directory (the agent's working directory).
func (r *lhReplica) filePath(name string) (string, error) {
	if err := replica.ValidateFileName(name); err != nil {
		return "", err
	}
	return filepath.Join(r.dir, name), nil
}

// readAll reads the volume through the store (the replica must be open).
func (r *lhReplica) readAll(size int64) []byte {
	r.t.Helper()
	st := r.store()
	if st == nil {
		r.t.Fatalf("Longhorn-shaped replica %s is closed", r.addr)
	}
	buf := make([]byte, size)
	if _, err := st.ReadAt(buf, 0); err != nil {
		r.t.Fatal(err)
	}
	return buf
}

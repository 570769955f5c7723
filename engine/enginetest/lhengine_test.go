package enginetest

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// lhEngine is a Longhorn-shaped engine controller with its CLI's
// add-replica driver, written from longhorn-engine-wire.md §4, §6.5 and §7
// for the tests that put Longhorn's engine in front of our replicas. It is
// a frontend.Backend, so our NBD frontend serves it to fio: writes go
// through unchanged while no replica is WO and are aligned to 4 KiB by
// read-modify-write while one is; reads go round robin to RW replicas;
// unmap is skipped while a replica is WO; FLUSH sends nothing (Longhorn's
// controller has no flush).
type lhEngine struct {
	t    *testing.T
	mu   sync.RWMutex // shared by I/O, exclusive for membership, snapshots, expansion
	size int64
	reps []*lhBackend
	rr   int
	rrMu sync.Mutex
}

type lhBackend struct {
	addr  string // tcp://HOST:P
	host  string
	mode  string // RW, WO, ERR
	conns []*grpc.ClientConn
	rs    enginerpc.ReplicaServiceClient
	ag    enginerpc.SyncAgentServiceClient
	data  *lhDataClient
}

var _ frontend.Backend = (*lhEngine)(nil)

func ctx30() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// newLHBackend is Longhorn's backend creation: the replica must be closed;
// two data connections, then ReplicaOpen.
func newLHBackend(addr string) (*lhBackend, error) {
	hp := strings.TrimPrefix(addr, "tcp://")
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(ps)
	b := &lhBackend{addr: addr, host: host}
	for _, port := range []int{p, p + 2} {
		cc, err := grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(port)), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		b.conns = append(b.conns, cc)
	}
	b.rs, b.ag = enginerpc.NewReplicaServiceClient(b.conns[0]), enginerpc.NewSyncAgentServiceClient(b.conns[1])
	ctx, cancel := ctx30()
	defer cancel()
	r, err := b.rs.ReplicaGet(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, err
	}
	if st := r.GetReplica().GetState(); st != "closed" {
		return nil, fmt.Errorf("replica must be closed, cannot add in state: %s", st)
	}
	if b.data, err = dialLHData(net.JoinHostPort(host, strconv.Itoa(p+1))); err != nil {
		return nil, err
	}
	if _, err := b.rs.ReplicaOpen(ctx, &enginerpc.ReplicaOpenRequest{}); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *lhBackend) get(t *testing.T) *enginerpc.Replica {
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	r, err := b.rs.ReplicaGet(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatalf("ReplicaGet %s: %v", b.addr, err)
	}
	return r.GetReplica()
}

func (b *lhBackend) close() {
	ctx, cancel := ctx30()
	defer cancel()
	if b.data != nil {
		b.data.close()
	}
	_, _ = b.rs.ReplicaClose(ctx, &emptypb.Empty{})
	for _, c := range b.conns {
		c.Close()
	}
}

func startLHEngine(t *testing.T, size int64, addrs ...string) *lhEngine {
	t.Helper()
	e := &lhEngine{t: t, size: size}
	for _, a := range addrs {
		b, err := newLHBackend(a)
		if err != nil {
			t.Fatalf("Longhorn engine start on %s: %v", a, err)
		}
		if got := b.get(t).GetSize(); got != strconv.FormatInt(size, 10) {
			t.Fatalf("replica %s size %q, want %d", a, got, size)
		}
		b.mode = "RW"
		e.reps = append(e.reps, b)
	}
	t.Cleanup(func() {
		for _, b := range e.reps {
			b.close()
		}
	})
	return e
}

func (e *lhEngine) Size() int64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.size
}

func (e *lhEngine) targets(modes ...string) []*lhBackend {
	var out []*lhBackend
	for _, b := range e.reps {
		for _, m := range modes {
			if b.mode == m {
				out = append(out, b)
			}
		}
	}
	return out
}

func (e *lhEngine) ReadAt(p []byte, off int64) (int, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.readLocked(p, off)
}

func (e *lhEngine) readLocked(p []byte, off int64) (int, error) {
	rw := e.targets("RW")
	if len(rw) == 0 {
		return 0, frontend.ErrNoBackend
	}
	e.rrMu.Lock()
	e.rr++
	b := rw[e.rr%len(rw)]
	e.rrMu.Unlock()
	m, err := b.data.do(lhRead, off, uint32(len(p)), nil)
	if err != nil {
		return 0, err
	}
	return copy(p, m.data), nil
}

func (e *lhEngine) WriteAt(p []byte, off int64) (int, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if off+int64(len(p)) > e.size {
		return 0, frontend.ErrOutOfRange
	}
	if len(e.targets("WO")) > 0 && (off%4096 != 0 || len(p)%4096 != 0) {
		start, end := off/4096*4096, (off+int64(len(p))+4095)/4096*4096
		buf := make([]byte, end-start)
		if _, err := e.readLocked(buf, start); err != nil {
			return 0, err
		}
		copy(buf[off-start:], p)
		p, off = buf, start
	}
	return len(p), e.fanout(lhWrite, off, uint32(len(p)), p)
}

func (e *lhEngine) fanout(typ uint32, off int64, size uint32, data []byte) error {
	bs := e.targets("RW", "WO")
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.data.do(typ, off, size, data)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("replica %s: %w", bs[i].addr, err)
		}
	}
	return nil
}

func (e *lhEngine) UnmapAt(length uint32, off int64) (int, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if len(e.targets("WO")) > 0 {
		return 0, nil
	}
	return int(length), e.fanout(lhUnmap, off, length, nil)
}

// Flush: Longhorn's controller sends nothing (tgt answers SYNCHRONIZE CACHE
// itself); every write was answered after it reached the replicas' files.
func (e *lhEngine) Flush() error { return nil }

// snapshot sends ReplicaSnapshot to every non-ERR replica (Longhorn's
// controller Snapshot), with I/O held.
func (e *lhEngine) snapshot(name string, user bool) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.snapshotLocked(name, user, e.targets("RW", "WO"))
}

func (e *lhEngine) snapshotLocked(name string, user bool, bs []*lhBackend) {
	e.t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	created := time.Now().UTC().Format(time.RFC3339)
	for _, b := range bs {
		if _, err := b.rs.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: name, UserCreated: user, Created: created}); err != nil {
			e.t.Fatalf("snapshot %s on %s: %v", name, b.addr, err)
		}
	}
}

func (e *lhEngine) expand(size int64) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := ctx30()
	defer cancel()
	for _, b := range e.targets("RW", "WO") {
		if _, err := b.rs.ReplicaExpand(ctx, &enginerpc.ReplicaExpandRequest{Size: size}); err != nil {
			e.t.Fatalf("expand %s: %v", b.addr, err)
		}
	}
	e.size = size
}

func (e *lhEngine) remove(addr string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var keep []*lhBackend
	for _, b := range e.reps {
		if b.addr == addr {
			b.close()
			continue
		}
		keep = append(keep, b)
	}
	e.reps = keep
}

// purge is Longhorn's CLI delete + purge: DiskMarkAsRemoved on every
// replica, then each agent's SnapshotPurge, polled until done.
func (e *lhEngine) purge(snapshot string) {
	e.t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	for _, b := range e.targets("RW") {
		if _, err := b.rs.DiskMarkAsRemoved(ctx, &enginerpc.DiskMarkAsRemovedRequest{Name: snapshot}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := b.ag.SnapshotPurge(ctx, &emptypb.Empty{}); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, b := range e.targets("RW") {
		for {
			st, err := b.ag.SnapshotPurgeStatus(ctx, &emptypb.Empty{})
			if err != nil || st.GetError() != "" {
				e.t.Fatalf("purge on %s: %v %s", b.addr, err, st.GetError())
			}
			if !st.GetIsPurging() {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// diskNames are a replica's disks but the head and backing file.
func diskNames(r *enginerpc.Replica) []string {
	var out []string
	for n := range r.GetDisks() {
		if n != r.GetHead() && n != r.GetBackingFile() {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

package replicasrv

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func TestReplicaServiceLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	s, err := NewServer(dir, 0, replica.Options{}, "r-1", quiet())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := &enginerpc.Empty{}
	if r, _ := s.ReplicaGet(ctx, e); r.GetState() != StateInitial {
		t.Fatalf("empty dir state %q", r.GetState())
	}
	if _, err := s.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: "x"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("snapshot without a replica: %v", err)
	}
	if _, err := s.ReplicaCreate(ctx, &enginerpc.ReplicaCreateRequest{Size: 1000}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unaligned create: %v", err)
	}
	r, err := s.ReplicaCreate(ctx, &enginerpc.ReplicaCreateRequest{Size: 1 << 20})
	if err != nil || r.GetSize() != 1<<20 || r.GetInstanceName() != "r-1" || len(r.GetChain()) != 1 {
		t.Fatalf("create: %v %v", r, err)
	}
	if _, err := s.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: "s1", UserCreated: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: "s1"}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("duplicate snapshot: %v", err)
	}
	if _, err := s.ReplicaRevert(ctx, &enginerpc.ReplicaRevertRequest{Name: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("revert to unknown: %v", err)
	}
	if _, err := s.ReplicaExpand(ctx, &enginerpc.ReplicaExpandRequest{Size: 4096}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("shrink: %v", err)
	}
	r, err = s.ReplicaClose(ctx, e)
	if err != nil || r.GetState() != StateClosed || r.GetDirty() {
		t.Fatalf("close: %v %v", r, err)
	}
	if _, err := (dataHandler{s}).WriteAt(make([]byte, 4096), 0); err == nil {
		t.Fatal("write to a closed replica succeeded")
	}
	r, err = s.ReplicaOpen(ctx, e)
	if err != nil || r.GetState() != StateDirty || r.GetDisks()["volume-snap-s1.img"] == nil {
		t.Fatalf("open: %v %v", r, err)
	}
	if _, err := (dataHandler{s}).WriteAt(make([]byte, 4096), 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplicaDelete(ctx, e); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.ReplicaGet(ctx, e); r.GetState() != StateInitial {
		t.Fatalf("after delete: %q", r.GetState())
	}
}

func TestSplitListen(t *testing.T) {
	if h, p, err := SplitListen("127.0.0.1:9502"); err != nil || h != "127.0.0.1" || p != 9502 {
		t.Fatalf("%q %d %v", h, p, err)
	}
	for _, bad := range []string{"9502", "h:0", "h:65530", "h:x"} {
		if _, _, err := SplitListen(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

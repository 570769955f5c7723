package replicasrv

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

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
	e := &emptypb.Empty{}
	now := "2026-12-01T10:00:00Z"
	if r, _ := s.ReplicaGet(ctx, e); r.GetReplica().GetState() != StateInitial {
		t.Fatalf("empty dir state %q", r.GetReplica().GetState())
	}
	if _, err := s.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: "x", Created: now}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("snapshot without a replica: %v", err)
	}
	for _, bad := range []string{"1000", "ten", "-4096"} {
		if _, err := s.ReplicaCreate(ctx, &enginerpc.ReplicaCreateRequest{Size: bad}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("create size %q: %v", bad, err)
		}
	}
	r, err := s.ReplicaCreate(ctx, &enginerpc.ReplicaCreateRequest{Size: "1048576"})
	if err != nil || r.GetReplica().GetState() != StateClosed || r.GetReplica().GetSize() != "1048576" {
		t.Fatalf("create: %v %v", r, err)
	}
	// Longhorn: create in any other state is a no-op.
	if r, err := s.ReplicaCreate(ctx, &enginerpc.ReplicaCreateRequest{Size: "4096"}); err != nil || r.GetReplica().GetSize() != "1048576" {
		t.Fatalf("second create: %v %v", r, err)
	}
	o, err := s.ReplicaOpen(ctx, &enginerpc.ReplicaOpenRequest{})
	if err != nil || o.GetReplica().GetInstanceName() != "r-1" || len(o.GetReplica().GetChain()) != 1 {
		t.Fatalf("open: %v %v", o, err)
	}
	if _, err := s.ReplicaOpen(ctx, &enginerpc.ReplicaOpenRequest{}); status.Convert(err).Message() != "replica is already open" {
		t.Fatalf("second open: %v", err)
	}
	if _, err := s.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: "s1", UserCreated: true, Created: now}); err != nil {
		t.Fatal(err)
	}
	_, err = s.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: "s1", Created: now})
	if status.Code(err) != codes.AlreadyExists || status.Convert(err).Message() != "snapshot volume-snap-s1.img is already existing" {
		t.Fatalf("duplicate snapshot: %v", err)
	}
	if _, err := s.ReplicaRevert(ctx, &enginerpc.ReplicaRevertRequest{Name: "nope", Created: now}); status.Code(err) != codes.NotFound {
		t.Fatalf("revert to unknown: %v", err)
	}
	_, err = s.ReplicaExpand(ctx, &enginerpc.ReplicaExpandRequest{Size: 4096})
	if status.Code(err) != codes.Internal || status.Convert(err).Message()[0] != '{' {
		t.Fatalf("shrink: %v", err)
	}
	c, err := s.ReplicaClose(ctx, e)
	if err != nil || c.GetReplica().GetState() != StateClosed || c.GetReplica().GetDirty() {
		t.Fatalf("close: %v %v", c, err)
	}
	if _, err := (dataHandler{s}).WriteAt(make([]byte, 4096), 0); err == nil {
		t.Fatal("write to a closed replica succeeded")
	}
	o, err = s.ReplicaOpen(ctx, &enginerpc.ReplicaOpenRequest{})
	if err != nil || o.GetReplica().GetState() != StateDirty || o.GetReplica().GetDisks()["volume-snap-s1.img"] == nil {
		t.Fatalf("open: %v %v", o, err)
	}
	if _, err := (dataHandler{s}).WriteAt(make([]byte, 4096), 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplicaDelete(ctx, e); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.ReplicaGet(ctx, e); r.GetReplica().GetState() != StateInitial {
		t.Fatalf("after delete: %q", r.GetReplica().GetState())
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

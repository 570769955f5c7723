package enginetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// addReplica is Longhorn's `longhorn add-replica` against this engine
// (longhorn-engine-wire.md §7), each step as the CLI and the controller
// run it.
func (e *lhEngine) addReplica(addr string) {
	t := e.t
	t.Helper()
	ctx, cancel := ctx30()
	defer cancel()
	// Steps 2-3 (the target's size and a stale rebuilding flag) need an
	// open replica; a fresh one of the volume's size needs neither.
	// Step 4: ControllerReplicaCreate{snapshot_required, WO}.
	b, err := newLHBackend(addr)
	if err != nil {
		t.Fatalf("add %s: %v", addr, err)
	}
	e.mu.Lock()
	e.snapshotLocked(newUUID(), false, append(e.targets("RW", "WO"), b))
	b.mode = "WO"
	e.reps = append(e.reps, b)
	e.mu.Unlock()
	// Step 7.
	if _, err := b.rs.RebuildingSet(ctx, &enginerpc.RebuildingSetRequest{Rebuilding: true}); err != nil {
		t.Fatal(err)
	}
	files := e.prepareRebuild(b)
	// Step 9: the target's agent pulls from every RW replica.
	sources := map[string]bool{}
	var from string
	for _, s := range e.targets("RW") {
		sources[s.addr], from = true, s.addr
	}
	long, cancelLong := ctxLong()
	defer cancelLong()
	if _, err := b.ag.FilesSync(long, &enginerpc.FilesSyncRequest{FromAddress: from, FromAddressMap: sources, ToHost: b.host,
		SyncFileInfoList: files, FileSyncHttpClientTimeout: 30, GrpcTimeoutSeconds: 120}); err != nil {
		t.Fatalf("FilesSync into %s: %v", addr, err)
	}
	// Step 10.
	if _, err := b.rs.ReplicaReload(ctx, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
	e.verifyRebuild(b)
	// Step 12.
	if _, err := b.rs.RebuildingSet(ctx, &enginerpc.RebuildingSetRequest{Rebuilding: false}); err != nil {
		t.Fatalf("RebuildingSet false on %s: %v", addr, err)
	}
}

// prepareRebuild is the controller's ReplicaPrepareRebuild (step 8), with
// I/O held.
func (e *lhEngine) prepareRebuild(b *lhBackend) []*enginerpc.SyncFileInfo {
	t := e.t
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := ctx30()
	defer cancel()
	if _, err := b.rs.RevisionCounterSet(ctx, &enginerpc.RevisionCounterSetRequest{Counter: 0}); err != nil {
		t.Fatal(err)
	}
	rw := e.targets("RW")
	ref := rw[len(rw)-1]
	from, to := ref.get(t), b.get(t)
	var files []*enginerpc.SyncFileInfo
	for _, n := range diskNames(from) {
		files = append(files, &enginerpc.SyncFileInfo{FromFileName: n, ToFileName: n, ActualSize: from.GetDisks()[n].SizeBytes()},
			&enginerpc.SyncFileInfo{FromFileName: n + ".meta", ToFileName: n + ".meta"})
	}
	for _, n := range diskNames(to) {
		if _, ok := from.GetDisks()[n]; !ok {
			if _, err := b.rs.DiskRemove(ctx, &enginerpc.DiskRemoveRequest{Name: n, Force: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	recv, err := b.ag.ReceiverLaunch(ctx, &enginerpc.ReceiverLaunchRequest{ToFileName: to.GetHead() + ".meta"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ref.ag.FileSend(ctx, &enginerpc.FileSendRequest{FromFileName: from.GetHead() + ".meta", Host: b.host,
		Port: recv.GetPort(), FileSyncHttpClientTimeout: 5}); err != nil {
		t.Fatalf("head metadata from %s: %v", ref.addr, err)
	}
	for _, f := range files {
		if strings.Contains(f.GetFromFileName(), "volume-head") {
			t.Fatalf("the rebuild list holds the head: %v", files)
		}
	}
	return files
}

// verifyRebuild is ReplicaVerifyRebuild (step 11): same disks, removed
// ones included, as an RW replica; counter copied; mode RW.
func (e *lhEngine) verifyRebuild(b *lhBackend) {
	t := e.t
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	rw := e.targets("RW")[0].get(t)
	to := b.get(t)
	if !slices.Equal(diskNames(rw), diskNames(to)) {
		t.Fatalf("rebuilt %s has disks %v, the RW replica %v", b.addr, diskNames(to), diskNames(rw))
	}
	ctx, cancel := ctx30()
	defer cancel()
	if _, err := b.rs.RevisionCounterSet(ctx, &enginerpc.RevisionCounterSetRequest{Counter: rw.GetRevisionCounter()}); err != nil {
		t.Fatal(err)
	}
	b.mode = "RW"
}

func ctxLong() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Minute)
}

// newUUID is a random snapshot name, as Longhorn's controller picks.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

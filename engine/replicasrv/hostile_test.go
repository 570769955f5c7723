package replicasrv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// startProcess runs a replica process (in this test process) on free ports
// and opens the replica, as an engine would.
func startProcess(t *testing.T, dir string, size int64) (*Process, int) {
	t.Helper()
	return startProcessWith(t, Config{Dir: dir, Size: size})
}

// startProcessWith is startProcess with cfg (Listen is set here).
func startProcessWith(t *testing.T, cfg Config) (*Process, int) {
	t.Helper()
	port := testutil.FreePortRange(t, PortCount)
	cfg.Listen = "127.0.0.1:" + strconv.Itoa(port)
	pr, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pr.Stop)
	if _, err := pr.Server.ReplicaOpen(context.Background(), &enginerpc.ReplicaOpenRequest{}); err != nil {
		t.Fatal(err)
	}
	return pr, port
}

func grpcConn(t *testing.T, port int) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// listDir returns "name size" for every file under dir and its parent, so a
// test sees files written outside the replica directory too.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(filepath.Dir(dir), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out = append(out, p+" "+strconv.FormatInt(fi.Size(), 10))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// TestHostileRequests: requests naming files outside the layout, huge sizes
// and garbage bytes on every port are refused; the replica keeps serving,
// its data and its directory (and the one above it) are unchanged.
func TestHostileRequests(t *testing.T) {
	const size = 1 << 20
	dir := filepath.Join(t.TempDir(), "r")
	pr, port := startProcess(t, dir, size)
	data, err := dataconn.Dial(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(port+1), dataconn.Options{Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{0x3c}, 8192)
	if _, err := data.WriteAt(want, 4096); err != nil {
		t.Fatal(err)
	}
	data.Close()
	before := listDir(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs := enginerpc.NewReplicaServiceClient(grpcConn(t, port))
	ag := enginerpc.NewSyncAgentServiceClient(grpcConn(t, port+2))
	refused := map[string]error{}
	_, refused["expand past the maximum"] = rs.ReplicaExpand(ctx, &enginerpc.ReplicaExpandRequest{Size: 1 << 62})
	_, refused["expand negative"] = rs.ReplicaExpand(ctx, &enginerpc.ReplicaExpandRequest{Size: -4096})
	now := time.Now().UTC().Format(time.RFC3339)
	_, refused["snapshot ../x"] = rs.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: "../x", Created: now})
	_, refused["snapshot volume-head"] = rs.ReplicaSnapshot(ctx, &enginerpc.ReplicaSnapshotRequest{Name: "volume-head", Created: now})
	_, refused["revert ../x"] = rs.ReplicaRevert(ctx, &enginerpc.ReplicaRevertRequest{Name: "../x", Created: now})
	_, refused["disk replace ../"] = rs.DiskReplace(ctx, &enginerpc.DiskReplaceRequest{Target: "../r/volume.meta", Source: "volume-head-000.img"})
	_, refused["create bad size"] = rs.ReplicaCreate(ctx, &enginerpc.ReplicaCreateRequest{Size: "-1"})
	_, refused["disk remove ../"] = rs.DiskRemove(ctx, &enginerpc.DiskRemoveRequest{Name: "../r/volume.meta", Force: true})
	_, refused["disk remove volume.meta"] = rs.DiskRemove(ctx, &enginerpc.DiskRemoveRequest{Name: "volume.meta", Force: true})
	_, refused["revision counter -1"] = rs.RevisionCounterSet(ctx, &enginerpc.RevisionCounterSetRequest{Counter: -1})
	_, refused["file remove ../"] = ag.FileRemove(ctx, &enginerpc.FileRemoveRequest{FileName: "../r/volume.meta"})
	_, refused["file rename"] = ag.FileRename(ctx, &enginerpc.FileRenameRequest{OldFileName: "volume.meta", NewFileName: "../x"})
	_, refused["receiver ../x"] = ag.ReceiverLaunch(ctx, &enginerpc.ReceiverLaunchRequest{ToFileName: "../x"})
	_, refused["receiver volume.meta"] = ag.ReceiverLaunch(ctx, &enginerpc.ReceiverLaunchRequest{ToFileName: "volume.meta"})
	_, refused["file send /etc/passwd"] = ag.FileSend(ctx, &enginerpc.FileSendRequest{FromFileName: "../../../../etc/passwd", Host: "127.0.0.1", Port: 1})
	_, refused["files sync ../"] = ag.FilesSync(ctx, &enginerpc.FilesSyncRequest{FromAddress: "tcp://127.0.0.1:1", ToHost: "127.0.0.1",
		SyncFileInfoList: []*enginerpc.SyncFileInfo{{FromFileName: "volume-snap-a.img", ToFileName: "../../x.img"}}})
	for what, err := range refused {
		if err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	for _, p := range []int{port, port + 1, port + 2} {
		sendGarbage(t, p)
	}
	if got := listDir(t, dir); !equalLists(got, before) {
		t.Fatalf("files changed:\nbefore %v\nafter  %v", before, got)
	}
	r, err := rs.ReplicaGet(ctx, &emptypb.Empty{})
	if err != nil || r.GetReplica().SizeBytes() != size {
		t.Fatalf("replica after hostile requests: %v %v", r, err)
	}
	got := make([]byte, len(want))
	if _, err := pr.Server.Store().ReadAt(got, 4096); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("data after hostile requests: %v", err)
	}
}

func equalLists(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sendGarbage writes random bytes, an HTTP request and dataconn headers with
// absurd sizes to a port, each on a fresh connection.
func sendGarbage(t *testing.T, port int) {
	t.Helper()
	junk := make([]byte, 64<<10)
	_, _ = rand.Read(junk)
	hdr := func(typ uint32, off int64, size, dataLen uint32) []byte {
		b := make([]byte, dataconn.HeaderSize)
		binary.LittleEndian.PutUint16(b[0:], 0x1b01)
		binary.LittleEndian.PutUint32(b[2:], 1)
		binary.LittleEndian.PutUint32(b[6:], typ)
		binary.LittleEndian.PutUint64(b[10:], uint64(off))
		binary.LittleEndian.PutUint32(b[18:], size)
		binary.LittleEndian.PutUint32(b[22:], dataLen)
		return b
	}
	msgs := [][]byte{junk, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00"),
		hdr(1, 0, 0xffffffff, 0xffffffff), hdr(0, 0, 0xffffffff, 0), hdr(0, -4096, 4096, 0), hdr(0, 1<<62, 4096, 0),
		hdr(7, -4096, 8192, 0), hdr(99, 0, 0, 0), hdr(2, 0, 0, 10)}
	for _, m := range msgs {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 2*time.Second)
		if err != nil {
			t.Fatalf("port %d no longer accepts connections: %v", port, err)
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = c.Write(m)
		_, _ = c.Read(make([]byte, 512))
		c.Close()
	}
}

// TestDataConnectionsReported: ReplicaGet reports the open data connections,
// which is how an engine tells a replica in use by another engine.
func TestDataConnectionsReported(t *testing.T) {
	_, port := startProcess(t, filepath.Join(t.TempDir(), "r"), 1<<20)
	rs := enginerpc.NewReplicaServiceClient(grpcConn(t, port))
	count := func() int32 {
		r, err := rs.ReplicaGet(context.Background(), &emptypb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetReplica().GetDataConnections()
	}
	if n := count(); n != 0 {
		t.Fatalf("%d data connections before any client", n)
	}
	c, err := dataconn.Dial(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(port+1), dataconn.Options{Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitCount(t, count, 2)
	c.Close()
	waitCount(t, count, 0)
}

func waitCount(t *testing.T, count func() int32, want int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for count() != want {
		if time.Now().After(deadline) {
			t.Fatalf("data connections %d, want %d", count(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

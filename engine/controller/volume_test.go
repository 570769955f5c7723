package controller_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/replicasrv"
	"github.com/longhorn-go/longhorn/internal/testutil"
)

// These tests run real replica servers (the code of `longhorn engine
// replica`, in process) on loopback ports and a controller driving them.

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

type testReplica struct {
	t    *testing.T
	dir  string
	addr string // tcp://127.0.0.1:P
	port int
	size int64
	opts replica.Options
	pr   *replicasrv.Process
}

func startReplica(t *testing.T, dir string, size int64, opts replica.Options) *testReplica {
	t.Helper()
	r := &testReplica{t: t, dir: dir, size: size, opts: opts}
	r.port = testutil.FreePortRange(t, replicasrv.PortCount)
	r.addr = "tcp://127.0.0.1:" + strconv.Itoa(r.port)
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *testReplica) start() {
	r.t.Helper()
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		r.pr, err = replicasrv.Start(replicasrv.Config{Dir: r.dir, Size: r.size,
			Listen: "127.0.0.1:" + strconv.Itoa(r.port), Options: r.opts}, quietLog())
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the previous instance's ports may linger
	}
	r.t.Fatalf("start replica %s: %v", r.dir, err)
}

func (r *testReplica) stop() {
	if r.pr != nil {
		r.pr.Stop()
		r.pr = nil
	}
}

// readAll reads the whole volume straight from the replica's data server.
func (r *testReplica) readAll(size int64) []byte {
	r.t.Helper()
	c, err := dataconn.Dial(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(r.port+1), dataconn.Options{Conns: 1})
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, size)
	for off := int64(0); off < size; off += 4 << 20 {
		n := min(4<<20, size-off)
		if _, err := c.ReadAt(buf[off:off+n], off); err != nil {
			r.t.Fatalf("read replica %s at %d: %v", r.addr, off, err)
		}
	}
	return buf
}

func newController(t *testing.T, size int64, opts controller.VolumeOptions) *controller.Controller {
	t.Helper()
	opts.Name, opts.Size = "vol", size
	if opts.Log == nil {
		opts.Log = quietLog()
	}
	if opts.EngineReplicaTimeout == 0 {
		opts.EngineReplicaTimeout = 4 * time.Second
	}
	c, err := controller.NewVolume(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	return c
}

// startVolume starts two replicas of size bytes in a temporary directory
// and a controller with opts on them (Start, frontend as opts say).
func startVolume(t *testing.T, size int64, opts controller.VolumeOptions) (*controller.Controller, *testReplica, *testReplica) {
	t.Helper()
	dir := t.TempDir()
	a := startReplica(t, filepath.Join(dir, "a"), size, replica.Options{})
	b := startReplica(t, filepath.Join(dir, "b"), size, replica.Options{})
	c := newController(t, size, opts)
	if err := c.Start(context.Background(), addrs(a, b), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	return c, a, b
}

func addrs(rs ...*testReplica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.addr)
	}
	return out
}

func modes(c *controller.Controller) map[string]controller.Mode {
	m := map[string]controller.Mode{}
	for _, r := range c.Replicas() {
		m[r.Address] = r.Mode
	}
	return m
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

func TestStartRevisionCounterPicksNewest(t *testing.T) {
	const size = 8 << 20
	ctx := context.Background()
	c, a, b := startVolume(t, size, controller.VolumeOptions{})
	rng := rand.New(rand.NewSource(1))
	be := c.Backend()
	if _, err := be.WriteAt(randBytes(rng, 8192), 0); err != nil {
		t.Fatal(err)
	}
	// b leaves; a gets more writes, so its revision counter moves ahead.
	if err := c.RemoveReplica(b.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := be.WriteAt(randBytes(rng, 4096), 4096); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	c2 := newController(t, size, controller.VolumeOptions{})
	if err := c2.Start(ctx, addrs(b, a), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	m := modes(c2)
	if m[a.addr] != controller.ModeRW || m[b.addr] != controller.ModeERR {
		t.Fatalf("modes after start %v, want a RW and b ERR", m)
	}
}

func TestStartSalvagePicksOneReplica(t *testing.T) {
	const size = 8 << 20
	dir := t.TempDir()
	opts := replica.Options{DisableRevisionCounter: true}
	a := startReplica(t, filepath.Join(dir, "a"), size, opts)
	b := startReplica(t, filepath.Join(dir, "b"), size, opts)
	ctx := context.Background()
	c := newController(t, size, controller.VolumeOptions{DisableRevisionCounter: true})
	if err := c.Start(ctx, addrs(a, b), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if m := modes(c); m[a.addr] != controller.ModeRW || m[b.addr] != controller.ModeRW {
		t.Fatalf("without salvage both stay RW: %v", m)
	}
	if err := c.RemoveReplica(a.addr); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Backend().WriteAt(make([]byte, 1<<20), 0); err != nil {
		t.Fatal(err)
	}
	_ = c.Shutdown()
	c2 := newController(t, size, controller.VolumeOptions{DisableRevisionCounter: true})
	if err := c2.Start(ctx, addrs(a, b), 0, 0, true); err != nil {
		t.Fatal(err)
	}
	if m := modes(c2); m[b.addr] != controller.ModeRW || m[a.addr] != controller.ModeERR {
		t.Fatalf("salvage modes %v, want b (larger head) RW and a ERR", m)
	}
	// A replica whose revision counter setting differs from the engine's is ERR.
	c3 := newController(t, size, controller.VolumeOptions{})
	if err := c3.Start(ctx, addrs(b), 0, 0, false); err == nil {
		t.Fatal("start with mismatching revision counter setting succeeded")
	}
}

// TestRebuildWhileWriting adds a fresh replica to a 2-replica volume while a
// writer keeps writing; afterwards every replica reads back the model. Half
// of the writes are 4 KiB-aligned. Without the revision counter the engine
// writes those into the local replicas' heads itself (direct writes), the
// WO replica's during the rebuild included, which the test checks happened.
func TestRebuildWhileWriting(t *testing.T) {
	t.Run("counter", func(t *testing.T) { testRebuildWhileWriting(t, false) })
	t.Run("no-counter", func(t *testing.T) { testRebuildWhileWriting(t, true) })
}

func testRebuildWhileWriting(t *testing.T, noCounter bool) {
	const size = 32 << 20
	dir := t.TempDir()
	ropts := replica.Options{DisableRevisionCounter: noCounter}
	a := startReplica(t, filepath.Join(dir, "a"), size, ropts)
	b := startReplica(t, filepath.Join(dir, "b"), size, ropts)
	ctx := context.Background()
	c := newController(t, size, controller.VolumeOptions{DisableRevisionCounter: noCounter})
	if err := c.Start(ctx, addrs(a, b), 0, 0, false); err != nil {
		t.Fatal(err)
	}
	be := c.Backend()
	model := make([]byte, size)
	rng := rand.New(rand.NewSource(2))
	write := func() {
		off := rng.Int63n(size - 70000)
		p := randBytes(rng, 1+rng.Intn(65536))
		if rng.Intn(2) == 0 {
			off &^= 4095
			p = randBytes(rng, 4096*(1+rng.Intn(16)))
		}
		if _, err := be.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		copy(model[off:], p)
	}
	for i := 0; i < 300; i++ {
		write()
	}
	if _, err := c.Snapshot(ctx, "before-rebuild", nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		write()
	}
	n := startReplica(t, filepath.Join(dir, "new"), size, ropts)
	req := controller.AddRequest{Address: n.addr, FastSync: true}
	if noCounter {
		// Long enough (about 3 s for ~13 MB) for the engine to fetch the
		// new replica's view, and retry a failed fetch, while it is WO.
		req.BandwidthLimit = 4
	}
	if err := c.AddReplica(ctx, req); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	var woDirect int64 // direct writes into the new replica while it was WO
	for {
		before := modes(c)[n.addr]
		write()
		if m := modes(c)[n.addr]; m == controller.ModeWO && before == controller.ModeWO {
			woDirect = controller.DirectWrites(c, n.addr)
		} else if m == controller.ModeRW {
			break
		}
		if st := c.RebuildStatus()[n.addr]; st.State == controller.RebuildError {
			t.Fatalf("rebuild failed: %s", st.Error)
		}
		if time.Now().After(deadline) {
			t.Fatalf("rebuild did not finish: %+v", c.RebuildStatus()[n.addr])
		}
	}
	for i := 0; i < 100; i++ {
		write()
	}
	if m := modes(c); m[n.addr] != controller.ModeRW {
		t.Fatalf("rebuilt replica mode %v", m[n.addr])
	}
	t.Logf("direct writes into the WO replica during the rebuild: %d", woDirect)
	if noCounter && woDirect <= 0 {
		t.Fatal("no direct write reached the WO replica during the rebuild")
	}
	got := make([]byte, size)
	if _, err := be.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, model) {
		t.Fatal("volume differs from model after rebuild")
	}
	for _, r := range []*testReplica{a, b, n} {
		if !bytes.Equal(r.readAll(size), model) {
			t.Fatalf("replica %s differs from the model", r.addr)
		}
	}
}

func TestExpandWhileAttached(t *testing.T) {
	const size = 8 << 20
	ctx := context.Background()
	c, a, b := startVolume(t, size, controller.VolumeOptions{})
	if err := c.Expand(ctx, size-4096); err == nil {
		t.Fatal("shrink accepted")
	}
	if err := c.Expand(ctx, size+100); err == nil {
		t.Fatal("unaligned size accepted")
	}
	if err := c.Expand(ctx, 2*size); err != nil {
		t.Fatal(err)
	}
	waitExpanded(t, c)
	if got := c.Backend().Size(); got != 2*size {
		t.Fatalf("size %d after expansion", got)
	}
	p := bytes.Repeat([]byte{7}, 4096)
	if _, err := c.Backend().WriteAt(p, 2*size-4096); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*testReplica{a, b} {
		if d := r.readAll(2 * size); !bytes.Equal(d[2*size-4096:], p) {
			t.Fatalf("replica %s misses the write past the old end", r.addr)
		}
	}
}

func waitExpanded(t *testing.T, c *controller.Controller) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Info().IsExpanding {
		if time.Now().After(deadline) {
			t.Fatal("expansion did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e := c.Info().LastExpansionError; e != "" {
		t.Fatalf("expansion error: %s", e)
	}
}

func TestSnapshotErrorsDoNotFailReplicas(t *testing.T) {
	const size = 4 << 20
	ctx := context.Background()
	c, a, b := startVolume(t, size, controller.VolumeOptions{})
	if _, err := c.Snapshot(ctx, "s1", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"s1", "bad/name"} {
		if _, err := c.Snapshot(ctx, bad, nil); err == nil {
			t.Fatalf("snapshot %q accepted", bad)
		}
	}
	if m := modes(c); m[a.addr] != controller.ModeRW || m[b.addr] != controller.ModeRW {
		t.Fatalf("rejected snapshots failed replicas: %v", m)
	}
	snaps, err := c.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := snaps["s1"]; !ok || !s.UserCreated || s.Labels["k"] != "v" || snaps[controller.HeadName].Parent != "s1" {
		t.Fatalf("snapshots %+v", snaps)
	}
	if err := c.RemoveSnapshots(ctx, []string{"nope"}); err == nil {
		t.Fatal("removing an unknown snapshot succeeded")
	}
	if err := c.RemoveSnapshots(ctx, []string{controller.HeadName}); err == nil {
		t.Fatal("removing the head succeeded")
	}
	if err := c.Revert(ctx, "nope"); err == nil {
		t.Fatal("revert to an unknown snapshot succeeded")
	}
	if m := modes(c); m[a.addr] != controller.ModeRW || m[b.addr] != controller.ModeRW {
		t.Fatalf("rejected requests failed replicas: %v", m)
	}
}

// errorf formats test failure context.
func errorf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

var _ = net.Listen

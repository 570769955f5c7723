package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/frontend"
)

// memReplica is an in-memory replica store served over a real dataconn server.
type memReplica struct {
	mu      sync.Mutex
	data    []byte
	flushes int
	srv     *dataconn.Server
	addr    string
}

func (m *memReplica) ReadAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off%SectorSize != 0 || len(p)%SectorSize != 0 || off+int64(len(p)) > int64(len(m.data)) {
		return 0, fmt.Errorf("bad read %d+%d", off, len(p))
	}
	return copy(p, m.data[off:]), nil
}

func (m *memReplica) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off%SectorSize != 0 || len(p)%SectorSize != 0 || off+int64(len(p)) > int64(len(m.data)) {
		return 0, fmt.Errorf("bad write %d+%d", off, len(p))
	}
	return copy(m.data[off:], p), nil
}

func (m *memReplica) UnmapAt(n uint32, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off%SectorSize != 0 || n%SectorSize != 0 || off+int64(n) > int64(len(m.data)) {
		return 0, fmt.Errorf("bad unmap %d+%d", off, n)
	}
	clear(m.data[off : off+int64(n)])
	return int(n), nil
}

func (m *memReplica) Flush() error {
	m.mu.Lock()
	m.flushes++
	m.mu.Unlock()
	return nil
}

func (m *memReplica) PingResponse() error { return nil }

func (m *memReplica) snapshot() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.data)
}

func newMemReplica(t testing.TB, size int64) *memReplica {
	t.Helper()
	m := &memReplica{data: make([]byte, size)}
	for i := range len(m.data) / 4096 {
		m.data[i*4096] = 0 // fault the pages in now, not inside benchmarks
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.addr = l.Addr().String()
	m.srv = dataconn.NewServer(m, nil)
	go func() { _ = m.srv.Serve(l) }()
	t.Cleanup(func() { m.srv.Close() })
	return m
}

func newTestReplicator(t testing.TB, size int64, reps []*memReplica, opts dataconn.Options) *replicator {
	t.Helper()
	all := make([]dataconn.Options, len(reps))
	for i := range all {
		all[i] = opts
	}
	return newMixedReplicator(t, size, reps, all)
}

// newMixedReplicator dials each replica with its own options (replicas of
// this implementation and Longhorn's differ in the extensions they take).
func newMixedReplicator(t testing.TB, size int64, reps []*memReplica, opts []dataconn.Options) *replicator {
	t.Helper()
	r := &replicator{size: size, timeout: 8 * time.Second, log: logrus.StandardLogger()}
	var bs []*backend
	for i, m := range reps {
		c, err := dataconn.Dial(context.Background(), "tcp", m.addr, opts[i])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		b := &backend{addr: m.addr, data: c}
		b.mode.Store(int32(ModeRW))
		bs = append(bs, b)
	}
	r.setList(bs)
	return r
}

func TestReplicatorUnalignedModel(t *testing.T) {
	const size = 1 << 20
	reps := []*memReplica{newMemReplica(t, size), newMemReplica(t, size), newMemReplica(t, size)}
	r := newTestReplicator(t, size, reps, dataconn.Options{})
	model := make([]byte, size)
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 400; i++ {
		off := rng.Int63n(size - 1)
		n := 1 + rng.Intn(min(20000, int(size-off)))
		switch rng.Intn(4) {
		case 0, 1:
			p := make([]byte, n)
			rng.Read(p)
			if _, err := r.WriteAt(p, off); err != nil {
				t.Fatal(err)
			}
			copy(model[off:], p)
		case 2:
			if _, err := r.UnmapAt(uint32(n), off); err != nil {
				t.Fatal(err)
			}
			clear(model[off : off+int64(n)])
		case 3:
			got := make([]byte, n)
			if _, err := r.ReadAt(got, off); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, model[off:off+int64(n)]) {
				t.Fatalf("op %d: read %d+%d differs from model", i, off, n)
			}
		}
	}
	for i, m := range reps {
		if !bytes.Equal(m.snapshot(), model) {
			t.Fatalf("replica %d differs from model", i)
		}
	}
	if _, err := r.ReadAt(make([]byte, 10), size-5); !errors.Is(err, frontend.ErrOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
}

// TestReplicatorSubSectorWritesSerialized: concurrent 512-byte writes into the
// same 4 KiB sectors (what a 512-byte-sector initiator sends) never lose each other.
func TestReplicatorSubSectorWritesSerialized(t *testing.T) {
	const size = 64 << 10
	reps := []*memReplica{newMemReplica(t, size), newMemReplica(t, size)}
	r := newTestReplicator(t, size, reps, dataconn.Options{Conns: 4})
	var wg sync.WaitGroup
	for g := 0; g < size/512; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			p := bytes.Repeat([]byte{byte(g%251 + 1)}, 512)
			if _, err := r.WriteAt(p, int64(g)*512); err != nil {
				t.Error(err)
			}
		}(g)
	}
	wg.Wait()
	for _, m := range reps {
		d := m.snapshot()
		for g := 0; g < size/512; g++ {
			if d[g*512] != byte(g%251+1) || d[g*512+511] != byte(g%251+1) {
				t.Fatalf("512-byte block %d lost", g)
			}
		}
	}
}

func TestReplicatorFailover(t *testing.T) {
	const size = 1 << 20
	reps := []*memReplica{newMemReplica(t, size), newMemReplica(t, size), newMemReplica(t, size)}
	r := newTestReplicator(t, size, reps, dataconn.Options{Timeout: time.Second})
	var failed []string
	var fmu sync.Mutex
	r.onError = func(b *backend, err error) {
		fmu.Lock()
		failed = append(failed, b.addr)
		fmu.Unlock()
	}
	p := bytes.Repeat([]byte{0xab}, 8192)
	if _, err := r.WriteAt(p, 0); err != nil {
		t.Fatal(err)
	}
	reps[1].srv.Close()
	// Writes and reads keep working; the dead replica becomes ERR.
	for i := 0; i < 50; i++ {
		if _, err := r.WriteAt(p, int64(i%100)*8192); err != nil {
			t.Fatalf("write %d after replica death: %v", i, err)
		}
		if _, err := r.ReadAt(make([]byte, 4096), 0); err != nil {
			t.Fatalf("read %d after replica death: %v", i, err)
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	bs := r.list()
	if bs[1].getMode() != ModeERR || bs[0].getMode() != ModeRW || bs[2].getMode() != ModeRW {
		t.Fatalf("modes %v %v %v, want RW ERR RW", bs[0].getMode(), bs[1].getMode(), bs[2].getMode())
	}
	fmu.Lock()
	if len(failed) != 1 || failed[0] != reps[1].addr {
		t.Fatalf("onError calls %v", failed)
	}
	fmu.Unlock()
	if !bytes.Equal(reps[0].snapshot(), reps[2].snapshot()) {
		t.Fatal("surviving replicas differ")
	}
	reps[0].srv.Close()
	reps[2].srv.Close()
	if _, err := r.WriteAt(p, 0); !errors.Is(err, frontend.ErrNoBackend) {
		t.Fatalf("write with no replica: %v", err)
	}
}

// TestReplicatorFlushReachesAll: a FLUSH reaches every replica that listed
// the flush extension and none of the others (a Longhorn replica would
// never answer it); it completes without waiting on them.
func TestReplicatorFlushReachesAll(t *testing.T) {
	reps := []*memReplica{newMemReplica(t, 1<<16), newMemReplica(t, 1<<16), newMemReplica(t, 1<<16)}
	ours := dataconn.Options{Flush: true, Timeout: time.Second}
	longhorn := dataconn.Options{Timeout: time.Second}
	r := newMixedReplicator(t, 1<<16, reps, []dataconn.Options{ours, longhorn, ours})
	start := time.Now()
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("flush took %v", d)
	}
	for i, want := range []int{1, 0, 1} {
		m := reps[i]
		m.mu.Lock()
		if m.flushes != want {
			t.Errorf("replica %d saw %d flushes, want %d", i, m.flushes, want)
		}
		m.mu.Unlock()
	}
	for _, b := range r.list() {
		if b.getMode() != ModeRW {
			t.Fatalf("replica %s is %v after the flush", b.addr, b.getMode())
		}
	}
}

// TestPickReader: the replica used last is kept while it has fewer than
// stickyReads reads in flight; then the RW replica with the fewest reads in
// flight is chosen and kept in turn; WO and ERR replicas are never chosen.
func TestPickReader(t *testing.T) {
	var r replicator
	bs := make([]*backend, 3)
	for i := range bs {
		bs[i] = &backend{addr: fmt.Sprintf("tcp://r%d:1", i)}
		bs[i].mode.Store(int32(ModeRW))
	}
	if got := r.pickReader(nil); got != -1 {
		t.Fatalf("no replicas: %d, want -1", got)
	}
	for i := 0; i < 5; i++ {
		if got := r.pickReader(bs); got != 0 {
			t.Fatalf("idle replicas, pick %d: %d, want 0 (sticky)", i, got)
		}
	}
	bs[0].reads.Store(stickyReads - 1)
	if got := r.pickReader(bs); got != 0 {
		t.Fatalf("loads %d,0,0: %d, want 0 (below stickyReads)", stickyReads-1, got)
	}
	bs[0].reads.Store(stickyReads)
	bs[1].reads.Store(1)
	bs[2].reads.Store(1)
	if got := r.pickReader(bs); got != 1 {
		t.Fatalf("loads %d,1,1: %d, want 1", stickyReads, got)
	}
	bs[1].reads.Store(3)
	if got := r.pickReader(bs); got != 1 {
		t.Fatalf("loads %d,3,1: %d, want 1 (now the one used last)", stickyReads, got)
	}
	bs[1].reads.Store(stickyReads + 1)
	if got := r.pickReader(bs); got != 2 {
		t.Fatalf("loads %d,%d,1: %d, want 2", stickyReads, stickyReads+1, got)
	}
	bs[2].mode.Store(int32(ModeWO))
	if got := r.pickReader(bs); got != 0 {
		t.Fatalf("loads %d,%d,WO: %d, want 0", stickyReads, stickyReads+1, got)
	}
	bs[0].mode.Store(int32(ModeERR))
	bs[1].mode.Store(int32(ModeERR))
	if got := r.pickReader(bs); got != -1 {
		t.Fatalf("no RW replica: %d, want -1", got)
	}
}

package controller

import (
	"sync"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/dataconn"
)

// fakeClock is a settable clock for ioMetrics.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// TestIOMetricsWindows: a query reports the last completed 1-second window
// (Longhorn's latestMetrics), the same for every query in a window, zero
// for an idle window, and never the window in progress.
func TestIOMetricsWindows(t *testing.T) {
	base := time.Unix(1_000_000, 0)
	clk := &fakeClock{t: base}
	m := &ioMetrics{now: clk.now}
	at := func(d time.Duration) { clk.set(base.Add(d)) }
	op := func(write bool, n int, lat time.Duration) { m.record(write, n, lat) }

	if got := m.snapshot(); got != (Metrics{}) {
		t.Fatalf("before any I/O: %+v", got)
	}
	// Window 0: 4 writes of 64 KiB (latencies 1..4 ms) and 2 reads of 4 KiB.
	at(100 * time.Millisecond)
	for i := 1; i <= 4; i++ {
		op(true, 64<<10, time.Duration(i)*time.Millisecond)
	}
	op(false, 4096, 3*time.Millisecond)
	at(900 * time.Millisecond)
	op(false, 4096, 5*time.Millisecond)
	if got := m.snapshot(); got != (Metrics{}) {
		t.Fatalf("the window in progress was reported: %+v", got)
	}
	// Window 1: one write; window 0 is reported, to every caller alike.
	at(1200 * time.Millisecond)
	op(true, 512, time.Millisecond)
	want := Metrics{WriteThroughput: 4 * 64 << 10, WriteIOPS: 4, WriteLatency: uint64(2500 * time.Microsecond),
		ReadThroughput: 8192, ReadIOPS: 2, ReadLatency: uint64(4 * time.Millisecond)}
	for i := 0; i < 3; i++ {
		if got := m.snapshot(); got != want {
			t.Fatalf("query %d in window 1: %+v, want %+v", i, got, want)
		}
	}
	at(2500 * time.Millisecond)
	if got, want := m.snapshot(), (Metrics{WriteThroughput: 512, WriteIOPS: 1, WriteLatency: uint64(time.Millisecond)}); got != want {
		t.Fatalf("window 2 reports window 1: %+v, want %+v", got, want)
	}
	// Windows 2 and 3 idle: zero, though the bucket of window 1 still holds it.
	at(3100 * time.Millisecond)
	if got := m.snapshot(); got != (Metrics{}) {
		t.Fatalf("after an idle window: %+v", got)
	}
	// Window 5 reuses window 1's bucket: cleared first.
	at(5 * time.Second)
	op(false, 1024, 2*time.Millisecond)
	at(6 * time.Second)
	if got, want := m.snapshot(), (Metrics{ReadThroughput: 1024, ReadIOPS: 1, ReadLatency: uint64(2 * time.Millisecond)}); got != want {
		t.Fatalf("window 5: %+v, want %+v", got, want)
	}
}

// TestIOMetricsConcurrent: operations recorded from many goroutines in one
// window are all counted (run with -race).
func TestIOMetricsConcurrent(t *testing.T) {
	base := time.Unix(2_000_000, 0)
	clk := &fakeClock{t: base.Add(10 * time.Millisecond)}
	m := &ioMetrics{now: clk.now}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				m.record(i%2 == 0, 4096, time.Microsecond)
			}
		}()
	}
	wg.Wait()
	clk.set(base.Add(1500 * time.Millisecond))
	got := m.snapshot()
	if got.WriteIOPS != 2000 || got.ReadIOPS != 2000 || got.WriteThroughput != 2000*4096 || got.ReadThroughput != 2000*4096 {
		t.Fatalf("%+v", got)
	}
}

// TestReplicatorRecordsMetrics: the replicator counts each successful
// frontend read and write once with its length, not the failed ones.
func TestReplicatorRecordsMetrics(t *testing.T) {
	const size = 1 << 20
	r := newTestReplicator(t, size, []*memReplica{newMemReplica(t, size), newMemReplica(t, size)}, dataconn.Options{})
	base := time.Now().Truncate(time.Second)
	clk := &fakeClock{t: base}
	r.metrics.now = clk.now
	buf := make([]byte, 64<<10)
	for i := 0; i < 3; i++ {
		if _, err := r.WriteAt(buf, int64(i)*int64(len(buf))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.ReadAt(buf[:1000], 17); err != nil { // unaligned: one operation of 1000 bytes
		t.Fatal(err)
	}
	if _, err := r.WriteAt(buf, size); err == nil {
		t.Fatal("a write past the end succeeded")
	}
	clk.set(base.Add(time.Second))
	got := r.metrics.snapshot()
	if got.WriteIOPS != 3 || got.WriteThroughput != 3*64<<10 || got.ReadIOPS != 1 || got.ReadThroughput != 1000 {
		t.Fatalf("%+v", got)
	}
	if got.WriteLatency == 0 || got.ReadLatency == 0 || got.WriteLatency > uint64(time.Second) || got.ReadLatency > uint64(time.Second) {
		t.Fatalf("latency not measured: %+v", got)
	}
}

package controller

import (
	"sync"
	"sync/atomic"
	"time"
)

// ioMetrics counts the volume's I/O for MetricsGet with Longhorn's meaning
// (longhorn-engine Controller.recordMetrics / GetLatestMetics): the counts
// of the last completed 1-second window, whoever asks and however often:
// throughput in bytes/s, operations/s and the average latency in ns of the
// window's operations. Only I/O that succeeded is counted.
//
// Two buckets alternate by window number (wall-clock seconds since the
// epoch); the first operation of a window clears the bucket it reuses. A
// query reads the bucket of the window before the current one, which no
// operation writes any more, and reports zero when no operation ran then.
type ioMetrics struct {
	buckets [2]ioBucket
	mu      sync.Mutex // serializes a bucket's reset
	// now is the clock (time.Now when nil); tests set it.
	now func() time.Time
}

// ioBucket holds one window's counters.
type ioBucket struct {
	win                           atomic.Int64 // window number; counters are of this window
	readBytes, readOps, readNs    atomic.Uint64
	writeBytes, writeOps, writeNs atomic.Uint64
}

// metricsWindow is the period one MetricsGet answer covers.
const metricsWindow = time.Second

// Metrics is one MetricsGet answer.
type Metrics struct {
	ReadThroughput, WriteThroughput uint64 // bytes per second
	ReadLatency, WriteLatency       uint64 // average ns per operation
	ReadIOPS, WriteIOPS             uint64 // operations per second
}

func (m *ioMetrics) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

func windowOf(t time.Time) int64 { return t.UnixNano() / int64(metricsWindow) }

// bucket returns the bucket of window w, cleared first when it still holds
// an older window.
func (m *ioMetrics) bucket(w int64) *ioBucket {
	b := &m.buckets[w&1]
	if b.win.Load() == w {
		return b
	}
	m.mu.Lock()
	if b.win.Load() != w {
		for _, c := range []*atomic.Uint64{&b.readBytes, &b.readOps, &b.readNs, &b.writeBytes, &b.writeOps, &b.writeNs} {
			c.Store(0)
		}
		b.win.Store(w)
	}
	m.mu.Unlock()
	return b
}

// record counts one operation of n bytes that took lat and ended now, in
// the window it ended in.
func (m *ioMetrics) record(write bool, n int, lat time.Duration) {
	b := m.bucket(windowOf(m.clock()))
	ns := uint64(max(lat, 0))
	if write {
		b.writeBytes.Add(uint64(n))
		b.writeOps.Add(1)
		b.writeNs.Add(ns)
		return
	}
	b.readBytes.Add(uint64(n))
	b.readOps.Add(1)
	b.readNs.Add(ns)
}

// snapshot returns the metrics of the last completed window before now.
func (m *ioMetrics) snapshot() Metrics {
	w := windowOf(m.clock()) - 1
	b := &m.buckets[w&1]
	if b.win.Load() != w {
		return Metrics{}
	}
	avg := func(ns, ops uint64) uint64 {
		if ops == 0 {
			return 0
		}
		return ns / ops
	}
	rOps, wOps := b.readOps.Load(), b.writeOps.Load()
	return Metrics{ReadThroughput: b.readBytes.Load(), ReadIOPS: rOps, ReadLatency: avg(b.readNs.Load(), rOps),
		WriteThroughput: b.writeBytes.Load(), WriteIOPS: wOps, WriteLatency: avg(b.writeNs.Load(), wOps)}
}

// Metrics returns the volume's I/O rates of the last 1-second window
// (MetricsGet).
func (c *Controller) Metrics() Metrics { return c.r.metrics.snapshot() }

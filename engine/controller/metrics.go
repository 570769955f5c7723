package controller

import (
	"sync"
	"sync/atomic"
	"time"
)

// ioMetrics counts the volume's I/O for MetricsGet (Longhorn's
// ControllerService.MetricsGet: throughput in bytes/s, average latency in ns,
// operations/s). The counters are cumulative; a query reports the rates over
// the time since the previous query once that is at least metricsWindow
// (Longhorn reports its last 1-second window), and repeats the last answer
// when asked sooner.
type ioMetrics struct {
	readBytes, readOps, readNs    atomic.Uint64
	writeBytes, writeOps, writeNs atomic.Uint64

	mu   sync.Mutex
	at   time.Time
	prev [6]uint64
	last Metrics
}

// metricsWindow is the shortest period a MetricsGet answer covers.
const metricsWindow = time.Second

// Metrics is one MetricsGet answer.
type Metrics struct {
	ReadThroughput, WriteThroughput uint64 // bytes per second
	ReadLatency, WriteLatency       uint64 // average ns per operation
	ReadIOPS, WriteIOPS             uint64 // operations per second
}

func (m *ioMetrics) read(n int, start time.Time) {
	m.readBytes.Add(uint64(n))
	m.readOps.Add(1)
	m.readNs.Add(uint64(time.Since(start)))
}

func (m *ioMetrics) write(n int, start time.Time) {
	m.writeBytes.Add(uint64(n))
	m.writeOps.Add(1)
	m.writeNs.Add(uint64(time.Since(start)))
}

// snapshot returns the metrics of the last window ending at or before now.
func (m *ioMetrics) snapshot(now time.Time) Metrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := [6]uint64{m.readBytes.Load(), m.readOps.Load(), m.readNs.Load(),
		m.writeBytes.Load(), m.writeOps.Load(), m.writeNs.Load()}
	if m.at.IsZero() {
		m.at, m.prev = now, cur
		return m.last
	}
	el := now.Sub(m.at)
	if el < metricsWindow {
		return m.last
	}
	m.last = rates(m.prev, cur, el)
	m.at, m.prev = now, cur
	return m.last
}

// rates turns two counter samples el apart into a Metrics (pure).
func rates(prev, cur [6]uint64, el time.Duration) Metrics {
	var d [6]uint64
	for i := range d {
		d[i] = cur[i] - prev[i]
	}
	per := func(v uint64) uint64 { return uint64(float64(v) / el.Seconds()) }
	avg := func(ns, ops uint64) uint64 {
		if ops == 0 {
			return 0
		}
		return ns / ops
	}
	return Metrics{ReadThroughput: per(d[0]), ReadIOPS: per(d[1]), ReadLatency: avg(d[2], d[1]),
		WriteThroughput: per(d[3]), WriteIOPS: per(d[4]), WriteLatency: avg(d[5], d[4])}
}

// Metrics returns the volume's I/O rates (MetricsGet).
func (c *Controller) Metrics() Metrics { return c.r.metrics.snapshot(time.Now()) }

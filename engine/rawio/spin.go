package rawio

import (
	"net"
	"time"
)

// RequestSpin is how long a server's reader whose client sends one request
// at a time spins for the next request before it parks (Conn.SetReadSpin):
// about the time a client on the same node takes from one answer to its
// next request (fio's nbd and libiscsi engines: 10-30 us on the benchmark
// VM when its processor is not woken from idle).
const RequestSpin = 50 * time.Microsecond

// SpinRun is how many requests in a row must have arrived alone (nothing
// else in flight, nothing queued behind them) before the reader spins: a
// sustained queue depth of 1, not a dip of a deep queue, where the
// processors are busy and a spinning reader takes one from the requests
// that need it.
const SpinRun = 8

// DepthOne tracks whether a connection's client sends one request at a
// time, and so how long the connection's reader may spin for the next one.
// Only the reading goroutine uses it.
//
// Why: at queue depth 1 every request found the reader parked, and waking
// it (epoll, futex, an idle vCPU woken by an interrupt) cost 20-30 us of
// scheduling delay on the benchmark VM (perf sched: 25 us mean per wake-up
// of the controller's threads), as long as the engine's whole work for a 4
// KiB read from a local replica.
type DepthOne struct{ run int }

// Observe records whether the request just read arrived alone.
func (d *DepthOne) Observe(alone bool) {
	if !alone {
		d.run = 0
	} else if d.run < SpinRun {
		d.run++
	}
}

// Spin returns how long the next read may spin: RequestSpin after SpinRun
// requests in a row arrived alone, else 0.
func (d *DepthOne) Spin() time.Duration {
	if d.run >= SpinRun {
		return RequestSpin
	}
	return 0
}

// SetReadSpin sets nc's read spin (Conn.SetReadSpin) when nc is a *Conn;
// other connections never spin.
func SetReadSpin(nc net.Conn, d time.Duration) {
	if c, ok := nc.(*Conn); ok {
		c.SetReadSpin(d)
	}
}

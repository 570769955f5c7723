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

// MaxSpinRun bounds the lone requests in a row a reader waits for after
// spins ran out (DepthOne.Spun): at 20k requests per second about 50 ms.
const MaxSpinRun = 1024

// DepthOne tracks whether a connection's client sends one request at a
// time, and so how long the connection's reader may spin for the next one.
// Only the reading goroutine uses it.
//
// Why: at queue depth 1 every request found the reader parked, and waking
// it (epoll, futex, an idle vCPU woken by an interrupt) cost 20-30 us of
// scheduling delay on the benchmark VM (perf sched: 25 us mean per wake-up
// of the controller's threads), as long as the engine's whole work for a 4
// KiB read from a local replica. A spin that runs out is a processor spent
// for nothing, and spins run out when the processors are busy (the client
// waits for one): each doubles the run of lone requests needed before the
// next spin, up to MaxSpinRun, and a spin that catches its request sets it
// back to SpinRun. Nor does a reader spin while other tasks wait for a
// processor (the CPU pressure of the last 100 ms, pressure.busy).
type DepthOne struct{ run, need int }

func (d *DepthOne) needed() int {
	if d.need == 0 {
		return SpinRun
	}
	return d.need
}

// Observe records whether the request just read arrived alone.
func (d *DepthOne) Observe(alone bool) {
	if !alone {
		d.run = 0
	} else if d.run < d.needed() {
		d.run++
	}
}

// Spun records the outcome of a read that spun (Spin was above 0): out is
// true when the spin ran out before the request came (Conn.SpunOut).
func (d *DepthOne) Spun(out bool) {
	if !out {
		d.need = SpinRun
		return
	}
	d.need = min(2*d.needed(), MaxSpinRun)
	d.run = 0
}

// Spin returns how long the next read may spin: RequestSpin after enough
// requests in a row arrived alone (SpinRun, more after spins that ran
// out), else 0.
func (d *DepthOne) Spin() time.Duration {
	if d.run >= d.needed() && !cpuPressure.busy(time.Now()) {
		return RequestSpin
	}
	return 0
}

// BeforeRead sets nc's spin for the read of the next request (Spin) when
// buffered, the bytes the reader already holds, is 0, else no spin; it
// returns whether the read may spin, for AfterRead.
func (d *DepthOne) BeforeRead(nc net.Conn, buffered int) bool {
	var spin time.Duration
	if buffered == 0 {
		spin = d.Spin()
	}
	SetReadSpin(nc, spin)
	return spin > 0
}

// AfterRead records the outcome of that read when it could spin (Spun).
func (d *DepthOne) AfterRead(nc net.Conn, spun bool) {
	if spun {
		d.Spun(SpunOut(nc))
	}
}

// SetReadSpin sets nc's read spin (Conn.SetReadSpin) when nc is a *Conn;
// other connections never spin.
func SetReadSpin(nc net.Conn, d time.Duration) {
	if c, ok := nc.(*Conn); ok {
		c.SetReadSpin(d)
	}
}

// SpunOut is Conn.SpunOut for a *Conn, false for other connections.
func SpunOut(nc net.Conn) bool {
	c, ok := nc.(*Conn)
	return ok && c.SpunOut()
}

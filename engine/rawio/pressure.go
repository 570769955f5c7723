package rawio

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// pressurePath is the kernel's CPU pressure (PSI) file: a line
// "some avg10=A avg60=B avg300=C total=T" where T counts the microseconds
// in which at least one runnable task waited for a processor
// (Documentation/accounting/psi.rst).
const pressurePath = "/proc/pressure/cpu"

// pressureWindow is how long one reading of the CPU pressure holds.
const pressureWindow = 100 * time.Millisecond

// spinMaxStall is the share of a window, in per mille, in which tasks may
// have waited for a processor for readers to still spin: above it a
// spinning reader takes a processor that others are queued for (measured:
// under a rebuild's copy, stalls 30-50 %, the spin slowed the copy by
// 25-40 %).
const spinMaxStall = 100

// cpuPressure tells whether tasks waited for a processor lately; one
// per process, read at most once per pressureWindow.
var cpuPressure = &pressure{path: pressurePath}

type pressure struct {
	path string

	// next (Unix nanoseconds) is when the last reading goes stale, and
	// contended that reading: busy answers from them without a lock until
	// then, as it is called for every request a reader may spin for.
	next      atomic.Int64
	contended atomic.Bool

	mu     sync.Mutex // the file and the last total, for the refresh
	f      *os.File
	failed bool
	at     time.Time
	total  uint64
	buf    [256]byte
}

// busy reports whether, over the last window, tasks waited for a
// processor more than spinMaxStall per mille of the time. Without PSI
// (an older kernel, psi=0) it is always false.
func (p *pressure) busy(now time.Time) bool {
	if now.UnixNano() < p.next.Load() || !p.mu.TryLock() {
		return p.contended.Load() // fresh, or another reader refreshes it
	}
	defer p.mu.Unlock()
	if p.failed {
		p.next.Store(math.MaxInt64)
		return false
	}
	total, ok := p.read()
	if !ok {
		p.failed = true
		p.contended.Store(false)
		p.next.Store(math.MaxInt64)
		return false
	}
	if !p.at.IsZero() {
		p.contended.Store(stalled(total-p.total, now.Sub(p.at)))
	}
	p.at, p.total = now, total
	p.next.Store(now.Add(pressureWindow).UnixNano())
	return p.contended.Load()
}

// stalled reports whether stall microseconds over a window of d exceed
// spinMaxStall per mille of it.
func stalled(stall uint64, d time.Duration) bool {
	us := uint64(d.Microseconds())
	return us > 0 && stall*1000 > us*spinMaxStall
}

// read returns the "some" total of the pressure file.
func (p *pressure) read() (uint64, bool) {
	if p.f == nil {
		f, err := os.Open(p.path)
		if err != nil {
			return 0, false
		}
		p.f = f
	}
	n, err := p.f.ReadAt(p.buf[:], 0)
	if n == 0 && err != nil {
		return 0, false
	}
	return parseSomeTotal(p.buf[:n])
}

// parseSomeTotal returns T of the "some ... total=T" line of a PSI file.
func parseSomeTotal(b []byte) (uint64, bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.HasPrefix(line, []byte("some ")) {
		return 0, false
	}
	_, v, ok := bytes.Cut(line, []byte("total="))
	if !ok {
		return 0, false
	}
	t, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
	return t, err == nil
}

package controller

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/frontend"
)

// SectorSize is the engine's I/O unit (Longhorn's VolumeSectorSize): every
// request a replica sees is aligned to it.
const SectorSize = 4096

// maxChunk is the largest single request sent to a replica; bigger client
// requests are split and the pieces sent at once (they spread over the
// connections).
const maxChunk = 4 << 20

// stickyReads is how many reads in flight the replica used last may have
// before the next read goes to a less loaded one (pickReader).
const stickyReads = 16

// maxFanout bounds the replicas one request can go to without allocating.
const maxFanout = 16

// Mode is a replica's mode as the engine sees it (Longhorn's types.Mode).
type Mode int32

// Replica modes. WO receives writes but no reads (rebuilding); ERR receives
// nothing and stays listed until removed.
const (
	ModeERR Mode = iota
	ModeWO
	ModeRW
)

func (m Mode) String() string {
	switch m {
	case ModeRW:
		return "RW"
	case ModeWO:
		return "WO"
	default:
		return "ERR"
	}
}

// ParseMode parses "RW", "WO" or "ERR".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "RW":
		return ModeRW, nil
	case "WO":
		return ModeWO, nil
	case "ERR":
		return ModeERR, nil
	}
	return ModeERR, fmt.Errorf("replica mode %q: want RW, WO or ERR", s)
}

// Errors of the I/O path.
var (
	// ErrExpanding is returned for unmap during an expansion, as Longhorn does.
	ErrExpanding = errors.New("controller: volume is expanding")
)

// backend is one replica on the data path.
type backend struct {
	addr string           // "tcp://HOST:P"
	mode atomic.Int32     // Mode
	data *dataconn.Client // nil for a replica that was unreachable when added
	// reads is the number of reads in flight on this replica (readFrom).
	reads atomic.Int32
	rem   *remote // nil in replicator-only tests
	// instanceName is the replica's --replica-instance-name, when known.
	instanceName string
	// errMsg is why the replica became ERR (guarded by errMu).
	errMu  sync.Mutex
	errMsg string
	errAt  time.Time
}

func (b *backend) getMode() Mode { return Mode(b.mode.Load()) }

// replicator is the I/O half of the controller: it fans writes out to every
// RW and WO replica and reads from RW replicas round-robin. ioMu is held shared
// by every request and exclusively by anything that must see no I/O in flight
// (snapshot, membership changes, expansion).
type replicator struct {
	ioMu sync.RWMutex
	size int64 // guarded by ioMu
	// set is the replica list. It is replaced (never changed in place) with
	// ioMu held exclusively, and read without locks by markERR.
	set atomic.Pointer[[]*backend]
	rr  atomic.Uint32
	// lastRead is the list index of the replica chosen for the last read.
	lastRead atomic.Uint32
	// expanding is set while an expansion runs (unmap is refused then).
	expanding atomic.Bool
	// unmapSkipped is set once an unmap was skipped for a rebuild (logged once).
	unmapSkipped atomic.Bool

	// sectorLocks serialize read-modify-write of partial sectors.
	sectorLocks [64]sync.Mutex

	metrics ioMetrics

	timeout time.Duration
	log     logrus.FieldLogger
	// onError is called (without locks) after a replica became ERR.
	onError func(b *backend, err error)
}

// Size is the volume size in bytes (frontend.Backend).
func (r *replicator) Size() int64 {
	r.ioMu.RLock()
	defer r.ioMu.RUnlock()
	return r.size
}

func (r *replicator) checkRange(n int, off int64) error {
	if off < 0 || off+int64(n) > r.size {
		return fmt.Errorf("%w: %d bytes at %d, volume size %d", frontend.ErrOutOfRange, n, off, r.size)
	}
	return nil
}

func aligned(n int, off int64) bool { return off%SectorSize == 0 && n%SectorSize == 0 }

// ReadAt reads len(p) bytes at off from one RW replica (frontend.Backend).
func (r *replicator) ReadAt(p []byte, off int64) (n int, err error) {
	t0 := time.Now()
	r.ioMu.RLock()
	defer r.ioMu.RUnlock()
	if err := r.checkRange(len(p), off); err != nil {
		return 0, err
	}
	defer func() {
		if err == nil {
			r.metrics.record(false, len(p), time.Since(t0))
		}
	}()
	if aligned(len(p), off) {
		return r.readAligned(p, off)
	}
	start := off &^ (SectorSize - 1)
	end := (off + int64(len(p)) + SectorSize - 1) &^ (SectorSize - 1)
	buf := bufpool.Get(int(end - start))
	defer bufpool.Put(buf)
	if _, err := r.readAligned(buf, start); err != nil {
		return 0, err
	}
	return copy(p, buf[off-start:]), nil
}

// readAligned reads from the RW replica with the fewest reads in flight and
// falls back to the others in turn until one answers; a replica that fails is
// marked ERR.
//
// A replica this engine can read directly (dataconn.Client.ReadDirect) goes
// first: such a read costs no replica process and queues nowhere, so the
// load spreading of pickReader does not apply to it. ReadDirect declines at
// once where it cannot serve (a remote replica, no current view; it then
// fetches one in the background), and a declined read goes through a
// replica below, never to ReadDirect twice.
func (r *replicator) readAligned(p []byte, off int64) (int, error) {
	bs := r.list()
	for _, b := range bs {
		if b.getMode() == ModeRW && b.data != nil && b.data.ReadDirect(p, off) {
			return len(p), nil
		}
	}
	n := len(bs)
	first := r.pickReader(bs)
	if first < 0 {
		return 0, frontend.ErrNoBackend
	}
	var lastErr error
	for i := 0; i < n; i++ {
		b := bs[(first+i)%n]
		if b.getMode() != ModeRW {
			continue
		}
		if err := r.readFrom(b, p, off); err != nil {
			lastErr = err
			r.markERR(b, err)
			continue
		}
		return len(p), nil
	}
	if lastErr != nil {
		return 0, fmt.Errorf("%w: last error: %v", frontend.ErrNoBackend, lastErr)
	}
	return 0, frontend.ErrNoBackend
}

// pickReader returns the index in bs of the RW replica that serves the next
// read, or -1 when there is none. The replica used last keeps getting reads
// while it has fewer than stickyReads in flight; past that, the RW replica
// with the fewest reads in flight takes over (and becomes the one used last).
//
// Why: a replica process answers every read it finds queued on a connection
// with one wake-up and one writev, so concentrated reads cost it less per
// read than reads spread thinly over all replicas, and a single reader
// (queue depth 1) stays on one process that is awake and cache-warm.
// Longhorn round-robins every read; measured on the benchmark (3 replicas on
// one 2-vCPU node, same run): at depth 1 round-robin ran 25-35 % slower than
// one replica; at depth 32 spreading over the least loaded replica ran 4 KiB
// reads at 0.37x of nbdkit, keeping a replica up to 8 reads 0.55x, up to 16
// a further +12 %, up to 32 (everything on one replica) -12 % against 16.
// A replica past stickyReads in flight is busy enough for the others to help.
func (r *replicator) pickReader(bs []*backend) int {
	n := len(bs)
	if n == 0 {
		return -1
	}
	last := int(r.lastRead.Load())
	best, load := -1, int32(0)
	for k := 0; k < n; k++ {
		i := (last + k) % n
		b := bs[i]
		if b.getMode() != ModeRW {
			continue
		}
		l := b.reads.Load()
		if i == last && l < stickyReads {
			return i
		}
		if best < 0 || l < load {
			best, load = i, l
		}
	}
	if best >= 0 && best != last {
		r.lastRead.Store(uint32(best))
	}
	return best
}

// readFrom reads p at off through replica b's process (readAligned has
// already tried the direct reads).
func (r *replicator) readFrom(b *backend, p []byte, off int64) error {
	b.reads.Add(1)
	defer b.reads.Add(-1)
	var ops [maxFanout]*dataconn.Op
	k := 0
	for done := 0; done < len(p); {
		c := min(len(p)-done, maxChunk)
		if k == len(ops) {
			if err := waitAll(ops[:k]); err != nil {
				return err
			}
			k = 0
		}
		ops[k] = b.data.Start(dataconn.TypeRead, p[done:done+c], off+int64(done), uint32(c))
		k++
		done += c
	}
	return waitAll(ops[:k])
}

func waitAll(ops []*dataconn.Op) error {
	var first error
	for _, op := range ops {
		if _, err := op.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WriteAt writes p at off to every RW and WO replica (frontend.Backend).
// Partial sectors are read from an RW replica, merged and written whole, with
// the partial sectors locked so that two such writes cannot lose each other.
func (r *replicator) WriteAt(p []byte, off int64) (n int, err error) {
	t0 := time.Now()
	r.ioMu.RLock()
	defer r.ioMu.RUnlock()
	if err := r.checkRange(len(p), off); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	defer func() {
		if err == nil {
			r.metrics.record(true, len(p), time.Since(t0))
		}
	}()
	if aligned(len(p), off) {
		return len(p), r.fanout(dataconn.TypeWrite, p, off, 0)
	}
	if err := r.rmw(off, len(p), func(buf []byte, delta int) { copy(buf[delta:], p) }); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rmw aligns the byte range [off, off+n) to sectors, fills the partial edge
// sectors from an RW replica, lets fill write the new bytes at buf[delta:],
// and writes the aligned buffer to all replicas. Caller holds ioMu shared.
func (r *replicator) rmw(off int64, n int, fill func(buf []byte, delta int)) error {
	start := off &^ (SectorSize - 1)
	end := (off + int64(n) + SectorSize - 1) &^ (SectorSize - 1)
	first, last := start/SectorSize, end/SectorSize-1
	unlock := r.lockSectors(first, last)
	defer unlock()
	buf := bufpool.Get(int(end - start))
	defer bufpool.Put(buf)
	if off != start {
		if _, err := r.readAligned(buf[:SectorSize], start); err != nil {
			return err
		}
	}
	if tail := off + int64(n); tail != end && (last != first || off == start) {
		if _, err := r.readAligned(buf[len(buf)-SectorSize:], end-SectorSize); err != nil {
			return err
		}
	}
	fill(buf, int(off-start))
	return r.fanout(dataconn.TypeWrite, buf, start, 0)
}

func (r *replicator) lockSectors(first, last int64) func() {
	a, b := first%int64(len(r.sectorLocks)), last%int64(len(r.sectorLocks))
	if a > b {
		a, b = b, a
	}
	r.sectorLocks[a].Lock()
	if b != a {
		r.sectorLocks[b].Lock()
	}
	return func() {
		if b != a {
			r.sectorLocks[b].Unlock()
		}
		r.sectorLocks[a].Unlock()
	}
}

// UnmapAt discards length bytes at off on every replica (frontend.Backend).
// Whole sectors are unmapped; partial sectors at the edges are zeroed by
// read-modify-write so the whole range reads back as zeroes (unless an older
// snapshot shows through, which is the replica's rule for unmap).
func (r *replicator) UnmapAt(length uint32, off int64) (int, error) {
	r.ioMu.RLock()
	defer r.ioMu.RUnlock()
	if err := r.checkRange(int(length), off); err != nil {
		return 0, err
	}
	if r.expanding.Load() {
		return 0, ErrExpanding
	}
	if r.rebuilding() {
		// The rebuilding replica's older layers are still being copied, so
		// it cannot decide per sector as the RW replicas do, and unmapping
		// only some replicas would make them differ. As Longhorn's fix
		// (longhorn-engine#1008): the unmap succeeds and changes nothing
		// on any replica (a valid unmap result: the range keeps the data
		// from before it); fstrim after the rebuild reclaims the space.
		if !r.unmapSkipped.Swap(true) {
			r.log.Warn("unmap skipped while a replica is rebuilding (WO); the data stays, trim again after the rebuild")
		}
		return int(length), nil
	}
	r.unmapSkipped.Store(false)
	end := off + int64(length)
	inner0 := (off + SectorSize - 1) &^ (SectorSize - 1)
	inner1 := end &^ (SectorSize - 1)
	if inner1 <= inner0 {
		// No whole sector inside: zero the bytes.
		return int(length), r.zeroRange(off, end)
	}
	if inner0 > off {
		if err := r.zeroRange(off, inner0); err != nil {
			return 0, err
		}
	}
	if end > inner1 {
		if err := r.zeroRange(inner1, end); err != nil {
			return 0, err
		}
	}
	for o := inner0; o < inner1; o += maxChunk {
		c := min(inner1-o, maxChunk)
		if err := r.fanout(dataconn.TypeUnmap, nil, o, uint32(c)); err != nil {
			return 0, err
		}
	}
	return int(length), nil
}

// rebuilding reports whether a replica is WO.
func (r *replicator) rebuilding() bool {
	for _, b := range r.list() {
		if b.getMode() == ModeWO {
			return true
		}
	}
	return false
}

func (r *replicator) zeroRange(from, to int64) error {
	if from == to {
		return nil
	}
	return r.rmw(from, int(to-from), func(buf []byte, delta int) { clear(buf[delta : delta+int(to-from)]) })
}

// Flush asks every RW and WO replica to make acknowledged writes durable and
// returns once they all answered (frontend.Backend).
func (r *replicator) Flush() error {
	r.ioMu.RLock()
	defer r.ioMu.RUnlock()
	return r.fanout(dataconn.TypeFlush, nil, 0, 0)
}

// fanout sends one request (split into maxChunk pieces for writes) to every RW
// and WO replica at once and waits for all. A replica that fails becomes ERR.
// The request succeeds when at least one RW replica did all of it.
func (r *replicator) fanout(typ dataconn.MsgType, p []byte, off int64, size uint32) error {
	var targets [maxFanout]*backend
	nt := 0
	for _, b := range r.list() {
		if m := b.getMode(); m == ModeRW || m == ModeWO {
			if nt == len(targets) {
				return fmt.Errorf("controller: more than %d replicas", maxFanout)
			}
			targets[nt] = b
			nt++
		}
	}
	if nt == 0 {
		return frontend.ErrNoBackend
	}
	var errs [maxFanout]error
	if typ == dataconn.TypeWrite && len(p) > maxChunk {
		for done := 0; done < len(p); done += maxChunk {
			c := min(len(p)-done, maxChunk)
			r.fanoutOnce(targets[:nt], errs[:nt], typ, p[done:done+c], off+int64(done), uint32(c))
		}
	} else {
		if typ == dataconn.TypeWrite {
			size = uint32(len(p))
		}
		r.fanoutOnce(targets[:nt], errs[:nt], typ, p, off, size)
	}
	okRW := 0
	var lastErr error
	for i, b := range targets[:nt] {
		if errs[i] != nil {
			lastErr = errs[i]
			r.markERR(b, errs[i])
		} else if b.getMode() == ModeRW {
			okRW++
		}
	}
	if okRW == 0 {
		if lastErr == nil {
			return frontend.ErrNoBackend
		}
		return fmt.Errorf("%w: %v on every RW replica: %v", frontend.ErrNoBackend, typ, lastErr)
	}
	return nil
}

// fanoutOnce starts the request on every target, then waits for each,
// recording the first error per target in errs. A write to a replica this
// engine can write directly (dataconn.Client.WriteDirect) is done here
// after the others were started, and goes to the replica when the direct
// write declines. That includes a WO replica being rebuilt: its head takes
// the volume's writes as an RW one's does (the rebuild syncs the snapshot
// files below it, and the reload at its end moves the view's sequence
// number, so a direct write never lands in a store that changed), and the
// client's writes skip a round trip through the replica process while the
// rebuild's copy keeps the CPUs busy.
func (r *replicator) fanoutOnce(targets []*backend, errs []error, typ dataconn.MsgType, p []byte, off int64, size uint32) {
	var ops [maxFanout]*dataconn.Op
	var direct [maxFanout]bool
	for i, b := range targets {
		if errs[i] != nil {
			continue
		}
		if typ == dataconn.TypeWrite && b.data.DirectCapable() {
			direct[i] = true
			continue
		}
		ops[i] = b.data.Start(typ, p, off, size)
	}
	for i, b := range targets {
		if direct[i] && !b.data.WriteDirect(p, off) {
			ops[i] = b.data.Start(typ, p, off, size)
		}
	}
	for i := range targets {
		if ops[i] == nil {
			continue
		}
		if _, err := ops[i].Wait(); err != nil && errs[i] == nil {
			errs[i] = err
		}
	}
}

// markERR sets b to ERR (once), closes its data connections and reports it.
// It takes no lock, so it is safe on the I/O path.
func (r *replicator) markERR(b *backend, err error) {
	for {
		m := b.mode.Load()
		if Mode(m) == ModeERR {
			return
		}
		if b.mode.CompareAndSwap(m, int32(ModeERR)) {
			break
		}
	}
	b.errMu.Lock()
	b.errMsg, b.errAt = err.Error(), time.Now()
	b.errMu.Unlock()
	r.log.WithError(err).WithField("replica", b.addr).Error("replica failed, marking ERR")
	if b.data != nil {
		go b.data.Close()
	}
	r.adjustTimeouts()
	if r.onError != nil {
		r.onError(b, err)
	}
}

// adjustTimeouts gives the last healthy RW replica twice the timeout, as
// Longhorn does, so a slow but alive last replica is not failed too eagerly;
// with several RW replicas every one has the normal timeout.
func (r *replicator) adjustTimeouts() {
	var alive []*backend
	for _, b := range r.list() {
		if b.getMode() == ModeRW && b.data != nil {
			alive = append(alive, b)
		}
	}
	t := r.timeout
	if len(alive) == 1 {
		t *= 2
	}
	for _, b := range alive {
		b.data.SetTimeout(t)
	}
}

// list returns the current replica list; callers must not modify it.
func (r *replicator) list() []*backend {
	if p := r.set.Load(); p != nil {
		return *p
	}
	return nil
}

// setList replaces the replica list. Caller holds ioMu exclusively.
func (r *replicator) setList(bs []*backend) {
	r.set.Store(&bs)
}

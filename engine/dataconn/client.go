package dataconn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/longhorn-go/longhorn/engine/rawio"
	"github.com/longhorn-go/longhorn/engine/shm"
)

// Client errors.
var (
	// ErrTimeout means a request got no answer within the client's timeout;
	// the client is failed afterwards.
	ErrTimeout = errors.New("dataconn: request timed out")
	// ErrClientClosed is returned for requests on a closed client.
	ErrClientClosed = errors.New("dataconn: client closed")
	// ErrClosedByPeer means the replica sent Close.
	ErrClosedByPeer = errors.New("dataconn: connection closed by replica")
	// ErrNoSpace is returned when the replica answered ENOSPC; it wraps
	// syscall.ENOSPC.
	ErrNoSpace = fmt.Errorf("dataconn: replica out of space: %w", syscall.ENOSPC)
)

// RemoteError is an error the replica reported (TypeError); the client stays
// usable after it.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return "replica: " + e.Msg }

// Options tune a Client. Zero values take the defaults.
type Options struct {
	// Conns is the number of TCP connections (default 2, Longhorn's
	// NumberOfConnections); requests are spread round-robin over them.
	Conns int
	// Timeout fails a request (and the whole client) when no answer came back
	// within it (default 8 s, Longhorn's engine-replica-timeout).
	Timeout time.Duration
	// PingInterval is how often each connection is pinged (default 2 s).
	PingInterval time.Duration
	// Flush says the replica serves TypeFlush (it listed ExtensionFlush).
	// Without it a Flush is complete at once and nothing is sent: Longhorn's
	// replica drops a type it does not know without an answer, and has no
	// flush because it acknowledges a write only once the write reached its
	// file (Longhorn's controller answers FLUSH without asking the
	// replicas).
	Flush bool
	// Local and Shm let DialReplica use the replica's local socket and
	// shared memory (the replica listed ExtensionLocal, ExtensionShm).
	Local, Shm bool
	// DirectRead lets a local client read the replica's files itself
	// (ReadDirect; the replica listed ExtensionDirectRead).
	DirectRead bool
}

// Extensions of the data connection a replica of this implementation
// serves, as it lists them in ReplicaService Replica.extensions. An engine
// uses one only with a replica that listed it; a Longhorn replica lists none.
const (
	// ExtensionFlush: the replica answers TypeFlush.
	ExtensionFlush = "flush"
	// ExtensionLocal: the replica serves on its local socket (LocalName).
	ExtensionLocal = "local-socket"
	// ExtensionShm: the replica takes ShmAttach on its local socket.
	ExtensionShm = "shared-memory"
	// ExtensionDirectRead: the replica gives read views (ReadView) on its
	// local socket. A replica with resource limits does not list it: reads
	// it does not make itself would escape its I/O and CPU limits.
	ExtensionDirectRead = "direct-read"
)

// OptionsFor sets opts' extension switches from the list a replica gave.
func OptionsFor(opts Options, extensions []string) Options {
	for _, e := range extensions {
		switch e {
		case ExtensionFlush:
			opts.Flush = true
		case ExtensionLocal:
			opts.Local = true
		case ExtensionShm:
			opts.Shm = true
		case ExtensionDirectRead:
			opts.DirectRead = true
		}
	}
	return opts
}

func (o Options) withDefaults() Options {
	if o.Conns <= 0 {
		o.Conns = 2
	}
	if o.Timeout <= 0 {
		o.Timeout = 8 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 2 * time.Second
	}
	return o
}

// Client is the engine side of the data connections to one replica. It is safe
// for concurrent use. Once any connection fails (I/O error, protocol error,
// timeout), the whole client fails: every pending and later request returns
// the error, and Done is closed, so the engine marks the replica ERR.
//
// There is no reader goroutine: a goroutine waiting for an answer (Op.Wait)
// reads the connection itself while no other does, completing whatever
// answers arrive, until its own is in; then it hands the reader role to
// another waiter. At queue depth 1 the request and its answer are thus
// handled by one goroutine, woken once by the network poller, with no
// goroutine hand-off (each hand-off wakes a second thread on an idle
// processor, which costs more than the request here). A connection nobody
// waits on is read by the pings (PingInterval), which is how a replica that
// died while idle is noticed.
type Client struct {
	addr  string
	local bool
	opts  Options

	// Shared memory with a local replica (shm.go); nil without.
	wregion, rregion *shm.Region

	conns    []*clientConn
	rr       atomic.Uint32
	inflight atomic.Int32 // requests sent and not answered, over all connections
	timeout  atomic.Int64 // ns

	direct directState // direct reads (direct.go)

	failOnce sync.Once
	failErr  error
	done     chan struct{}
	wg       sync.WaitGroup
}

// Dial opens opts.Conns connections to the data server at network/addr
// ("tcp", "HOST:PORT" or "unix", PATH) and starts the ping loop and the
// timeout watchdog.
func Dial(ctx context.Context, network, addr string, opts Options) (*Client, error) {
	return dialConns(ctx, network, addr, opts, false)
}

// dialConns is Dial; with useShm set, it offers shared memory on unix connections
// (attachShm) and uses it on those where the replica took it.
func dialConns(ctx context.Context, network, addr string, opts Options, useShm bool) (*Client, error) {
	opts = opts.withDefaults()
	c := &Client{addr: addr, opts: opts, done: make(chan struct{})}
	c.timeout.Store(int64(opts.Timeout))
	if useShm && shm.Arena() != nil {
		if r, err := shm.Create("longhorn-dataconn-read", readRegionSize); err == nil {
			c.wregion, c.rregion = shm.Arena(), r
		}
	}
	var d net.Dialer
	for i := 0; i < opts.Conns; i++ {
		nc, err := d.DialContext(ctx, network, addr)
		var shared bool
		if err == nil && c.rregion != nil {
			if shared, err = attachShm(nc, c.wregion, c.rregion); err != nil {
				nc.Close()
			}
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("dataconn: dial %s: %w", addr, err)
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		cc := newClientConn(c, rawio.Wrap(nc))
		cc.shm = shared
		c.conns = append(c.conns, cc)
	}
	c.wg.Add(1)
	go c.watch()
	return c, nil
}

// Addr is the address the client dialed.
func (c *Client) Addr() string { return c.addr }

// Done is closed once the client failed or was closed; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns the error that failed the client, or nil while it is healthy.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.failErr
	default:
		return nil
	}
}

// SetTimeout changes the per-request timeout (Longhorn gives the last healthy
// replica a longer one).
func (c *Client) SetTimeout(d time.Duration) { c.timeout.Store(int64(d)) }

// Close sends Close on every connection (best effort; only to a replica of
// this implementation, which listed an extension: Longhorn's client never
// sends Close and its replica drops it), closes them and waits for the
// client's goroutines. Pending requests fail with ErrClientClosed.
func (c *Client) Close() error {
	if c.opts.Flush || c.opts.Local {
		for _, cc := range c.conns {
			cc.sendClose()
		}
	}
	c.closeDirect()
	c.fail(ErrClientClosed)
	c.wg.Wait()
	c.releaseDirect()
	return nil
}

// fail records the first error, closes every connection and completes every
// pending request with it.
func (c *Client) fail(err error) {
	c.failOnce.Do(func() {
		c.failErr = err
		close(c.done)
		for _, cc := range c.conns {
			cc.breakConn(err)
		}
	})
}

// watch pings every connection and fails the client when a request is older
// than the timeout. Longhorn checks once a second; this checks four times per
// timeout, at most once a second.
func (c *Client) watch() {
	defer c.wg.Done()
	check := time.Duration(c.timeout.Load()) / 4
	if check > time.Second {
		check = time.Second
	}
	tick := time.NewTicker(check)
	defer tick.Stop()
	lastPing := time.Now()
	for {
		select {
		case <-c.done:
			return
		case now := <-tick.C:
			c.dropStaleView()
			if now.Sub(lastPing) >= c.opts.PingInterval {
				lastPing = now
				for _, cc := range c.conns {
					c.ping(cc)
				}
			}
			limit := nanotime() - c.timeout.Load()
			for _, cc := range c.conns {
				if cc.oldest() < limit {
					c.fail(fmt.Errorf("%w: no answer from %s within %v", ErrTimeout, c.addr, time.Duration(c.timeout.Load())))
					return
				}
			}
		}
	}
}

// ping sends a Ping and waits for its answer in a goroutine of its own, which
// reads the connection if nobody else does: a lost answer shows up as an old
// pending request in the watchdog, a closed connection as a read error.
func (c *Client) ping(cc *clientConn) {
	op := getOp(TypePing, nil, 0, 0)
	cc.submit(op)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_, _ = op.Wait()
	}()
}

// Start sends a request without waiting for it; Op.Wait returns its result.
// typ is TypeRead (fills p), TypeWrite (sends p), TypeUnmap (size bytes),
// TypeFlush or TypePing. p must stay untouched until Wait returns.
func (c *Client) Start(typ MsgType, p []byte, off int64, size uint32) *Op {
	op := getOp(typ, p, off, size)
	if typ == TypeFlush && !c.opts.Flush {
		op.complete(0, nil)
		return op
	}
	if len(p) > MaxDataLen || size > MaxDataLen {
		op.complete(0, fmt.Errorf("%w: request of %d bytes, split it", ErrTooLarge, max(len(p), int(size))))
		return op
	}
	cc := c.conns[int(c.rr.Add(1))%len(c.conns)]
	cc.submit(op)
	return op
}

// ReadAt reads len(p) bytes at off from the replica.
func (c *Client) ReadAt(p []byte, off int64) (int, error) {
	return c.Start(TypeRead, p, off, uint32(len(p))).Wait()
}

// WriteAt writes p at off on the replica.
func (c *Client) WriteAt(p []byte, off int64) (int, error) {
	return c.Start(TypeWrite, p, off, uint32(len(p))).Wait()
}

// UnmapAt discards length bytes at off on the replica.
func (c *Client) UnmapAt(length uint32, off int64) (int, error) {
	return c.Start(TypeUnmap, nil, off, length).Wait()
}

// Flush asks the replica to make every acknowledged write durable; with a
// replica that does not serve it (Options.Flush) it returns nil at once.
func (c *Client) Flush() error {
	_, err := c.Start(TypeFlush, nil, 0, 0).Wait()
	return err
}

// Ping round-trips a Ping on one connection.
func (c *Client) Ping() error {
	_, err := c.Start(TypePing, nil, 0, 0).Wait()
	return err
}

// PingAll round-trips a Ping on every connection and returns the first
// error. Once it returns nil the replica has accepted, and counts, each of
// the client's connections (the data server tracks a connection when it
// accepts it, which a TCP connect alone does not wait for).
func (c *Client) PingAll() error {
	ops := make([]*Op, len(c.conns))
	for i, cc := range c.conns {
		ops[i] = getOp(TypePing, nil, 0, 0)
		cc.submit(ops[i])
	}
	var first error
	for _, op := range ops {
		if _, err := op.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// clientConn is one connection: a pending table keyed by sequence number, a
// send queue written by whichever submitter finds no write in progress (so a
// burst of requests leaves in one writev), and the reader role, held by one
// waiting goroutine at a time (see Client).
type clientConn struct {
	c  *Client
	nc net.Conn
	br *bufio.Reader // used only by the goroutine holding the reader role
	// depth tells whether the reader may spin for an answer; used only by
	// the goroutine holding the reader role.
	depth rawio.DepthOne

	mu      sync.Mutex
	seq     uint32
	pending map[uint32]*Op
	queue   net.Buffers
	spare   net.Buffers
	wbuf    net.Buffers // the slice being written; a field so WriteTo does not allocate
	writing bool
	broken  error
	reading bool  // a goroutine holds the reader role
	waiters []*Op // parked Waits that may take the reader role (entries may be stale)
	shm     bool  // the replica mapped the Client's regions on this connection
}

// clientReadBuffer is the size of a connection's read buffer; larger read
// payloads that find it empty are read straight into the caller's buffer.
const clientReadBuffer = 64 << 10

func newClientConn(c *Client, nc net.Conn) *clientConn {
	return &clientConn{c: c, nc: nc, br: bufio.NewReaderSize(nc, clientReadBuffer), pending: make(map[uint32]*Op, 64)}
}

func (cc *clientConn) submit(op *Op) {
	cc.mu.Lock()
	if cc.broken != nil {
		err := cc.broken
		cc.mu.Unlock()
		op.complete(0, err)
		return
	}
	cc.seq++
	op.seq = cc.seq
	op.cc = cc
	op.start = nanotime()
	cc.pending[op.seq] = op
	cc.c.inflight.Add(1)
	h := Header{Seq: op.seq, Type: op.typ, Offset: op.off, Size: op.size}
	if op.typ == TypeWrite {
		h.DataLen = uint32(len(op.buf))
	}
	wire := op.hdr[:HeaderSize]
	if cc.shm {
		wire = cc.c.shmRef(op, &h)
	}
	h.Encode(op.hdr[:])
	cc.queue = append(cc.queue, wire)
	if h.Type == TypeWrite && h.DataLen > 0 {
		cc.queue = append(cc.queue, op.buf)
	}
	if cc.writing {
		cc.mu.Unlock()
		return
	}
	cc.writing = true
	cc.flushLocked()
}

// flushLocked writes the queue until it is empty; it is entered with mu held
// and returns with it released. Submitters arriving meanwhile only append.
//
// A submitter never waits for socket buffer space: when the socket is full
// (a replica that stopped reading, or a large write on a unix socket with its
// small buffer), the rest is written by a goroutine of its own and the
// submitter returns, so it can send the same request to the other replicas
// and wait for their answers (the stuck replica then times out alone).
func (cc *clientConn) flushLocked() { cc.flushQueue(false) }

func (cc *clientConn) flushQueue(wait bool) {
	for len(cc.queue) > 0 && cc.broken == nil {
		bufs := cc.queue
		cc.queue = cc.spare[:0]
		cc.mu.Unlock()
		cc.wbuf = bufs
		var err error
		if wait {
			_, err = rawio.Writev(cc.nc, &cc.wbuf)
		} else {
			var blocked bool
			if _, blocked, err = rawio.TryWritev(cc.nc, &cc.wbuf); blocked && err == nil {
				go cc.finishFlush(bufs) // ends once written or the connection is closed
				return
			}
		}
		cc.written(bufs, err)
	}
	cc.writing = false
	cc.mu.Unlock()
}

// finishFlush writes the rest of cc.wbuf (what TryWritev left of bufs),
// waiting for buffer space, then goes on with the queue.
func (cc *clientConn) finishFlush(bufs net.Buffers) {
	_, err := rawio.Writev(cc.nc, &cc.wbuf)
	cc.written(bufs, err)
	cc.flushQueue(true)
}

// written recycles bufs, the batch just written, and fails the client on a
// write error. It is entered without mu and returns with it held.
func (cc *clientConn) written(bufs net.Buffers, err error) {
	cc.wbuf = nil
	clear(bufs)
	cc.mu.Lock()
	cc.spare = bufs[:0]
	if err != nil {
		cc.mu.Unlock()
		cc.c.fail(fmt.Errorf("dataconn: write to %s: %w", cc.c.addr, err))
		cc.mu.Lock()
	}
}

// breakConn closes the connection and completes all pending requests with err.
func (cc *clientConn) breakConn(err error) {
	cc.mu.Lock()
	if cc.broken == nil {
		cc.broken = err
	}
	ops := make([]*Op, 0, len(cc.pending))
	for seq, op := range cc.pending {
		ops = append(ops, op)
		delete(cc.pending, seq)
		cc.c.inflight.Add(-1)
	}
	clear(cc.queue)
	cc.queue = cc.queue[:0]
	cc.mu.Unlock()
	cc.nc.Close()
	for _, op := range ops {
		op.complete(0, err)
	}
}

func (cc *clientConn) sendClose() {
	var hb [HeaderSize]byte
	h := Header{Type: TypeClose}
	h.Encode(hb[:])
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.broken == nil && !cc.writing {
		_ = cc.nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = cc.nc.Write(hb[:])
	}
}

// oldest returns the start time of the oldest pending request (nanotime), or
// the maximum int64 when none is pending.
func (cc *clientConn) oldest() int64 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	min := int64(1<<63 - 1)
	for _, op := range cc.pending {
		if op.start < min {
			min = op.start
		}
	}
	return min
}

func (cc *clientConn) take(seq uint32) *Op {
	cc.mu.Lock()
	op := cc.pending[seq]
	if op != nil {
		delete(cc.pending, seq)
		cc.c.inflight.Add(-1)
	}
	cc.mu.Unlock()
	return op
}

// await returns once op is complete. While no other goroutine reads the
// connection, the caller reads it (completing every answer that arrives) until
// op's answer is in, then hands the reader role to a parked waiter.
//
// Invariant (under mu): op is in cc.waiters exactly when op.parked is set, so
// a recycled Op is in no list.
func (cc *clientConn) await(op *Op) {
	cc.mu.Lock()
	for !op.finished.Load() {
		if !cc.reading && cc.broken == nil {
			cc.reading = true
			cc.mu.Unlock()
			cc.readUntil(op)
			cc.mu.Lock()
			cc.reading = false
			cc.handoffLocked()
			continue
		}
		// Another goroutine reads, or the connection broke (breakConn
		// completes every pending request): park until completed or handed
		// the reader role.
		op.parked = true
		cc.waiters = append(cc.waiters, op)
		cc.mu.Unlock()
		<-op.sig
		cc.mu.Lock()
		if op.parked { // woken by completion (or a stale token), not a hand-off
			cc.unparkLocked(op)
		}
	}
	cc.mu.Unlock()
}

// handoffLocked wakes the longest parked waiter whose request is still
// pending, so it takes the reader role. Caller holds mu and has just released
// the role.
func (cc *clientConn) handoffLocked() {
	i := 0
	for i < len(cc.waiters) {
		w := cc.waiters[i]
		i++
		w.parked = false
		if !w.finished.Load() {
			w.signal()
			break
		}
	}
	n := copy(cc.waiters, cc.waiters[i:])
	clear(cc.waiters[n:])
	cc.waiters = cc.waiters[:n]
}

// unparkLocked removes op from the waiters. Caller holds mu.
func (cc *clientConn) unparkLocked(op *Op) {
	for i, w := range cc.waiters {
		if w == op {
			n := copy(cc.waiters[i:], cc.waiters[i+1:])
			cc.waiters[i+n] = nil
			cc.waiters = cc.waiters[:i+n]
			break
		}
	}
	op.parked = false
}

// readUntil reads and completes answers until op is complete or the
// connection fails (which fails the client and so completes op). At a
// sustained queue depth of 1 the read of an answer spins for it before it
// parks (rawio.DepthOne: after rawio.SpinRun reads in a row that found at
// most one request in flight, backing off after spins that ran out, never
// while tasks wait for a processor; measured without the run: -14 % at
// depth 32).
func (cc *clientConn) readUntil(op *Op) {
	for !op.finished.Load() {
		spin := cc.beforeRead()
		err := cc.readOne(cc.br)
		cc.depth.AfterRead(cc.nc, spin)
		if err != nil {
			cc.c.fail(fmt.Errorf("dataconn: read from %s: %w", cc.c.addr, err))
			return
		}
	}
}

// beforeRead records the client's depth for the next read and sets its
// spin (rawio.DepthOne.BeforeRead); it reports whether the read may spin.
func (cc *clientConn) beforeRead() bool {
	cc.depth.Observe(cc.c.inflight.Load() <= 1)
	return cc.depth.BeforeRead(cc.nc, cc.br.Buffered())
}

// readOne decodes one response and completes its request.
func (cc *clientConn) readOne(br *bufio.Reader) error {
	h, err := readHeader(br)
	if err != nil {
		return err
	}
	if h.Type == TypeClose {
		return ErrClosedByPeer
	}
	op := cc.take(h.Seq)
	if op == nil {
		return fmt.Errorf("%w: response %v for unknown seq %d", ErrProtocol, h.Type, h.Seq)
	}
	n, opErr, err := readResult(br, &h, op)
	if err != nil {
		op.complete(0, err)
		return err
	}
	op.complete(n, opErr)
	return nil
}

// readResult reads the payload of response h to request op. It returns the
// request's byte count and error, or a connection-level error.
func readResult(br *bufio.Reader, h *Header, op *Op) (int, error, error) {
	switch h.Type {
	case TypeResponse:
		if op.typ != TypeRead {
			if h.DataLen != 0 {
				return 0, nil, fmt.Errorf("%w: %d payload bytes in answer to %v", ErrProtocol, h.DataLen, op.typ)
			}
			return int(h.Size), nil, nil
		}
		if op.slot != nil {
			n, err := op.fromSlot(h, len(op.buf))
			return n, nil, err
		}
		if int(h.DataLen) != len(op.buf) {
			return 0, nil, fmt.Errorf("%w: read of %d bytes answered with %d", ErrProtocol, len(op.buf), h.DataLen)
		}
		if _, err := io.ReadFull(br, op.buf); err != nil {
			return 0, nil, err
		}
		return len(op.buf), nil, nil
	case TypeEOF:
		if op.slot != nil {
			n, err := op.fromSlot(h, int(h.Size))
			return n, io.ErrUnexpectedEOF, err
		}
		if op.typ != TypeRead || int(h.DataLen) > len(op.buf) {
			return 0, nil, fmt.Errorf("%w: EOF with %d bytes in answer to %v", ErrProtocol, h.DataLen, op.typ)
		}
		if _, err := io.ReadFull(br, op.buf[:h.DataLen]); err != nil {
			return 0, nil, err
		}
		return int(h.DataLen), io.ErrUnexpectedEOF, nil
	case TypeError, TypeENOSPC:
		op.freeSlot()
		msg, err := readErrorText(br, h.DataLen)
		if err != nil {
			return 0, nil, err
		}
		if h.Type == TypeENOSPC || strings.Contains(msg, noSpaceText) {
			return 0, fmt.Errorf("%w: %s", ErrNoSpace, msg), nil
		}
		return 0, &RemoteError{Msg: msg}, nil
	default:
		return 0, nil, fmt.Errorf("%w: %v is not a response", ErrProtocol, h.Type)
	}
}

// Op is one request in flight. Wait returns its result and recycles it.
type Op struct {
	hdr   [HeaderSize + shmRefSize]byte
	typ   MsgType
	buf   []byte
	slot  []byte // the block of the Client's read region a ShmRead fills, nil otherwise
	off   int64
	size  uint32
	seq   uint32
	start int64
	cc    *clientConn // the connection it was sent on; nil if completed at once

	n        int
	err      error
	finished atomic.Bool
	parked   bool          // guarded by cc.mu: Wait sleeps on sig and may be handed the reader role
	sig      chan struct{} // capacity 1: completion or reader hand-off; spurious tokens are harmless
}

var opPool = sync.Pool{New: func() any { return &Op{sig: make(chan struct{}, 1)} }}

// doubleCompletions counts completions of an already complete request, which
// would be a bug in this package (the fuzz test checks it stays 0).
var doubleCompletions atomic.Int64

func getOp(typ MsgType, p []byte, off int64, size uint32) *Op {
	op := opPool.Get().(*Op)
	op.typ, op.buf, op.off, op.size = typ, p, off, size
	op.cc, op.slot = nil, nil
	op.finished.Store(false)
	select {
	case <-op.sig: // a stale token from the previous use
	default:
	}
	return op
}

func (op *Op) signal() {
	select {
	case op.sig <- struct{}{}:
	default:
	}
}

func (op *Op) complete(n int, err error) {
	if op.finished.Load() {
		doubleCompletions.Add(1)
		return
	}
	op.n, op.err = n, err
	op.finished.Store(true)
	op.signal()
}

// Wait blocks until the request completed and returns the byte count and error.
// The calling goroutine may read the connection meanwhile (see Client). The Op
// must not be used afterwards.
func (op *Op) Wait() (int, error) {
	if op.cc != nil {
		op.cc.await(op)
	}
	for !op.finished.Load() {
		<-op.sig
	}
	n, err := op.n, op.err
	op.buf, op.err, op.cc = nil, nil, nil
	if err == nil {
		// Answered requests are no longer referenced by the send queue.
		opPool.Put(op)
	}
	return n, err
}

var clockBase = time.Now()

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(clockBase)) }

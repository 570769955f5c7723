package dataconn

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/rawio"
	"github.com/longhorn-go/longhorn/engine/shm"
)

// Handler is what a data server serves: one replica's store. Offsets and
// lengths are bytes; the store decides which alignments it accepts and says so
// with an error. p passed to WriteAt may point into the connection's read
// buffer and must not be kept after WriteAt returns.
//
// io.EOF from ReadAt is sent as TypeEOF with the bytes read so far, any other
// error as TypeError with its text. A disk-full error (wrapping
// syscall.ENOSPC) goes as TypeError too, with "no space left on device" in
// its text: that is how Longhorn's replica reports it and what Longhorn's
// controller recognises (it takes TypeENOSPC for a success).
type Handler interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	UnmapAt(length uint32, off int64) (int, error)
	// Flush makes every write acknowledged so far durable.
	Flush() error
	// PingResponse returns nil while the replica can serve I/O.
	PingResponse() error
}

const (
	serverReadBuffer = 256 << 10
	// A batch of responses is written with one writev once no further complete
	// request is buffered, or when it reaches these limits.
	maxBatchMsgs  = 256
	maxBatchBytes = 4 << 20
)

// Server accepts data connections for one Handler. Each connection is served by
// one goroutine that decodes requests, runs them against the handler in order,
// and writes the responses of everything it could read without blocking in a
// single writev.
type Server struct {
	h   Handler
	log logrus.FieldLogger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	lns    map[net.Listener]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewServer returns a server for h.
func NewServer(h Handler, log logrus.FieldLogger) *Server {
	if log == nil {
		log = logrus.StandardLogger()
	}
	return &Server{h: h, log: log, conns: map[net.Conn]struct{}{}, lns: map[net.Listener]struct{}{}}
}

// Serve accepts connections on l until l or the server is closed. It returns
// nil after Close and the accept error otherwise.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.lns[l] = struct{}{}
	s.mu.Unlock()
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.lns, l)
			s.mu.Unlock()
			if closed {
				return nil
			}
			return err
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if !s.track(nc) {
			nc.Close()
			return nil
		}
		go func() {
			defer s.wg.Done()
			s.ServeConn(nc)
		}()
	}
}

func (s *Server) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[nc] = struct{}{}
	s.wg.Add(1)
	return true
}

// Close stops every listener passed to Serve, closes all connections and waits
// for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.lns {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Conns returns the number of connections accepted by Serve that are still
// being served (an engine keeps its connections open while it uses the
// replica).
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// ServeConn serves one connection until the peer closes it, sends Close, or
// breaks the protocol. It closes nc before returning.
func (s *Server) ServeConn(nc net.Conn) {
	rc := rawio.Wrap(nc)
	sc := &serverConn{h: s.h, nc: rc}
	err := sc.open(nc, rc)
	if err == nil {
		err = sc.loop()
	}
	sc.release()
	sc.closeShm()
	nc.Close()
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, errViewServed) {
		s.log.WithError(err).WithField("peer", nc.RemoteAddr().String()).Warn("dataconn: connection closed")
	}
}

// open sets up the read side; on a local (unix) connection it first takes
// the engine's shared memory offer, if any (acceptShm).
func (c *serverConn) open(nc, rc net.Conn) error {
	var r io.Reader = rc
	if uc, ok := nc.(*net.UnixConn); ok {
		prefix, err := c.acceptShm(uc)
		if err != nil {
			return err
		}
		if len(prefix) > 0 {
			r = io.MultiReader(bytes.NewReader(prefix), rc)
		}
	}
	c.br = bufio.NewReaderSize(r, serverReadBuffer)
	return nil
}

// serverConn is the state of one served connection: the pending response
// batch and the shared memory regions the engine passed (nil without).
type serverConn struct {
	h  Handler
	nc net.Conn
	br *bufio.Reader

	wregion, rregion *shm.Region

	out    net.Buffers
	wbuf   net.Buffers // the slice being written; a field so WriteTo does not allocate
	hdrs   [maxBatchMsgs * HeaderSize]byte
	nhdr   int
	nbytes int
	bufs   [][]byte // pooled buffers referenced by out
}

func (c *serverConn) loop() error {
	for {
		if c.nhdr > 0 && !bufferedMessage(c.br) {
			if err := c.flush(); err != nil {
				return err
			}
		}
		h, err := readHeader(c.br)
		if err != nil {
			return err
		}
		if err := h.ValidRequest(); err != nil {
			return err
		}
		if h.Type == TypeClose {
			_ = c.flush()
			return nil
		}
		if err := c.handle(&h); err != nil {
			return err
		}
		if c.nhdr == maxBatchMsgs || c.nbytes >= maxBatchBytes {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
}

// handle runs one request and queues its response.
func (c *serverConn) handle(h *Header) error {
	switch h.Type {
	case TypeRead:
		buf := bufpool.Get(int(h.Size))
		n, err := c.h.ReadAt(buf, h.Offset)
		c.bufs = append(c.bufs, buf)
		c.respondRead(h, n, err, buf)
	case TypeWrite:
		return c.handleWrite(h)
	case TypeShmWrite, TypeShmRead:
		return c.handleShm(h)
	case TypeUnmap:
		n, err := c.h.UnmapAt(h.Size, h.Offset)
		c.respondResult(h, n, err)
	case TypeFlush:
		c.respondResult(h, 0, c.h.Flush())
	case TypePing:
		c.respondResult(h, 0, c.h.PingResponse())
	}
	return nil
}

// handleWrite hands the payload to the handler straight from the read buffer
// when it fits, otherwise through a pooled buffer.
func (c *serverConn) handleWrite(h *Header) error {
	n := int(h.DataLen)
	var data []byte
	pooled := n > c.br.Size()
	if pooled {
		data = bufpool.Get(n)
		if _, err := io.ReadFull(c.br, data); err != nil {
			bufpool.Put(data)
			return err
		}
	} else {
		var err error
		if data, err = c.br.Peek(n); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	w, err := c.h.WriteAt(data, h.Offset)
	if pooled {
		bufpool.Put(data)
	} else {
		_, _ = c.br.Discard(n)
	}
	c.respondResult(h, w, err)
	return nil
}

// respondRead answers read request h after the handler read n bytes with err:
// Response, EOF with the n bytes, or Error. data is the buffer read into, sent
// as the payload; nil when the data went to shared memory (ShmRead).
func (c *serverConn) respondRead(h *Header, n int, err error, data []byte) {
	switch {
	case err == nil:
		c.respond(h, TypeResponse, h.Size, data)
	case errors.Is(err, io.EOF):
		c.respond(h, TypeEOF, uint32(n), data[:min(n, len(data))])
	default:
		c.respondErr(h, err)
	}
}

func (c *serverConn) respondResult(h *Header, n int, err error) {
	if err != nil {
		c.respondErr(h, err)
		return
	}
	c.respond(h, TypeResponse, uint32(n), nil)
}

// noSpaceText is the text Longhorn's controller looks for in an Error
// answer to tell a full disk (its handleErrorNoLock).
const noSpaceText = "no space left on device"

func (c *serverConn) respondErr(h *Header, err error) {
	msg := err.Error()
	if errors.Is(err, syscall.ENOSPC) && !strings.Contains(msg, noSpaceText) {
		msg += ": " + noSpaceText
	}
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText]
	}
	c.respond(h, TypeError, uint32(len(msg)), []byte(msg))
}

// respond queues the answer to request h; seq and offset are echoed, as
// Longhorn's server does (it answers with the request's header).
func (c *serverConn) respond(req *Header, typ MsgType, size uint32, data []byte) {
	hb := c.hdrs[c.nhdr*HeaderSize : (c.nhdr+1)*HeaderSize : (c.nhdr+1)*HeaderSize]
	c.nhdr++
	h := Header{Seq: req.Seq, Type: typ, Offset: req.Offset, Size: size, DataLen: uint32(len(data))}
	h.Encode(hb)
	c.out = append(c.out, hb)
	if len(data) > 0 {
		c.out = append(c.out, data)
	}
	c.nbytes += HeaderSize + len(data)
}

// flush writes the batch with one writev and recycles its buffers.
func (c *serverConn) flush() error {
	if c.nhdr == 0 {
		return nil
	}
	c.wbuf = c.out
	_, err := rawio.Writev(c.nc, &c.wbuf)
	c.wbuf = nil
	clear(c.out)
	c.out = c.out[:0]
	c.nhdr, c.nbytes = 0, 0
	c.release()
	if err != nil {
		return fmt.Errorf("dataconn: write responses: %w", err)
	}
	return nil
}

func (c *serverConn) release() {
	for i, b := range c.bufs {
		bufpool.Put(b)
		c.bufs[i] = nil
	}
	c.bufs = c.bufs[:0]
}

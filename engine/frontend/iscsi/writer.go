package iscsi

import (
	"encoding/binary"
	"net"
	"sync"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/rawio"
)

// outPDU is one queued response. kind outDataIn expands to as many Data-In
// PDUs as the initiator's MaxRecvDataSegmentLength requires, the last one
// carrying the status (phase collapse, RFC 7143 11.7.4).
type outPDU struct {
	hdr  bhs
	data []byte
	kind uint8
	// advance: this PDU carries status, so it takes the next StatSN.
	advance bool
	// for outDataIn: status and residual of the final PDU; when
	// respAfter is set a separate SCSI Response (hdr) follows the data.
	status    byte
	resFlags  byte
	residual  uint32
	respAfter bool
	// senseBuf is the data segment of the SCSI Response that follows
	// the Data-In PDUs when respAfter is set.
	senseBuf []byte
	// pooled is returned to bufpool after the write.
	pooled []byte
	// after runs once the PDU was written (or dropped on close).
	after func()
}

const (
	outPlain  = iota
	outDataIn // p.data split into Data-In PDUs
	outMarker // nothing is written; after runs once what was queued before is out
)

var outPool = sync.Pool{New: func() any { return new(outPDU) }}

func newOut() *outPDU { return outPool.Get().(*outPDU) }

func (p *outPDU) release() {
	if p.pooled != nil {
		bufpool.Put(p.pooled)
	}
	if p.after != nil {
		p.after()
	}
	*p = outPDU{}
	outPool.Put(p)
}

// sendQueue is an unbounded FIFO of responses. One drainer at a time
// writes it: an executor goroutine that finds nobody writing drains the
// queue itself (no wake-up of another goroutine on the hot path). The reader
// goroutine writes only the response of a command it ran itself (a READ or
// WRITE of at most maxInline bytes while nothing else executes, see
// dispatch); everything else it queues wakes the writer goroutine, so an
// initiator that stops reading cannot block the reader for long.
type sendQueue struct {
	mu      sync.Mutex
	items   []*outPDU
	spare   []*outPDU
	writing bool // a drainer is active
	closed  bool
	err     error // first write error: later items are released unwritten
	wake    chan struct{}
	w       *writer
}

func (q *sendQueue) init(w *writer) {
	q.wake = make(chan struct{}, 1)
	q.w = w
}

func (q *sendQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// push queues p; after close it releases p at once. With inline the caller
// drains the queue itself when no one else is writing.
func (q *sendQueue) push(p *outPDU, inline bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		p.release()
		return
	}
	q.items = append(q.items, p)
	if inline && !q.writing {
		q.writing = true
		q.mu.Unlock()
		q.drain()
		return
	}
	q.mu.Unlock()
	q.signal()
}

// drain writes batches until the queue is empty; the caller set writing.
func (q *sendQueue) drain() {
	for {
		q.mu.Lock()
		batch := q.items
		if len(batch) == 0 {
			q.writing = false
			closed := q.closed
			q.mu.Unlock()
			if closed {
				q.signal() // let run see the end
			}
			return
		}
		q.items, q.spare = q.spare[:0], nil
		err := q.err
		q.mu.Unlock()
		if err == nil {
			if err = q.w.writeBatch(batch); err != nil {
				q.w.nc.Close() // wakes the reader
				q.mu.Lock()
				q.err = err
				q.mu.Unlock()
			}
		}
		for i, p := range batch {
			p.release()
			batch[i] = nil
		}
		q.mu.Lock()
		q.spare = batch[:0]
		q.mu.Unlock()
	}
}

// run is the writer goroutine: it drains what the reader queued and returns
// once the queue is closed and empty.
func (q *sendQueue) run() {
	for {
		q.mu.Lock()
		switch {
		case !q.writing && len(q.items) > 0:
			q.writing = true
			q.mu.Unlock()
			q.drain()
			continue
		case q.closed && !q.writing:
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		<-q.wake
	}
}

// close stops the queue; queued items are still written.
func (q *sendQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// writer encodes responses into writev calls; only the active drainer uses
// it. It owns StatSN.
type writer struct {
	nc      net.Conn
	statSN  uint32
	seq     func() (exp, max uint32)
	digests func() (hdr, data bool, maxSeg int)
	arena   []byte
	iov     [][]byte
	bufs    net.Buffers
	scratch bhs // header being built by encodeDataIn
}

const (
	arenaSize = 64 << 10
	maxIOV    = 1024
)

func (w *writer) writeBatch(batch []*outPDU) error {
	hd, dd, maxSeg := w.digests()
	exp, mx := w.seq()
	for _, p := range batch {
		if p.kind == outMarker {
			continue
		}
		if p.kind == outDataIn {
			if err := w.encodeDataIn(p, hd, dd, maxSeg, exp, mx); err != nil {
				return err
			}
			continue
		}
		if err := w.ensure(hd); err != nil {
			return err
		}
		w.stamp(&p.hdr, p.advance, exp, mx)
		w.add(&p.hdr, p.data, hd, dd)
	}
	return w.flush()
}

// stamp fills StatSN, ExpCmdSN and MaxCmdSN (bytes 24-35 of every target PDU).
func (w *writer) stamp(h *bhs, advance bool, exp, mx uint32) {
	h.setU32(24, w.statSN)
	if advance {
		w.statSN++
	}
	h.setU32(28, exp)
	h.setU32(32, mx)
}

// ensure flushes when the arena or iovec list could overflow.
func (w *writer) ensure(_ bool) error {
	if len(w.arena)+bhsLen+16 > cap(w.arena) || len(w.iov)+4 > maxIOV {
		return w.flush()
	}
	return nil
}

// add appends one PDU: header (+digest), data, padding (+digest).
func (w *writer) add(h *bhs, data []byte, hd, dd bool) {
	h.setDataLen(len(data))
	start := len(w.arena)
	w.arena = append(w.arena, h[:]...)
	if hd {
		w.arena = binary.LittleEndian.AppendUint32(w.arena, crc32c(h[:]))
	}
	w.iov = append(w.iov, w.arena[start:len(w.arena)])
	if len(data) == 0 {
		return
	}
	w.iov = append(w.iov, data)
	pad := pad4(len(data))
	if pad == 0 && !dd {
		return
	}
	start = len(w.arena)
	w.arena = append(w.arena, zeroPad[:pad]...)
	if dd {
		w.arena = binary.LittleEndian.AppendUint32(w.arena, crc32c(data, zeroPad[:pad]))
	}
	w.iov = append(w.iov, w.arena[start:len(w.arena)])
}

func (w *writer) flush() error {
	if len(w.iov) == 0 {
		return nil
	}
	w.bufs = w.iov // WriteTo consumes w.bufs; a field does not escape per call
	_, err := rawio.Writev(w.nc, &w.bufs)
	w.bufs = nil
	clear(w.iov)
	w.iov = w.iov[:0]
	w.arena = w.arena[:0]
	return err
}

// encodeDataIn splits p.data into Data-In PDUs of at most maxSeg bytes.
func (w *writer) encodeDataIn(p *outPDU, hd, dd bool, maxSeg int, exp, mx uint32) error {
	data := p.data
	var sn uint32
	for off := 0; off < len(data); {
		n := min(maxSeg, len(data)-off)
		last := off+n == len(data)
		h := &w.scratch
		*h = bhs{}
		h[0] = opDataIn
		if last {
			h[1] |= 0x80
		}
		h.setLUN(p.hdr.lun())
		h.setU32(16, p.hdr.itt())
		h.setU32(20, reservedTag)
		h.setU32(36, sn)
		h.setU32(40, uint32(off))
		collapse := last && !p.respAfter
		if collapse {
			h[1] |= 0x01 | p.resFlags
			h[3] = p.status
			h.setU32(44, p.residual)
		}
		if err := w.ensure(hd); err != nil {
			return err
		}
		w.stamp(h, collapse, exp, mx)
		w.add(h, data[off:off+n], hd, dd)
		sn++
		off += n
	}
	if p.respAfter {
		if err := w.ensure(hd); err != nil {
			return err
		}
		p.hdr.setU32(36, sn) // ExpDataSN
		w.stamp(&p.hdr, true, exp, mx)
		w.add(&p.hdr, p.senseBuf, hd, dd)
	}
	return nil
}

package iscsi

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/frontend/iscsi/scsi"
)

// Task states.
const (
	taskReceiving int32 = iota // collecting Data-Out
	taskExecuting              // running on the device server
	taskDone                   // response queued
	taskAborted                // aborted: no response is sent
)

// maxTasks bounds the commands of one connection (the CmdSN window holds
// cmdWindow; immediate commands are not counted by it).
const maxTasks = 2 * cmdWindow

// r2tSlot is one outstanding R2T (RFC 7143 11.8).
type r2tSlot struct {
	ttt    uint32
	offset int
	length int
	got    int
	dataSN uint32
}

// task is one SCSI command of a connection. The reader owns the receive
// fields; once dispatched, the executing goroutine owns the rest.
type task struct {
	itt      uint32
	lunField uint64
	unit     scsi.Unit
	cdb      [16]byte
	edtl     int
	rbit     bool
	wbit     bool
	prepErr  *scsi.Error
	outLen   int    // Data-Out bytes the CDB asks for
	want     int    // bytes of Data-Out we keep: min(outLen, edtl)
	buf      []byte // the kept Data-Out (want bytes, pooled)

	unsolExpected int
	unsolGot      int
	unsolDataSN   uint32
	unsolDone     bool
	r2tNext       int
	r2tSN         uint32
	r2ts          []r2tSlot
	r2tBack       [2]r2tSlot
	dataErr       bool

	cmd   scsi.Command
	state atomic.Int32
	wg    sync.WaitGroup
}

// abortLocked drops a task that will not answer (caller holds conn.mu).
// A receiving task frees its buffer now; an executing one when it ends.
func (t *task) abortLocked() {
	if t.state.CompareAndSwap(taskReceiving, taskAborted) {
		bufpool.Put(t.buf)
		t.buf = nil
		return
	}
	t.state.CompareAndSwap(taskExecuting, taskAborted)
}

// onSCSICmd handles a SCSI Command PDU (RFC 7143 11.3): it registers the
// task, takes immediate data, sends R2Ts and dispatches when all Data-Out
// is in.
func (c *conn) onSCSICmd(h *bhs) error {
	itt := h.itt()
	flags := h[1]
	wbit, final := flags&0x20 != 0, flags&0x80 != 0
	edtl := int(h.u32(20))
	dlen := h.dataLen()
	if !h.immediate() && !c.sess.acceptCmdSN(h.u32(24)) {
		return c.pr.skipData(h) // outside the command window: ignored
	}
	if dlen > 0 && (!wbit || !c.p.immediateData || dlen > edtl || dlen > c.p.firstBurst) {
		return c.rejectSkip(h, rejectProtocolError)
	}
	c.mu.Lock()
	_, busy := c.tasks[itt]
	full := len(c.tasks) >= maxTasks
	c.mu.Unlock()
	if busy || itt == reservedTag {
		return c.rejectSkip(h, rejectTaskInProgress)
	}
	if full { // only immediate commands can get here past the CmdSN window
		return c.rejectSkip(h, rejectTooManyImmediate)
	}
	t := &task{itt: itt, lunField: h.lun(), edtl: edtl, rbit: flags&0x40 != 0, wbit: wbit}
	_, t.unit = c.t.unit(h.lun())
	copy(t.cdb[:], h[32:48])
	t.r2ts = t.r2tBack[:0]
	if c.pr.extendedCDB() != nil {
		t.prepErr = scsi.ErrInvalidOpcode
	} else if wbit {
		n, e := t.unit.Prepare(t.cdb[:])
		t.prepErr, t.outLen = e, n
		if e == nil {
			t.want = min(n, edtl)
		}
	}
	if t.want > 0 {
		t.buf = bufpool.GetShared(t.want)
	}
	if err := c.pr.readData(h, t.buf[:min(dlen, t.want)]); err != nil {
		bufpool.Put(t.buf)
		return err
	}
	t.unsolGot = dlen
	t.unsolExpected = dlen
	if wbit && !final && !c.p.initialR2T {
		t.unsolExpected = min(c.p.firstBurst, edtl)
	}
	t.unsolDone = t.unsolGot >= t.unsolExpected
	t.r2tNext = t.unsolExpected
	c.mu.Lock()
	c.tasks[itt] = t
	c.mu.Unlock()
	c.issueR2Ts(t)
	if t.receiveDone() {
		c.dispatch(t)
	}
	return nil
}

func (t *task) receiveDone() bool {
	return t.unsolDone && t.r2tNext >= t.want && len(t.r2ts) == 0
}

// issueR2Ts solicits the rest of the data, MaxBurstLength at a time, up to
// MaxOutstandingR2T at once (RFC 7143 11.8).
func (c *conn) issueR2Ts(t *task) {
	for len(t.r2ts) < c.p.maxOutstandingR2T && t.r2tNext < t.want {
		n := min(c.p.maxBurst, t.want-t.r2tNext)
		c.nextTTT++
		if c.nextTTT == reservedTag {
			c.nextTTT = 1
		}
		t.r2ts = append(t.r2ts, r2tSlot{ttt: c.nextTTT, offset: t.r2tNext, length: n})
		p := newOut()
		p.hdr[0] = opR2T
		p.hdr[1] = 0x80
		p.hdr.setLUN(t.lunField)
		p.hdr.setU32(16, t.itt)
		p.hdr.setU32(20, c.nextTTT)
		p.hdr.setU32(36, t.r2tSN)
		p.hdr.setU32(40, uint32(t.r2tNext))
		p.hdr.setU32(44, uint32(n))
		t.r2tSN++
		t.r2tNext += n
		c.q.push(p, false)
	}
}

// onDataOut places a Data-Out PDU (RFC 7143 11.7) into its task's buffer.
// A wrong DataSN or offset fails the command with DATA PHASE ERROR once its
// data is all in; data for unknown tasks is discarded.
func (c *conn) onDataOut(h *bhs) error {
	c.mu.Lock()
	t := c.tasks[h.itt()]
	c.mu.Unlock()
	if t == nil || t.state.Load() != taskReceiving {
		return c.pr.skipData(h)
	}
	ttt, dataSN, off, n := h.u32(20), h.u32(36), int(h.u32(40)), h.dataLen()
	if off+n > t.edtl {
		t.dataErr = true
	}
	var dst []byte
	if off < t.want {
		dst = t.buf[off : off+min(n, t.want-off)]
	}
	if err := c.pr.readData(h, dst); err != nil {
		return err
	}
	if ttt == reservedTag {
		if dataSN != t.unsolDataSN || t.unsolDone {
			t.dataErr = true
		}
		t.unsolDataSN++
		t.unsolGot += n
		if h.final() || t.unsolGot >= t.unsolExpected {
			t.unsolDone = true
		}
	} else if !t.solicited(ttt, dataSN, off, n, h.final()) {
		t.dataErr = true
	}
	c.issueR2Ts(t)
	if t.receiveDone() {
		c.dispatch(t)
	}
	return nil
}

// solicited accounts data for the R2T with this TTT; false when it does
// not fit the R2T.
func (t *task) solicited(ttt, dataSN uint32, off, n int, final bool) bool {
	for i := range t.r2ts {
		s := &t.r2ts[i]
		if s.ttt != ttt {
			continue
		}
		ok := dataSN == s.dataSN && off == s.offset+s.got && s.got+n <= s.length
		s.dataSN++
		s.got += n
		if final || s.got >= s.length {
			t.r2ts = append(t.r2ts[:i], t.r2ts[i+1:]...)
		}
		return ok
	}
	return false
}

// maxInline is the largest READ or WRITE (bytes of data) the reader runs
// itself (see dispatch); a variable so tests can turn inline execution off.
var maxInline = 256 << 10

// dispatch runs the command: on the reading goroutine when it is a READ or
// WRITE of at most maxInline bytes, no other command of the connection
// executes and no further PDU has arrived (queue depth 1); otherwise on a
// worker goroutine. Handing a command to a worker wakes an idle thread, and
// writing its response from the writer goroutine a second one, the largest
// costs of a command at depth 1 on a small VM (the NBD frontend does the
// same). The price: a PDU arriving meanwhile (e.g. ABORT TASK) is read when
// this command is done, which for READ and WRITE is one replica round trip
// (at most the replica timeout when a replica hangs).
func (c *conn) dispatch(t *task) {
	if !t.state.CompareAndSwap(taskReceiving, taskExecuting) {
		return
	}
	t.wg.Add(1)
	c.execWG.Add(1)
	alone := c.executing.Add(1) == 1 && c.pr.r.Buffered() == 0
	c.depth.Observe(alone)
	if alone && t.prepErr == nil && t.edtl <= maxInline && scsi.IsReadWrite(t.cdb[:]) {
		c.execute(t)
		return
	}
	c.t.pool.run(job{c, t})
}

func (c *conn) execute(t *task) {
	defer c.execWG.Done()
	defer t.wg.Done()
	defer c.executing.Add(-1)
	var res scsi.Result
	var e *scsi.Error
	switch {
	case t.prepErr != nil:
		res.XferLen, e = t.outLen, t.prepErr
	case t.dataErr:
		res.XferLen, e = t.outLen, scsi.ErrDataPhase
	default:
		allocIn := 0
		if t.rbit {
			allocIn = t.edtl
		}
		t.cmd = scsi.Command{CDB: t.cdb[:], Nexus: &c.sess.nexus, Data: t.buf, AllocIn: allocIn}
		if t.wbit {
			t.cmd.ExpectedOut = t.edtl
		}
		res, e = t.unit.Execute(&t.cmd) // t.cmd lives in the task: no allocation
	}
	bufpool.Put(t.buf)
	t.buf = nil
	if !t.state.CompareAndSwap(taskExecuting, taskDone) {
		if res.Pooled {
			bufpool.Put(res.Data)
		}
		return
	}
	c.mu.Lock()
	if c.tasks[t.itt] == t {
		delete(c.tasks, t.itt)
	}
	c.mu.Unlock()
	c.respond(t, &res, e)
}

// respond queues the Data-In and status of a finished command, with the
// residual between the expected data transfer length and what the CDB
// asked for (RFC 7143 11.4.5).
func (c *conn) respond(t *task, res *scsi.Result, e *scsi.Error) {
	status := scsi.StatusGood
	if e != nil {
		status = e.Status
	}
	var resFlags byte
	var residual uint32
	switch x := res.XferLen; {
	case x > t.edtl:
		resFlags, residual = 0x04, uint32(x-t.edtl)
	case x < t.edtl:
		resFlags, residual = 0x02, uint32(t.edtl-x)
	}
	var sense []byte
	if status == scsi.StatusCheckCondition {
		s := t.unit.AppendSense(make([]byte, 2, 2+scsi.FixedLen+32), &e.Sense)
		binary.BigEndian.PutUint16(s[0:2], uint16(len(s)-2))
		sense = s
	}
	p := newOut()
	if res.Pooled {
		p.pooled = res.Data
	}
	h := &p.hdr
	h[0] = opSCSIResp
	h[1] = 0x80 | resFlags
	h[3] = byte(status)
	h.setLUN(t.lunField)
	h.setU32(16, t.itt)
	h.setU32(44, residual)
	if len(res.Data) > 0 {
		p.kind = outDataIn
		p.data = res.Data
		p.status, p.resFlags, p.residual = byte(status), resFlags, residual
		if status != scsi.StatusGood {
			p.respAfter, p.senseBuf = true, sense
		}
	} else {
		p.data = sense
		p.advance = true
	}
	c.q.push(p, true)
}

package iscsi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/rawio"
)

const (
	maxTextRequest = 64 << 10 // bytes of one (continued) Text Request
	loginTimeout   = 30 * time.Second
	loginMaxData   = 8192 // MaxRecvDataSegmentLength before negotiation
	readBufferSize = 256 << 10
)

// conn is one TCP connection and, with MaxConnections=1, its session.
type conn struct {
	t   *Target
	nc  net.Conn
	log *logrus.Entry
	pr  pduReader
	q   sendQueue
	w   writer

	sess       *session
	p          params
	maxXmitDSL atomic.Int32 // the initiator's MaxRecvDataSegmentLength

	mu      sync.Mutex
	tasks   map[uint32]*task
	nextTTT uint32
	execWG  sync.WaitGroup
	// executing counts commands between dispatch and the end of execute.
	executing atomic.Int32
	// depth tells the reader whether commands arrive one at a time, so
	// that it spins for the next one (rawio.DepthOne); reader only.
	depth   rawio.DepthOne
	wdone   chan struct{}
	closed  atomic.Bool
	textBuf []byte
}

func newConn(t *Target, nc net.Conn) *conn {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	nc = rawio.Wrap(nc)
	c := &conn{t: t, nc: nc, tasks: map[uint32]*task{}}
	c.log = t.log.WithField("remote", nc.RemoteAddr().String())
	c.pr.r = bufio.NewReaderSize(nc, readBufferSize)
	c.pr.maxData = loginMaxData
	return c
}

// abort closes the socket; the reader fails and serve tears down.
func (c *conn) abort() { c.nc.Close() }

// serve runs the connection: login, then the full feature phase.
func (c *conn) serve() {
	defer c.teardown()
	s, err := c.login()
	if err != nil {
		c.log.WithError(err).Debug("iSCSI login ended")
		return
	}
	c.sess = s
	c.log = c.log.WithFields(logrus.Fields{"initiator": s.initiatorName, "tsih": s.tsih})
	c.log.WithFields(logrus.Fields{
		"discovery": s.discovery, "headerDigest": c.p.headerDigest, "dataDigest": c.p.dataDigest,
		"maxRecvDSL": c.p.maxRecvDSL, "maxXmitDSL": c.p.maxXmitDSL, "maxBurst": c.p.maxBurst,
		"firstBurst": c.p.firstBurst, "immediateData": c.p.immediateData, "initialR2T": c.p.initialR2T,
	}).Debug("iSCSI session logged in")
	c.startWriter()
	if err := c.loop(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.log.WithError(err).Info("iSCSI connection closed")
	}
}

func (c *conn) startWriter() {
	c.pr.maxData = c.p.maxRecvDSL
	c.pr.hdrDigest, c.pr.dataDigest = c.p.headerDigest, c.p.dataDigest
	c.maxXmitDSL.Store(int32(c.p.maxXmitDSL))
	c.w.nc = c.nc
	c.w.arena = make([]byte, 0, arenaSize)
	c.q.init(&c.w)
	c.w.seq = c.sess.seq
	hd, dd := c.p.headerDigest, c.p.dataDigest
	c.w.digests = func() (bool, bool, int) { return hd, dd, int(c.maxXmitDSL.Load()) }
	c.wdone = make(chan struct{})
	go func() {
		defer close(c.wdone)
		c.q.run()
	}()
}

// teardown aborts the tasks, waits for running commands, flushes and
// closes the socket, and ends the session.
func (c *conn) teardown() {
	c.closed.Store(true)
	c.mu.Lock()
	for itt, t := range c.tasks {
		t.abortLocked()
		delete(c.tasks, itt)
	}
	c.mu.Unlock()
	c.execWG.Wait()
	if c.wdone != nil {
		c.q.close()
		<-c.wdone
	}
	c.nc.Close()
	c.t.connClosed(c)
}

// login runs the login phase (RFC 7143 6.3) and binds the session.
func (c *conn) login() (*session, error) {
	ls := newLoginState(&c.t.lim, c.t.iqn, c.t.cfg.CHAPUser, c.t.cfg.CHAPSecret)
	var h bhs
	var statSN uint32
	first := true
	for {
		c.nc.SetReadDeadline(time.Now().Add(loginTimeout))
		if err := c.pr.readHeader(&h); err != nil {
			return nil, err
		}
		if h.opcode() != opLoginReq {
			return nil, fmt.Errorf("%w: opcode 0x%02x during login", errProtocol, h.opcode())
		}
		r := decodeLoginReq(&h)
		text := make([]byte, h.dataLen())
		if err := c.pr.readData(&h, text); err != nil {
			return nil, err
		}
		if first {
			statSN, first = r.expStatSN, false
		}
		resp := ls.step(&r, text)
		var s *session
		if resp.status == loginSuccess && resp.done {
			var st uint16
			if s, st = c.t.bindSession(c, ls, r.cmdSN); st != loginSuccess {
				resp = fail(st, &r)
			}
		}
		tsih := uint16(0)
		if s != nil {
			tsih = s.tsih
		}
		out := encodeLoginResp(&r, &resp, tsih, statSN, r.cmdSN, r.cmdSN+cmdWindow-1)
		statSN++
		if _, err := rawio.Writev(c.nc, &net.Buffers{out[:], resp.text, zeroPad[:pad4(len(resp.text))]}); err != nil {
			return nil, err
		}
		if resp.status != loginSuccess {
			return nil, fmt.Errorf("login refused: status 0x%04x", resp.status)
		}
		if resp.done {
			c.nc.SetReadDeadline(time.Time{})
			c.p = ls.p
			c.w.statSN = statSN
			return s, nil
		}
	}
}

// loop reads PDUs of the full feature phase until logout or an error.
func (c *conn) loop() error {
	var h bhs
	for {
		spun := c.depth.BeforeRead(c.nc, c.pr.r.Buffered())
		if err := c.pr.readHeader(&h); err != nil {
			return err
		}
		c.depth.AfterRead(c.nc, spun)
		var err error
		switch h.opcode() {
		case opSCSICmd:
			if c.sess.discovery {
				err = c.rejectSkip(&h, rejectProtocolError)
			} else {
				err = c.onSCSICmd(&h)
			}
		case opDataOut:
			err = c.onDataOut(&h)
		case opNOPOut:
			err = c.onNOPOut(&h)
		case opTaskMgmt:
			if c.sess.discovery {
				err = c.rejectSkip(&h, rejectProtocolError)
			} else {
				err = c.onTMF(&h)
			}
		case opTextReq:
			err = c.onText(&h)
		case opLogoutReq:
			return c.onLogout(&h)
		case opSNACK:
			err = c.rejectSkip(&h, rejectSNACK)
		default:
			err = c.rejectSkip(&h, rejectNotSupported)
		}
		if err != nil {
			return err
		}
	}
}

// rejectSkip discards the data of h and answers a Reject PDU carrying h
// (RFC 7143 11.17).
func (c *conn) rejectSkip(h *bhs, reason byte) error {
	if err := c.pr.skipData(h); err != nil {
		return err
	}
	c.reject(h, reason)
	return nil
}

func (c *conn) reject(h *bhs, reason byte) {
	p := newOut()
	p.hdr[0] = opReject
	p.hdr[1] = 0x80
	p.hdr[2] = reason
	p.hdr.setU32(16, reservedTag)
	p.advance = true
	p.data = append([]byte(nil), h[:]...)
	c.q.push(p, false)
}

// onNOPOut answers a ping (ITT != 0xffffffff) with a NOP-In echoing its
// data (RFC 7143 11.18, 11.19).
func (c *conn) onNOPOut(h *bhs) error {
	itt := h.itt()
	if itt == reservedTag {
		return c.pr.skipData(h)
	}
	if !h.immediate() && !c.sess.acceptCmdSN(h.u32(24)) {
		return c.pr.skipData(h)
	}
	n := min(h.dataLen(), int(c.maxXmitDSL.Load()))
	data := make([]byte, n)
	if err := c.pr.readData(h, data); err != nil {
		return err
	}
	p := newOut()
	p.hdr[0] = opNOPIn
	p.hdr[1] = 0x80
	p.hdr.setLUN(h.lun())
	p.hdr.setU32(16, itt)
	p.hdr.setU32(20, reservedTag)
	p.data = data
	p.advance = true
	c.q.push(p, false)
	return nil
}

// onText handles Text Requests: SendTargets (RFC 7143 Appendix C) and
// MaxRecvDataSegmentLength; other keys are answered NotUnderstood or
// Irrelevant.
func (c *conn) onText(h *bhs) error {
	data := make([]byte, h.dataLen()) // <= MaxRecvDataSegmentLength
	if err := c.pr.readData(h, data); err != nil {
		return err
	}
	if !h.immediate() && !c.sess.acceptCmdSN(h.u32(24)) {
		return nil
	}
	if len(c.textBuf)+len(data) > maxTextRequest {
		return fmt.Errorf("%w: text request longer than %d bytes", errProtocol, maxTextRequest)
	}
	c.textBuf = append(c.textBuf, data...)
	var out []byte
	if h[1]&0x40 == 0 { // not continued: answer the whole request
		keys, err := parseText(c.textBuf)
		c.textBuf = nil
		if err != nil {
			c.reject(h, rejectInvalidField)
			return nil
		}
		out = c.answerText(keys)
	}
	p := newOut()
	p.hdr[0] = opTextResp
	if h[1]&0x40 == 0 {
		p.hdr[1] = 0x80
	}
	p.hdr.setLUN(h.lun())
	p.hdr.setU32(16, h.itt())
	if h[1]&0x40 == 0 {
		p.hdr.setU32(20, reservedTag)
	} else {
		p.hdr.setU32(20, 1)
	}
	if len(out) > int(c.maxXmitDSL.Load()) {
		out = out[:c.maxXmitDSL.Load()]
	}
	p.data = out
	p.advance = true
	c.q.push(p, false)
	return nil
}

func (c *conn) answerText(keys []kv) []byte {
	var out []byte
	for _, k := range keys {
		switch k.key {
		case "SendTargets":
			if k.value == "All" || k.value == "" || k.value == c.t.iqn {
				out = appendText(out, "TargetName", c.t.iqn)
				out = appendText(out, "TargetAddress", c.portalAddress())
			}
		case "MaxRecvDataSegmentLength":
			if n, ok := numeric(k.value, 512, 1<<24-1); ok {
				c.maxXmitDSL.Store(int32(n))
			}
		default:
			out = appendText(out, k.key, valNotUnderstood)
		}
	}
	return out
}

// portalAddress is HOST:PORT,TPGT of the address the initiator reached.
func (c *conn) portalAddress() string {
	a, ok := c.nc.LocalAddr().(*net.TCPAddr)
	if !ok {
		return c.nc.LocalAddr().String() + ",1"
	}
	return advertisedAddr(a) + ",1"
}

// onLogout closes the session after the running commands answered
// (RFC 7143 11.14, 11.15). It always ends the loop.
func (c *conn) onLogout(h *bhs) error {
	if err := c.pr.skipData(h); err != nil {
		return err
	}
	if !h.immediate() {
		c.sess.acceptCmdSN(h.u32(24))
	}
	c.mu.Lock()
	for itt, t := range c.tasks {
		if t.state.Load() == taskReceiving {
			t.abortLocked()
			delete(c.tasks, itt)
		}
	}
	c.mu.Unlock()
	c.execWG.Wait()
	p := newOut()
	p.hdr[0] = opLogoutResp
	p.hdr[1] = 0x80
	if h[1]&0x7f == 2 {
		p.hdr[2] = 2 // connection recovery not supported at ErrorRecoveryLevel 0
	}
	p.hdr.setU32(16, h.itt())
	p.hdr.setU16(40, uint16(c.p.time2Wait))
	p.hdr.setU16(42, uint16(c.p.time2Retain))
	p.advance = true
	c.q.push(p, false)
	return io.EOF
}

package iscsi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

var tur = make([]byte, 6)

func loggedIn(t *testing.T, tt *testTarget, o loginOpts) *testInitiator {
	t.Helper()
	in := dialTarget(t, tt.addr)
	if st := in.login(o); st != 0 {
		t.Fatalf("login status 0x%04x", st)
	}
	return in
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TestDigestsAndR2T: CRC32C header and data digests, no immediate data,
// InitialR2T=Yes: every byte travels in R2T-solicited Data-Out.
func TestDigestsAndR2T(t *testing.T) {
	tt := startTarget(t, 64<<20, Config{PreferCRC32C: true}, nil)
	in := loggedIn(t, tt, loginOpts{keys: []kv{{"HeaderDigest", "None,CRC32C"}, {"DataDigest", "None,CRC32C"},
		{"ImmediateData", "No"}, {"InitialR2T", "Yes"}, {"MaxBurstLength", "65536"}}})
	if !in.hdrDigest || !in.dataDigest {
		t.Fatalf("digests not negotiated: header %v data %v", in.hdrDigest, in.dataDigest)
	}
	data := randBytes(300 << 10)
	w := in.do(1, write10(100, uint16(len(data)/512)), data, 0)
	if w.status != 0 || w.r2ts < 5 {
		t.Fatalf("write: status %d, %d R2Ts (want >= 5 for 300 KiB at 64 KiB bursts)", w.status, w.r2ts)
	}
	r := in.do(1, read10(100, uint16(len(data)/512)), nil, len(data))
	if r.status != 0 || !bytes.Equal(r.data, data) {
		t.Fatalf("read back: status %d, %d bytes, equal %v", r.status, len(r.data), bytes.Equal(r.data, data))
	}
}

// TestPipelinedCommands keeps 64 writes and then 64 reads outstanding at
// once; responses may come in any order.
func TestPipelinedCommands(t *testing.T) {
	tt := startTarget(t, 64<<20, Config{}, nil)
	in := loggedIn(t, tt, loginOpts{})
	if w := in.maxCmdSN - in.cmdSN + 1; w < 64 {
		t.Fatalf("command window %d, want >= 64", w)
	}
	const n, blocks = 64, 16
	payload := randBytes(n * blocks * 512)
	itts := map[uint32]int{}
	for i := 0; i < n; i++ {
		itt := in.nextITT()
		itts[itt] = i
		chunk := payload[i*blocks*512 : (i+1)*blocks*512]
		h, imm := in.cmdPDU(itt, 1, write10(uint32(i*blocks), blocks), chunk, 0)
		in.send(&h, imm)
	}
	for range n {
		h, _ := in.recv()
		if h.opcode() != opSCSIResp || h[3] != 0 {
			t.Fatalf("write response opcode 0x%02x status %d", h.opcode(), h[3])
		}
		delete(itts, h.itt())
	}
	if len(itts) != 0 {
		t.Fatalf("missing responses for %v", itts)
	}
	got := make([]byte, len(payload))
	for i := 0; i < n; i++ {
		itt := in.nextITT()
		itts[itt] = i
		h, _ := in.cmdPDU(itt, 1, read10(uint32(i*blocks), blocks), nil, blocks*512)
		in.send(&h, nil)
	}
	for done := 0; done < n; {
		h, data := in.recv()
		if h.opcode() != opDataIn {
			t.Fatalf("read: opcode 0x%02x", h.opcode())
		}
		i := itts[h.itt()]
		copy(got[i*blocks*512+int(h.u32(40)):], data)
		if h[1]&0x01 != 0 {
			done++
		}
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("pipelined reads returned other data than written")
	}
}

// TestCmdSNOutsideWindowIgnored: RFC 7143 4.2.2.1, a CmdSN above MaxCmdSN
// is silently ignored; the session goes on.
func TestCmdSNOutsideWindowIgnored(t *testing.T) {
	tt := startTarget(t, 1<<20, Config{}, nil)
	in := loggedIn(t, tt, loginOpts{})
	good := in.cmdSN
	in.cmdSN = in.maxCmdSN + 1
	h, _ := in.cmdPDU(in.nextITT(), 1, tur, nil, 0)
	in.send(&h, nil)
	if _, _, err := in.tryRead(false, false, 500*time.Millisecond); err == nil {
		t.Fatal("got a response to a command outside the window")
	}
	in.cmdSN = good
	if r := in.do(1, tur, nil, 0); r.status != 0 {
		t.Fatalf("TUR status %d", r.status)
	}
}

// TestMalformedPDUClosesOnlyItsConnection: garbage on one connection ends
// that connection; other sessions and new logins are unaffected.
func TestMalformedPDUClosesOnlyItsConnection(t *testing.T) {
	tt := startTarget(t, 1<<20, Config{}, nil)
	a := loggedIn(t, tt, loginOpts{isid: 1})
	b := loggedIn(t, tt, loginOpts{isid: 2})
	var h bhs
	h[0] = opSCSICmd
	h[5], h[6], h[7] = 0xff, 0xff, 0xff // 16 MiB data segment: beyond MaxRecvDataSegmentLength
	if _, err := a.nc.Write(h[:]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.tryRead(false, false, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("malformed connection: read err %v, want EOF", err)
	}
	if r := b.do(1, tur, nil, 0); r.status != 0 {
		t.Fatalf("other session: TUR status %d", r.status)
	}
	c := loggedIn(t, tt, loginOpts{isid: 3})
	if r := c.do(1, tur, nil, 0); r.status != 0 {
		t.Fatalf("new session: TUR status %d", r.status)
	}
}

// gatedBackend blocks WriteAt until released, to hold a command in flight.
type gatedBackend struct {
	frontend.Backend
	entered chan struct{}
	release chan struct{}
}

func (g *gatedBackend) WriteAt(p []byte, off int64) (int, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Backend.WriteAt(p, off)
}

// noInline makes every command run on a worker goroutine for the rest of
// the test, so a command can be held running while the reader reads on.
func noInline(t *testing.T) {
	old := maxInline
	maxInline = -1
	t.Cleanup(func() { maxInline = old })
}

// abortHeldWrite starts a target whose backend holds WriteAt until the gate
// is released, sends a one-block WRITE(10) and, once the write is held, an
// ABORT TASK for it. It returns the initiator, the gate, the write's ITT and
// the TMF PDU as sent.
func abortHeldWrite(t *testing.T) (*testInitiator, *gatedBackend, uint32, bhs) {
	g := &gatedBackend{entered: make(chan struct{}, 1), release: make(chan struct{})}
	tt := startTarget(t, 1<<20, Config{}, func(b frontend.Backend) frontend.Backend { g.Backend = b; return g })
	in := loggedIn(t, tt, loginOpts{})
	witt := in.nextITT()
	wsn := in.cmdSN
	h, imm := in.cmdPDU(witt, 1, write10(0, 1), make([]byte, 512), 0)
	in.send(&h, imm)
	<-g.entered
	var tm bhs
	tm[0] = 0x40 | opTaskMgmt
	tm[1] = 0x80 | tmfAbortTask
	tm.setLUN(1 << 48)
	tm.setU32(16, in.nextITT())
	tm.setU32(20, witt)
	tm.setU32(24, in.cmdSN)
	tm.setU32(32, wsn)
	in.send(&tm, nil)
	return in, g, witt, tm
}

// TestAbortTaskAfterInlineCommand: a command the reader runs itself (a
// WRITE at queue depth 1) completes before an ABORT TASK sent behind it is
// read; the initiator gets the command's status, then "task does not exist"
// (RFC 7143 11.5.1 c: its CmdSN is no longer in the window).
func TestAbortTaskAfterInlineCommand(t *testing.T) {
	in, g, witt, tm := abortHeldWrite(t)
	tmITT := tm.itt()
	close(g.release)
	rh, _ := in.recv()
	if rh.opcode() != opSCSIResp || rh.itt() != witt || rh[3] != 0 {
		t.Fatalf("got opcode 0x%02x itt %d status %d, want GOOD for the write", rh.opcode(), rh.itt(), rh[3])
	}
	rh, _ = in.recv()
	if rh.opcode() != opTaskMgmtResp || rh.itt() != tmITT || rh[2] != tmfRespNoTask {
		t.Fatalf("got opcode 0x%02x itt %d response %d, want TMF task does not exist", rh.opcode(), rh.itt(), rh[2])
	}
}

// TestAbortTask: an aborted running command answers nothing; the TMF
// response comes once the command stopped (RFC 7143 11.5.1).
func TestAbortTask(t *testing.T) {
	noInline(t)
	in, g, _, tm := abortHeldWrite(t)
	tmITT := tm.itt()
	if _, _, err := in.tryRead(false, false, 200*time.Millisecond); err == nil {
		t.Fatal("TMF answered while the aborted command still ran")
	}
	close(g.release)
	rh, _ := in.recv()
	if rh.opcode() != opTaskMgmtResp || rh.itt() != tmITT || rh[2] != tmfRespComplete {
		t.Fatalf("got opcode 0x%02x itt %d response %d, want TMF function complete", rh.opcode(), rh.itt(), rh[2])
	}
	g.entered = make(chan struct{}, 10)
	if r := in.do(1, tur, nil, 0); r.status != 0 {
		t.Fatalf("TUR after abort: status %d", r.status)
	}
	tm.setU32(16, in.nextITT())
	tm.setU32(24, in.cmdSN)
	in.send(&tm, nil)
	if rh, _ := in.recv(); rh[2] != tmfRespNoTask {
		t.Fatalf("second abort: response %d, want task does not exist", rh[2])
	}
}

// TestLUNResetUnitAttention: after LOGICAL UNIT RESET the next command gets
// UNIT ATTENTION, BUS DEVICE RESET FUNCTION OCCURRED (29h/03h), once.
func TestLUNResetUnitAttention(t *testing.T) {
	tt := startTarget(t, 1<<20, Config{}, nil)
	in := loggedIn(t, tt, loginOpts{})
	var tm bhs
	tm[0] = 0x40 | opTaskMgmt
	tm[1] = 0x80 | tmfLUNReset
	tm.setLUN(1 << 48)
	tm.setU32(16, in.nextITT())
	tm.setU32(20, reservedTag)
	tm.setU32(24, in.cmdSN)
	in.send(&tm, nil)
	if rh, _ := in.recv(); rh.opcode() != opTaskMgmtResp || rh[2] != tmfRespComplete {
		t.Fatalf("LUN reset: opcode 0x%02x response %d", rh.opcode(), rh[2])
	}
	r := in.do(1, tur, nil, 0)
	if r.status != 2 || len(r.sense) < 14 || r.sense[2]&0x0f != 6 || r.sense[12] != 0x29 || r.sense[13] != 0x03 {
		t.Fatalf("TUR after reset: status %d sense % x", r.status, r.sense)
	}
	if r := in.do(1, tur, nil, 0); r.status != 0 {
		t.Fatalf("second TUR: status %d", r.status)
	}
}

// TestSessionReinstatement: a login with the ISID of a live session closes
// the old one (RFC 7143 6.3.5).
func TestSessionReinstatement(t *testing.T) {
	tt := startTarget(t, 1<<20, Config{}, nil)
	old := loggedIn(t, tt, loginOpts{isid: 7})
	loggedIn(t, tt, loginOpts{isid: 7})
	if _, _, err := old.tryRead(false, false, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("old session: %v, want EOF", err)
	}
}

func TestLogout(t *testing.T) {
	tt := startTarget(t, 1<<20, Config{}, nil)
	in := loggedIn(t, tt, loginOpts{})
	if resp := in.logout(); resp != 0 {
		t.Fatalf("logout response %d", resp)
	}
	if _, _, err := in.tryRead(false, false, 5*time.Second); !errors.Is(err, io.EOF) {
		t.Fatalf("after logout: %v, want EOF", err)
	}
}

// TestExpand: a capacity change raises CAPACITY DATA HAS CHANGED and READ
// CAPACITY reports the new size.
func TestExpand(t *testing.T) {
	tt := startTarget(t, 1<<20, Config{}, nil)
	in := loggedIn(t, tt, loginOpts{})
	if err := tt.Expand(2 << 20); err != nil {
		t.Fatal(err)
	}
	r := in.do(1, tur, nil, 0)
	if r.status != 2 || r.sense[12] != 0x2a || r.sense[13] != 0x09 {
		t.Fatalf("TUR after expand: status %d sense % x", r.status, r.sense)
	}
	rc := in.do(1, []byte{0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil, 8)
	if last := binary.BigEndian.Uint32(rc.data[0:4]); last != 4095 {
		t.Fatalf("last LBA %d, want 4095", last)
	}
}

// TestShutdownWaitsForCommands: Shutdown closes the sessions and returns
// only after the running command finished.
func TestShutdownWaitsForCommands(t *testing.T) {
	g := &gatedBackend{entered: make(chan struct{}, 1), release: make(chan struct{})}
	tt := startTarget(t, 1<<20, Config{}, func(b frontend.Backend) frontend.Backend { g.Backend = b; return g })
	in := loggedIn(t, tt, loginOpts{})
	h, imm := in.cmdPDU(in.nextITT(), 1, write10(0, 1), make([]byte, 512), 0)
	in.send(&h, imm)
	<-g.entered
	var once sync.Once
	done := make(chan struct{})
	go func() { tt.Shutdown(); once.Do(func() { close(done) }) }()
	select {
	case <-done:
		t.Fatal("Shutdown returned while a command was running")
	case <-time.After(200 * time.Millisecond):
	}
	close(g.release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	if tt.State() != StateDown || tt.Endpoint() != "" {
		t.Fatalf("state %q endpoint %q after shutdown", tt.State(), tt.Endpoint())
	}
	if err := tt.Startup(context.Background(), testVolume, 1<<20, g); err != nil {
		t.Fatalf("restart: %v", err)
	}
}

// TestLargeTransfers: the largest transfer (MaxTransferBlocks) with
// immediate data, unsolicited Data-Out and several outstanding R2Ts.
func TestLargeTransfers(t *testing.T) {
	tt := startTarget(t, 64<<20, Config{}, nil)
	for _, c := range []struct {
		name string
		keys []kv
	}{
		{"unsolicited+R2T", []kv{{"FirstBurstLength", "65536"}, {"MaxBurstLength", "131072"}, {"MaxOutstandingR2T", "4"}}},
		{"R2T only", []kv{{"ImmediateData", "No"}, {"InitialR2T", "Yes"}, {"MaxBurstLength", "262144"}, {"MaxOutstandingR2T", "2"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := loggedIn(t, tt, loginOpts{keys: c.keys})
			const blocks = 16384 // 8 MiB
			data := randBytes(blocks * 512)
			cdb := make([]byte, 16)
			cdb[0] = 0x8a // WRITE(16)
			binary.BigEndian.PutUint32(cdb[10:], blocks)
			if w := in.do(1, cdb, data, 0); w.status != 0 || w.r2ts == 0 {
				t.Fatalf("write: status %d, %d R2Ts", w.status, w.r2ts)
			}
			cdb[0] = 0x88 // READ(16)
			r := in.do(1, cdb, nil, len(data))
			if r.status != 0 || !bytes.Equal(r.data, data) {
				t.Fatalf("read: status %d, %d bytes", r.status, len(r.data))
			}
		})
	}
}

// TestEveryOpcodeAnswers sends every operation code (and every service
// action of the service-action opcodes) with an otherwise zero CDB: each
// gets a status, unsupported ones CHECK CONDITION, ILLEGAL REQUEST, INVALID
// COMMAND OPERATION CODE; the connection stays up.
func TestEveryOpcodeAnswers(t *testing.T) {
	tt := startTarget(t, 1<<20, Config{}, nil)
	in := loggedIn(t, tt, loginOpts{})
	var cdbs [][]byte
	for op := 0; op < 256; op++ {
		cdbs = append(cdbs, []byte{byte(op)})
	}
	for _, op := range []byte{0x9e, 0xa3, 0x5e, 0x5f} {
		for sa := byte(0); sa < 32; sa++ {
			cdbs = append(cdbs, []byte{op, sa})
		}
	}
	supported := 0
	for _, c := range cdbs {
		cdb := make([]byte, 16)
		copy(cdb, c)
		r := in.do(1, cdb, nil, 512)
		switch {
		case r.status == 0 || r.status == 0x04:
			supported++
		case r.status == 2 && len(r.sense) >= 14:
			if r.sense[2]&0x0f == 5 && r.sense[12] == 0x20 && r.sense[13] == 0 {
				continue // not supported, as it should be said
			}
			supported++
		default:
			t.Errorf("CDB % x: status %#x sense % x", c, r.status, r.sense)
		}
	}
	if supported < 40 {
		t.Errorf("only %d CDBs recognised", supported)
	}
	if r := in.do(1, tur, nil, 0); r.status != 0 {
		t.Fatalf("TUR after the sweep: %d", r.status)
	}
}

// TestNOPAndText: a NOP-Out ping is echoed in a NOP-In (RFC 7143 11.18,
// 11.19); SendTargets in a Text Request names the target and portal.
func TestNOPAndText(t *testing.T) {
	tt := startTarget(t, 1<<20, Config{}, nil)
	in := loggedIn(t, tt, loginOpts{})
	var h bhs
	h[0] = 0x40 | opNOPOut
	h[1] = 0x80
	itt := in.nextITT()
	h.setU32(16, itt)
	h.setU32(20, reservedTag)
	h.setU32(24, in.cmdSN)
	in.send(&h, []byte("are you there"))
	rh, data := in.recv()
	if rh.opcode() != opNOPIn || rh.itt() != itt || rh.u32(20) != reservedTag || string(data) != "are you there" {
		t.Fatalf("NOP-In: opcode 0x%02x itt %d ttt %#x data %q", rh.opcode(), rh.itt(), rh.u32(20), data)
	}
	h = bhs{}
	h[0] = 0x40 | opTextReq
	h[1] = 0x80
	itt = in.nextITT()
	h.setU32(16, itt)
	h.setU32(20, reservedTag)
	h.setU32(24, in.cmdSN)
	in.send(&h, appendText(nil, "SendTargets", "All"))
	rh, data = in.recv()
	kvs, err := parseText(data)
	if err != nil || rh.opcode() != opTextResp || rh[1]&0x80 == 0 || len(kvs) != 2 ||
		kvs[0] != (kv{"TargetName", IQN(testVolume)}) || kvs[1] != (kv{"TargetAddress", tt.addr + ",1"}) {
		t.Fatalf("SendTargets: opcode 0x%02x flags %#x %v %v", rh.opcode(), rh[1], kvs, err)
	}
}

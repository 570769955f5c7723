package iscsi

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// testInitiator is a small iSCSI initiator for tests that need control
// libiscsi does not give (data digests, raw PDUs, many outstanding
// commands, task management). It checks nothing itself.
type testInitiator struct {
	t          testing.TB
	nc         net.Conn
	br         *bufio.Reader
	isid       [6]byte
	tsih       uint16
	cmdSN      uint32
	expStatSN  uint32
	maxCmdSN   uint32
	itt        uint32
	hdrDigest  bool
	dataDigest bool
	maxXmit    int // the target's MaxRecvDataSegmentLength
	firstBurst int
	immediate  bool
	initialR2T bool
}

type loginOpts struct {
	keys  []kv // extra operational keys (override the defaults)
	isid  byte
	iname string
}

func dialTarget(t testing.TB, addr string) *testInitiator {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &testInitiator{t: t, nc: nc, br: bufio.NewReader(nc), maxXmit: 8192, firstBurst: 65536, immediate: true, initialR2T: true}
}

// login performs a normal session login (security stage without
// authentication, then operational) and returns the final status.
func (in *testInitiator) login(o loginOpts) uint16 {
	in.t.Helper()
	if o.iname == "" {
		o.iname = "iqn.2024-01.io.test:go"
	}
	in.isid = [6]byte{0x80, 0, 0, 0, 0, o.isid}
	sec := appendText(nil, "InitiatorName", o.iname)
	sec = appendText(sec, "SessionType", "Normal")
	sec = appendText(sec, "TargetName", IQN(testVolume))
	sec = appendText(sec, "AuthMethod", "None")
	if st := in.loginPDU(stageSecurity, stageOperational, sec); st != 0 {
		return st
	}
	op := []kv{{"HeaderDigest", "None"}, {"DataDigest", "None"}, {"ImmediateData", "Yes"}, {"InitialR2T", "No"},
		{"MaxRecvDataSegmentLength", "65536"}, {"FirstBurstLength", "65536"}, {"MaxBurstLength", "262144"},
		{"ErrorRecoveryLevel", "0"}, {"MaxOutstandingR2T", "1"}}
	for _, k := range o.keys {
		replaced := false
		for i := range op {
			if op[i].key == k.key {
				op[i].value, replaced = k.value, true
			}
		}
		if !replaced {
			op = append(op, k)
		}
	}
	var text []byte
	for _, k := range op {
		text = appendText(text, k.key, k.value)
	}
	return in.loginPDU(stageOperational, stageFullFeature, text)
}

func (in *testInitiator) loginPDU(csg, nsg byte, text []byte) uint16 {
	in.t.Helper()
	var h bhs
	h[0] = 0x40 | opLoginReq
	h[1] = 0x80 | csg<<2 | nsg
	copy(h[8:14], in.isid[:])
	h.setU16(14, in.tsih)
	h.setU32(16, in.nextITT())
	h.setU32(24, in.cmdSN)
	h.setU32(28, in.expStatSN)
	in.writeRaw(&h, text, false, false)
	rh, data := in.readRaw(false, false)
	if rh.opcode() != opLoginResp {
		in.t.Fatalf("login: got opcode 0x%02x", rh.opcode())
	}
	in.expStatSN = rh.u32(24) + 1
	in.maxCmdSN = rh.u32(32)
	st := rh.u16(36)
	if st != 0 {
		return st
	}
	in.tsih = rh.u16(14)
	keys, err := parseText(data)
	if err != nil {
		in.t.Fatal(err)
	}
	for _, k := range keys {
		switch k.key {
		case "HeaderDigest":
			in.hdrDigest = k.value == "CRC32C"
		case "DataDigest":
			in.dataDigest = k.value == "CRC32C"
		case "MaxRecvDataSegmentLength":
			in.maxXmit, _ = strconv.Atoi(k.value)
		case "FirstBurstLength":
			in.firstBurst, _ = strconv.Atoi(k.value)
		case "ImmediateData":
			in.immediate = k.value == "Yes"
		case "InitialR2T":
			in.initialR2T = k.value == "Yes"
		}
	}
	return 0
}

func (in *testInitiator) nextITT() uint32 { in.itt++; return in.itt }

// writeRaw sends one PDU, with digests when asked.
func (in *testInitiator) writeRaw(h *bhs, data []byte, hd, dd bool) {
	h.setDataLen(len(data))
	buf := append([]byte(nil), h[:]...)
	if hd {
		buf = binary.LittleEndian.AppendUint32(buf, crc32c(h[:]))
	}
	buf = append(buf, data...)
	buf = append(buf, zeroPad[:pad4(len(data))]...)
	if dd && len(data) > 0 {
		buf = binary.LittleEndian.AppendUint32(buf, crc32c(data, zeroPad[:pad4(len(data))]))
	}
	in.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := in.nc.Write(buf); err != nil {
		in.t.Fatalf("write: %v", err)
	}
}

func (in *testInitiator) send(h *bhs, data []byte) { in.writeRaw(h, data, in.hdrDigest, in.dataDigest) }

// readRaw reads one PDU and checks its digests.
func (in *testInitiator) readRaw(hd, dd bool) (bhs, []byte) {
	h, data, err := in.tryRead(hd, dd, 10*time.Second)
	if err != nil {
		in.t.Fatalf("read: %v", err)
	}
	return h, data
}

func (in *testInitiator) tryRead(hd, dd bool, timeout time.Duration) (bhs, []byte, error) {
	var h bhs
	in.nc.SetReadDeadline(time.Now().Add(timeout))
	if _, err := io.ReadFull(in.br, h[:]); err != nil {
		return h, nil, err
	}
	if hd {
		var d [4]byte
		if _, err := io.ReadFull(in.br, d[:]); err != nil {
			return h, nil, err
		}
		if binary.LittleEndian.Uint32(d[:]) != crc32c(h[:]) {
			return h, nil, fmt.Errorf("header digest mismatch")
		}
	}
	n := h.dataLen()
	data := make([]byte, n+pad4(n))
	if _, err := io.ReadFull(in.br, data); err != nil {
		return h, nil, err
	}
	if dd && n > 0 {
		var d [4]byte
		if _, err := io.ReadFull(in.br, d[:]); err != nil {
			return h, nil, err
		}
		if binary.LittleEndian.Uint32(d[:]) != crc32c(data) {
			return h, nil, fmt.Errorf("data digest mismatch")
		}
	}
	return h, data[:n], nil
}

func (in *testInitiator) recv() (bhs, []byte) { return in.readRaw(in.hdrDigest, in.dataDigest) }

// scsiResult collects the answer to one command.
type scsiResult struct {
	status   byte
	data     []byte
	sense    []byte
	flags    byte
	residual uint32
	r2ts     int
}

// cmdPDU builds a SCSI Command PDU with immediate data as the session allows.
func (in *testInitiator) cmdPDU(itt uint32, lun uint16, cdb []byte, out []byte, readLen int) (bhs, []byte) {
	var h bhs
	h[0] = opSCSICmd
	h[1] = 0x80 | 0x01 // F, SIMPLE
	if readLen > 0 {
		h[1] |= 0x40
	}
	edtl := readLen
	var imm []byte
	if out != nil {
		h[1] |= 0x20
		edtl = len(out)
		if in.immediate {
			imm = out[:min(len(out), in.firstBurst, in.maxXmit)]
		}
		if !in.initialR2T && len(imm) < min(len(out), in.firstBurst) {
			h[1] &^= 0x80 // unsolicited Data-Out follows
		}
	}
	h.setLUN(uint64(lun) << 48)
	h.setU32(16, itt)
	h.setU32(20, uint32(edtl))
	h.setU32(24, in.cmdSN)
	in.cmdSN++
	h.setU32(28, in.expStatSN)
	copy(h[32:], cdb)
	return h, imm
}

// dataOut sends Data-Out PDUs for [off, off+n) of out.
func (in *testInitiator) dataOut(itt, ttt uint32, out []byte, off, n int) {
	var sn uint32
	for end := off + n; off < end; sn++ {
		k := min(in.maxXmit, end-off)
		var h bhs
		h[0] = opDataOut
		if off+k == end {
			h[1] = 0x80
		}
		h.setU32(16, itt)
		h.setU32(20, ttt)
		h.setU32(28, in.expStatSN)
		h.setU32(36, sn)
		h.setU32(40, uint32(off))
		in.send(&h, out[off:off+k])
		off += k
	}
}

// do runs one command to completion: immediate and unsolicited data,
// R2T-driven Data-Out, Data-In and the status.
func (in *testInitiator) do(lun uint16, cdb []byte, out []byte, readLen int) scsiResult {
	in.t.Helper()
	itt := in.nextITT()
	h, imm := in.cmdPDU(itt, lun, cdb, out, readLen)
	in.send(&h, imm)
	if out != nil && h[1]&0x80 == 0 {
		in.dataOut(itt, reservedTag, out, len(imm), min(len(out), in.firstBurst)-len(imm))
	}
	var r scsiResult
	for {
		rh, data := in.recv()
		if rh.itt() != itt && rh.opcode() != opNOPIn {
			in.t.Fatalf("unexpected PDU 0x%02x for ITT %d", rh.opcode(), rh.itt())
		}
		in.maxCmdSN = max(in.maxCmdSN, rh.u32(32))
		switch rh.opcode() {
		case opR2T:
			r.r2ts++
			in.dataOut(itt, rh.u32(20), out, int(rh.u32(40)), int(rh.u32(44)))
		case opDataIn:
			r.data = append(r.data, data...)
			if rh[1]&0x01 != 0 {
				in.expStatSN = rh.u32(24) + 1
				r.status, r.flags, r.residual = rh[3], rh[1]&0x06, rh.u32(44)
				return r
			}
		case opSCSIResp:
			in.expStatSN = rh.u32(24) + 1
			r.status, r.flags, r.residual = rh[3], rh[1]&0x06, rh.u32(44)
			if len(data) >= 2 {
				r.sense = data[2 : 2+int(binary.BigEndian.Uint16(data[0:2]))]
			}
			return r
		case opReject:
			in.t.Fatalf("command rejected, reason 0x%02x", rh[2])
		}
	}
}

func read10(lba uint32, blocks uint16) []byte {
	cdb := make([]byte, 10)
	cdb[0] = 0x28
	binary.BigEndian.PutUint32(cdb[2:], lba)
	binary.BigEndian.PutUint16(cdb[7:], blocks)
	return cdb
}

func write10(lba uint32, blocks uint16) []byte {
	cdb := read10(lba, blocks)
	cdb[0] = 0x2a
	return cdb
}

// logout closes the session (reason 0) and returns the response code.
func (in *testInitiator) logout() byte {
	var h bhs
	h[0] = 0x40 | opLogoutReq
	h[1] = 0x80
	h.setU32(16, in.nextITT())
	h.setU32(24, in.cmdSN)
	h.setU32(28, in.expStatSN)
	in.send(&h, nil)
	rh, _ := in.recv()
	if rh.opcode() != opLogoutResp {
		in.t.Fatalf("logout: got 0x%02x", rh.opcode())
	}
	return rh[2]
}

package iscsi

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// pduBytes encodes a PDU for seeds.
func pduBytes(op byte, flags byte, itt uint32, cdbOrSpecific []byte, data []byte) []byte {
	var h bhs
	h[0], h[1] = op, flags
	h.setDataLen(len(data))
	h.setU32(16, itt)
	copy(h[32:], cdbOrSpecific)
	out := append(h[:], data...)
	return append(out, zeroPad[:pad4(len(data))]...)
}

func pduSeeds() [][]byte {
	return [][]byte{
		pduBytes(opSCSICmd, 0x80, 1, tur, nil),
		pduBytes(opSCSICmd, 0xc0, 2, read10(0, 1), nil),
		pduBytes(opSCSICmd, 0xa0, 3, write10(0, 1), make([]byte, 512)),
		pduBytes(opDataOut, 0x80, 9, nil, make([]byte, 100)),
		pduBytes(0x40|opNOPOut, 0x80, 4, nil, []byte("ping")),
		pduBytes(0x40|opTextReq, 0x80, 5, nil, appendText(nil, "SendTargets", "All")),
		pduBytes(0x40|opTaskMgmt, 0x80|tmfLUNReset, 6, nil, nil),
		pduBytes(0x40|opTaskMgmt, 0x80|tmfAbortTask, 7, nil, nil),
		pduBytes(0x40|opLogoutReq, 0x80, 8, nil, nil),
		pduBytes(opSNACK, 0x80, 10, nil, nil),
		pduBytes(0x1e, 0x80, 11, nil, []byte{1, 2, 3}),
		{0x01, 0x80, 0, 0x40, 0xff, 0xff, 0xff},
	}
}

// FuzzReadPDU: the PDU reader never panics and never reads beyond the
// limits it was given, whatever the bytes.
func FuzzReadPDU(f *testing.F) {
	for _, s := range pduSeeds() {
		f.Add(s, byte(0))
		f.Add(s, byte(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, digests byte) {
		p := pduReader{r: bufio.NewReader(bytes.NewReader(data)), maxData: 8192,
			hdrDigest: digests&1 != 0, dataDigest: digests&2 != 0}
		var h bhs
		for i := 0; i < 64; i++ {
			if err := p.readHeader(&h); err != nil {
				return
			}
			if h.dataLen() > p.maxData {
				t.Fatalf("accepted data length %d > %d", h.dataLen(), p.maxData)
			}
			p.extendedCDB()
			buf := make([]byte, min(h.dataLen(), 100))
			if err := p.readData(&h, buf); err != nil {
				return
			}
		}
	})
}

// FuzzParseText: parsing never panics, and what parses re-encodes to the
// same pairs.
func FuzzParseText(f *testing.F) {
	f.Add([]byte("InitiatorName=iqn.x\x00SessionType=Normal\x00"))
	f.Add([]byte("a=\x00=b\x00\x00\x00"))
	f.Add([]byte("noequals"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kvs, err := parseText(data)
		if err != nil {
			return
		}
		var enc []byte
		for _, k := range kvs {
			enc = appendText(enc, k.key, k.value)
		}
		again, err := parseText(enc)
		if err != nil || len(again) != len(kvs) {
			t.Fatalf("re-parse: %v, %d vs %d pairs", err, len(again), len(kvs))
		}
		for i := range kvs {
			if again[i] != kvs[i] {
				t.Fatalf("pair %d: %v vs %v", i, again[i], kvs[i])
			}
		}
	})
}

// FuzzLoginStep: any login request header and text yields a response, never
// a panic, and a successful final step only with the required keys.
func FuzzLoginStep(f *testing.F) {
	good := appendText(nil, "InitiatorName", "iqn.x")
	good = appendText(good, "TargetName", IQN(testVolume))
	good = appendText(good, "AuthMethod", "CHAP,None")
	f.Add(byte(0x87), byte(0), good, false)
	f.Add(byte(0x83), byte(0), appendText(good, "HeaderDigest", "CRC32C"), true)
	f.Add(byte(0xc0), byte(1), []byte("CHAP_A=5\x00"), true)
	f.Fuzz(func(t *testing.T, flags, vmin byte, text []byte, chap bool) {
		user, secret := "", ""
		if chap {
			user, secret = "u", "secret-secret"
		}
		ls := newLoginState(&defaultLimits, IQN(testVolume), user, secret)
		var h bhs
		h[0], h[1], h[3] = 0x40|opLoginReq, flags, vmin
		r := decodeLoginReq(&h)
		for i := 0; i < 3; i++ {
			resp := ls.step(&r, text)
			if resp.status == loginSuccess && resp.done && ls.initiatorName == "" {
				t.Fatal("login completed without InitiatorName")
			}
			if resp.status == loginSuccess && resp.done && chap && ls.chap.stage != chapDone {
				t.Fatal("login completed without CHAP")
			}
		}
	})
}

// FuzzConnection: after a valid login, arbitrary bytes on a connection end
// at worst that connection; the target keeps serving new sessions.
func FuzzConnection(f *testing.F) {
	for _, s := range pduSeeds() {
		f.Add(s)
	}
	f.Add(bytes.Join(pduSeeds(), nil))
	tt := startTarget(f, 4<<20, Config{}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := dialTarget(t, tt.addr)
		if st := in.login(loginOpts{}); st != 0 {
			t.Fatalf("login 0x%04x", st)
		}
		in.nc.SetDeadline(time.Now().Add(10 * time.Second))
		in.nc.Write(data)
		in.nc.(*net.TCPConn).CloseWrite()
		if _, err := io.Copy(io.Discard, in.nc); err != nil {
			t.Fatalf("connection not closed by the target after EOF: %v", err)
		}
		in.nc.Close()
		next := dialTarget(t, tt.addr)
		if st := next.login(loginOpts{isid: 1}); st != 0 {
			t.Fatalf("new login after fuzzed connection: 0x%04x", st)
		}
		if r := next.do(1, tur, nil, 0); r.status != 0 && r.status != 2 {
			t.Fatalf("TUR status %d", r.status)
		}
		next.nc.Close()
	})
}

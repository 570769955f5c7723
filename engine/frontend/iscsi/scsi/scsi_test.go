package scsi

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// memBackend is an in-memory Backend for unit tests.
type memBackend struct {
	mu      sync.Mutex
	data    []byte
	flushes int
}

func (m *memBackend) ReadAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off+int64(len(p)) > int64(len(m.data)) {
		return 0, frontend.ErrOutOfRange
	}
	return copy(p, m.data[off:]), nil
}

func (m *memBackend) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off < 0 || off+int64(len(p)) > int64(len(m.data)) {
		return 0, frontend.ErrOutOfRange
	}
	return copy(m.data[off:], p), nil
}

func (m *memBackend) UnmapAt(n uint32, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.data[off : off+int64(n)])
	return int(n), nil
}

func (m *memBackend) Flush() error { m.mu.Lock(); m.flushes++; m.mu.Unlock(); return nil }
func (m *memBackend) Size() int64  { return int64(len(m.data)) }

func newTestLU(t *testing.T, blocks int) (*LU, *memBackend) {
	t.Helper()
	be := &memBackend{data: make([]byte, blocks*BlockSize)}
	lu, err := NewLU(Config{Name: "v", Size: int64(blocks * BlockSize), TargetName: "iqn.x:v", RelativePortID: 1, LUNs: []uint16{0, 1}}, be)
	if err != nil {
		t.Fatal(err)
	}
	return lu, be
}

var nexA, nexB = &Nexus{Port: "iqn.a,i,0x1"}, &Nexus{Port: "iqn.b,i,0x2"}

func run(lu *LU, n *Nexus, cdb []byte, data []byte, allocIn int) (Result, *Error) {
	return lu.Execute(&Command{CDB: cdb, Nexus: n, Data: data, AllocIn: allocIn, ExpectedOut: len(data)})
}

func senseOf(e *Error) (byte, ASC) {
	if e == nil {
		return 0, 0
	}
	return e.Sense.Key, e.Sense.ASC
}

func cdb16(op byte, lba uint64, n uint32) []byte {
	c := make([]byte, 16)
	c[0] = op
	binary.BigEndian.PutUint64(c[2:10], lba)
	binary.BigEndian.PutUint32(c[10:14], n)
	return c
}

func TestSenseFormats(t *testing.T) {
	s := Sense{Key: KeyIllegalRequest, ASC: ASCInvalidFieldInCDB, FieldValid: true, FieldInCDB: true, FieldByte: 7, HasInfo: true, Info: 9}
	f := s.AppendFixed(nil)
	if len(f) != FixedLen || f[0] != 0xf0 || f[2] != 5 || f[12] != 0x24 || f[13] != 0 || f[15] != 0xc0 || f[17] != 7 || f[6] != 9 {
		t.Fatalf("fixed % x", f)
	}
	d := s.AppendDescriptor(nil)
	if d[0] != 0x72 || d[1] != 5 || d[2] != 0x24 || int(d[7]) != len(d)-8 || d[8] != 0 || d[20] != 2 {
		t.Fatalf("descriptor % x", d)
	}
}

func TestDecodeRW(t *testing.T) {
	for _, c := range []struct {
		cdb    []byte
		lba, n uint64
	}{
		{[]byte{0x08, 0x1f, 0xff, 0xff, 0x00, 0}, 0x1fffff, 0},
		{[]byte{0x28, 0x08, 0, 0, 1, 0, 0, 0, 9, 0}, 256, 9},
		{[]byte{0xa8, 0, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0}, 2, 256},
		{cdb16(0x88, 1<<40, 70000), 1 << 40, 70000},
	} {
		d := decodeRW(c.cdb)
		if d.lba != c.lba || d.n != c.n {
			t.Errorf("% x: lba %d n %d, want %d %d", c.cdb, d.lba, d.n, c.lba, c.n)
		}
	}
}

func TestReadWriteRanges(t *testing.T) {
	lu, be := newTestLU(t, 64)
	data := bytes.Repeat([]byte{0xab}, 2*BlockSize)
	if _, e := run(lu, nexA, cdb16(opWrite16, 62, 2), data, 0); e != nil {
		t.Fatalf("write at end: %v", e.Sense)
	}
	if _, e := run(lu, nexA, cdb16(opWrite16, 63, 2), data, 0); e == nil || e.Sense.ASC != ASCLBAOutOfRange {
		t.Fatalf("write beyond end: %+v", e)
	}
	r, e := run(lu, nexA, cdb16(opRead16, 62, 2), nil, 100)
	if e != nil || r.XferLen != 1024 || len(r.Data) != 100 || r.Data[0] != 0xab {
		t.Fatalf("short read: %+v %v", r, e)
	}
	fua := cdb16(opWrite16, 0, 1)
	fua[1] = 0x08
	before := be.flushes
	run(lu, nexA, fua, data[:BlockSize], 0)
	if be.flushes != before+1 {
		t.Fatal("FUA write did not flush")
	}
	rp := cdb16(opRead16, 0, 1)
	rp[1] = 0x20
	if _, e := run(lu, nexA, rp, nil, 512); e == nil || e.Sense.ASC != ASCInvalidFieldInCDB {
		t.Fatalf("RDPROTECT: %+v", e)
	}
}

func TestCompareAndWrite(t *testing.T) {
	lu, be := newTestLU(t, 16)
	copy(be.data[BlockSize:], bytes.Repeat([]byte{1}, BlockSize))
	c := cdb16(opCompareAndWrite, 1, 0)
	c[13] = 1
	verify := bytes.Repeat([]byte{1}, BlockSize)
	verify[100] = 7
	_, e := run(lu, nexA, c, append(verify, bytes.Repeat([]byte{2}, BlockSize)...), 0)
	if k, a := senseOf(e); k != KeyMiscompare || a != ASCMiscompareDuringVerify || e.Sense.Info != 100 {
		t.Fatalf("miscompare: %+v", e)
	}
	verify[100] = 1
	if _, e := run(lu, nexA, c, append(verify, bytes.Repeat([]byte{2}, BlockSize)...), 0); e != nil {
		t.Fatalf("compare and write: %+v", e)
	}
	if be.data[BlockSize] != 2 {
		t.Fatal("not written")
	}
	if _, e := run(lu, nexA, c, verify, 0); e == nil {
		t.Fatal("CAW with half the data succeeded")
	}
}

func TestInquiryAllocationLength(t *testing.T) {
	lu, _ := newTestLU(t, 16)
	r, e := run(lu, nexA, []byte{opInquiry, 0, 0, 0, 36, 0}, nil, 255)
	if e != nil || r.XferLen != 36 || len(r.Data) != 36 || string(r.Data[8:16]) != "LONGHORN" {
		t.Fatalf("inquiry: %+v %v", r, e)
	}
	r, _ = run(lu, nexA, []byte{opInquiry, 1, 0xb0, 0, 255, 0}, nil, 255)
	if r.XferLen != 64 || r.Data[1] != 0xb0 {
		t.Fatalf("block limits: %d bytes", r.XferLen)
	}
	if _, e := run(lu, nexA, []byte{opInquiry, 1, 0x99, 0, 255, 0}, nil, 255); e == nil {
		t.Fatal("unknown VPD page accepted")
	}
}

func TestReportLUNs(t *testing.T) {
	lu, _ := newTestLU(t, 16)
	c := make([]byte, 12)
	c[0] = opReportLuns
	c[9] = 64
	r, e := run(lu, nexA, c, nil, 64)
	if e != nil || binary.BigEndian.Uint32(r.Data[0:4]) != 16 || r.Data[17] != 1 {
		t.Fatalf("report luns % x %v", r.Data, e)
	}
	for _, l := range []uint16{0, 1, 255, 256, 16000} {
		got, ok := DecodeLUN(uint64(EncodeLUN(l)) << 48)
		if !ok || got != l {
			t.Errorf("LUN %d round trip: %d %v", l, got, ok)
		}
	}
}

func prOut(sa, typ byte, key, saKey uint64) ([]byte, []byte) {
	c := make([]byte, 10)
	c[0], c[1], c[2], c[8] = opPROut, sa, typ, 24
	p := make([]byte, 24)
	binary.BigEndian.PutUint64(p[0:8], key)
	binary.BigEndian.PutUint64(p[8:16], saKey)
	return c, p
}

// TestPersistentReservations walks register, reserve, conflicts for a
// non-registrant, preempt and clear (SPC-5 5.14).
func TestPersistentReservations(t *testing.T) {
	lu, _ := newTestLU(t, 16)
	lu.AddNexus(nexA)
	lu.AddNexus(nexB)
	do := func(n *Nexus, sa, typ byte, key, saKey uint64) *Error {
		c, p := prOut(sa, typ, key, saKey)
		_, e := run(lu, n, c, p, 0)
		return e
	}
	steps := []struct {
		name string
		e    *Error
		want Status
	}{
		{"A registers", do(nexA, prOutRegister, 0, 0, 0xa), StatusGood},
		{"A registers again with wrong key", do(nexA, prOutRegister, 0, 0x5, 0xaa), StatusReservationConflict},
		{"B reserves unregistered", do(nexB, prOutReserve, prWriteExclusive, 0xb, 0), StatusReservationConflict},
		{"A reserves WE", do(nexA, prOutReserve, prWriteExclusive, 0xa, 0), StatusGood},
	}
	for _, s := range steps {
		got := StatusGood
		if s.e != nil {
			got = s.e.Status
		}
		if got != s.want {
			t.Fatalf("%s: status %#x, want %#x", s.name, got, s.want)
		}
	}
	if _, e := run(lu, nexB, cdb16(opRead16, 0, 1), nil, 512); e != nil {
		t.Fatalf("B read under WE: %+v", e)
	}
	if _, e := run(lu, nexB, cdb16(opWrite16, 0, 1), make([]byte, 512), 0); e == nil || e.Status != StatusReservationConflict {
		t.Fatalf("B write under WE: %+v", e)
	}
	if e := do(nexB, prOutRegister, 0, 0, 0xb); e != nil {
		t.Fatal(e)
	}
	if e := do(nexB, prOutPreempt, prExclusiveAccess, 0xb, 0xa); e != nil {
		t.Fatalf("preempt: %+v", e)
	}
	if _, e := run(lu, nexA, cdb16(opRead16, 0, 1), nil, 512); e == nil || e.Sense.ASC != ASCRegistrationsPreempted {
		t.Fatalf("A after preempt: want REGISTRATIONS PREEMPTED UA, got %+v", e)
	}
	if _, e := run(lu, nexA, cdb16(opRead16, 0, 1), nil, 512); e == nil || e.Status != StatusReservationConflict {
		t.Fatalf("A read under B's EA: %+v", e)
	}
	if e := do(nexB, prOutClear, 0, 0xb, 0); e != nil {
		t.Fatal(e)
	}
	if _, e := run(lu, nexA, cdb16(opWrite16, 0, 1), make([]byte, 512), 0); e != nil {
		t.Fatalf("A write after clear: %+v", e)
	}
}

func TestModeSelectChangesOnlyChangeable(t *testing.T) {
	lu, be := newTestLU(t, 16)
	lu.AddNexus(nexA)
	lu.AddNexus(nexB)
	r, _ := run(lu, nexA, []byte{opModeSense6, 0x08, pageCaching, 0, 255, 0}, nil, 255)
	page := append([]byte(nil), r.Data[4:]...)
	page[2] &^= 0x04 // WCE off
	param := append([]byte{0, 0, 0, 0}, page...)
	if _, e := run(lu, nexA, []byte{opModeSelect6, 0x10, 0, 0, byte(len(param)), 0}, param, 0); e != nil {
		t.Fatalf("mode select WCE=0: %+v", e)
	}
	before := be.flushes
	run(lu, nexA, cdb16(opWrite16, 0, 1), make([]byte, 512), 0)
	if be.flushes != before+1 {
		t.Fatal("write with WCE=0 did not flush")
	}
	if _, e := run(lu, nexB, []byte{0, 0, 0, 0, 0, 0}, nil, 0); e == nil || e.Sense.ASC != ASCModeParametersChanged {
		t.Fatalf("other nexus: want MODE PARAMETERS CHANGED, got %+v", e)
	}
	param[4+3] = 0xff // a non-changeable field of the caching page
	if _, e := run(lu, nexA, []byte{opModeSelect6, 0x10, 0, 0, byte(len(param)), 0}, param, 0); e == nil || e.Sense.ASC != ASCInvalidFieldInParamList {
		t.Fatalf("non-changeable field: %+v", e)
	}
}

func TestUnmapAndWriteSame(t *testing.T) {
	lu, be := newTestLU(t, 64)
	copy(be.data, bytes.Repeat([]byte{9}, len(be.data)))
	p := make([]byte, 24)
	binary.BigEndian.PutUint16(p[0:2], 22)
	binary.BigEndian.PutUint16(p[2:4], 16)
	binary.BigEndian.PutUint64(p[8:16], 8)
	binary.BigEndian.PutUint32(p[16:20], 8)
	if _, e := run(lu, nexA, []byte{opUnmap, 0, 0, 0, 0, 0, 0, 0, 24, 0}, p, 0); e != nil {
		t.Fatal(e)
	}
	if be.data[8*BlockSize] != 0 || be.data[16*BlockSize] != 9 {
		t.Fatal("unmap range wrong")
	}
	ws := cdb16(opWriteSame16, 32, 4)
	if _, e := run(lu, nexA, ws, bytes.Repeat([]byte{5}, BlockSize), 0); e != nil {
		t.Fatal(e)
	}
	if be.data[35*BlockSize+511] != 5 || be.data[36*BlockSize] != 9 {
		t.Fatal("write same range wrong")
	}
	ws[1] = 0x08 // UNMAP with a zero block
	if _, e := run(lu, nexA, ws, make([]byte, BlockSize), 0); e != nil || be.data[32*BlockSize] != 0 {
		t.Fatalf("write same unmap: %v", e)
	}
	if _, e := run(lu, nexA, ws, make([]byte, 2*BlockSize), 0); e == nil {
		t.Fatal("write same with 2 blocks of data succeeded")
	}
}

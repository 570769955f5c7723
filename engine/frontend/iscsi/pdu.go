package iscsi

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Opcodes (RFC 7143 11.2.1.2). Initiator opcodes are 0x00-0x1f, target
// opcodes 0x20-0x3f.
const (
	opNOPOut       = 0x00
	opSCSICmd      = 0x01
	opTaskMgmt     = 0x02
	opLoginReq     = 0x03
	opTextReq      = 0x04
	opDataOut      = 0x05
	opLogoutReq    = 0x06
	opSNACK        = 0x10
	opNOPIn        = 0x20
	opSCSIResp     = 0x21
	opTaskMgmtResp = 0x22
	opLoginResp    = 0x23
	opTextResp     = 0x24
	opDataIn       = 0x25
	opLogoutResp   = 0x26
	opR2T          = 0x31
	opReject       = 0x3f
)

// Reject reasons (RFC 7143 11.17.1).
const (
	rejectDataDigest       = 0x02
	rejectSNACK            = 0x03
	rejectProtocolError    = 0x04
	rejectNotSupported     = 0x05
	rejectTooManyImmediate = 0x06
	rejectTaskInProgress   = 0x07
	rejectInvalidField     = 0x09
)

const (
	bhsLen        = 48
	digestLen     = 4
	reservedTag   = 0xffffffff
	maxAHSBytes   = 255 * 4
	ahsExtendedCD = 1 // AHS type: extended CDB (RFC 7143 11.2.2.2)
)

// bhs is a Basic Header Segment (RFC 7143 11.2.1): 48 bytes, big endian.
type bhs [bhsLen]byte

func (h *bhs) opcode() byte       { return h[0] & 0x3f }
func (h *bhs) immediate() bool    { return h[0]&0x40 != 0 }
func (h *bhs) final() bool        { return h[1]&0x80 != 0 }
func (h *bhs) ahsLen() int        { return int(h[4]) * 4 }
func (h *bhs) dataLen() int       { return int(h[5])<<16 | int(h[6])<<8 | int(h[7]) }
func (h *bhs) lun() uint64        { return binary.BigEndian.Uint64(h[8:16]) }
func (h *bhs) itt() uint32        { return binary.BigEndian.Uint32(h[16:20]) }
func (h *bhs) u32(off int) uint32 { return binary.BigEndian.Uint32(h[off : off+4]) }
func (h *bhs) u16(off int) uint16 { return binary.BigEndian.Uint16(h[off : off+2]) }

func (h *bhs) setDataLen(n int) {
	h[5], h[6], h[7] = byte(n>>16), byte(n>>8), byte(n)
}
func (h *bhs) setU32(off int, v uint32) { binary.BigEndian.PutUint32(h[off:off+4], v) }
func (h *bhs) setU16(off int, v uint16) { binary.BigEndian.PutUint16(h[off:off+2], v) }
func (h *bhs) setLUN(v uint64)          { binary.BigEndian.PutUint64(h[8:16], v) }

// Errors of the PDU reader. Any of them ends the connection (RFC 7143
// 7.8: at ErrorRecoveryLevel 0 a format or digest error is a connection failure).
var (
	errHeaderDigest = errors.New("iscsi: header digest mismatch")
	errDataDigest   = errors.New("iscsi: data digest mismatch")
	errDataTooLong  = errors.New("iscsi: data segment longer than MaxRecvDataSegmentLength")
	errProtocol     = errors.New("iscsi: protocol error")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c returns the iSCSI digest (RFC 7143 13.1, CRC32C) of the parts.
func crc32c(parts ...[]byte) uint32 {
	var c uint32
	for _, p := range parts {
		c = crc32.Update(c, castagnoli, p)
	}
	return c
}

// pad4 is the number of padding bytes after a data segment of n bytes.
func pad4(n int) int { return (4 - n&3) & 3 }

var zeroPad [4]byte

// pduReader reads PDUs from a connection: the header (with AHS and header
// digest) first, then the data segment into a buffer the caller chooses.
type pduReader struct {
	r          *bufio.Reader
	hdrDigest  bool
	dataDigest bool
	// maxData is our MaxRecvDataSegmentLength (bytes).
	maxData int
	ahs     [maxAHSBytes]byte
	ahsN    int
	skip    [4096]byte
}

// readHeader reads one BHS, its AHS and header digest into h.
func (p *pduReader) readHeader(h *bhs) error {
	if _, err := io.ReadFull(p.r, h[:]); err != nil {
		return err
	}
	p.ahsN = h.ahsLen()
	if p.ahsN > 0 {
		if _, err := io.ReadFull(p.r, p.ahs[:p.ahsN]); err != nil {
			return err
		}
	}
	if h.dataLen() > p.maxData {
		return fmt.Errorf("%w: %d > %d", errDataTooLong, h.dataLen(), p.maxData)
	}
	if !p.hdrDigest {
		return nil
	}
	var d [digestLen]byte
	if _, err := io.ReadFull(p.r, d[:]); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(d[:]) != crc32c(h[:], p.ahs[:p.ahsN]) {
		return errHeaderDigest
	}
	return nil
}

// extendedCDB returns the bytes of an extended-CDB AHS, if present.
func (p *pduReader) extendedCDB() []byte {
	a := p.ahs[:p.ahsN]
	for len(a) >= 4 {
		n := int(binary.BigEndian.Uint16(a[0:2]))
		if 3+n > len(a) {
			return nil
		}
		if a[2] == ahsExtendedCD && n >= 1 {
			return a[4 : 3+n]
		}
		a = a[(3+n+3)&^3:]
	}
	return nil
}

// readData reads the data segment of h (dataLen bytes): the first len(dst)
// bytes into dst, the rest discarded, then padding and data digest.
// len(dst) must not exceed h.dataLen().
func (p *pduReader) readData(h *bhs, dst []byte) error {
	n := h.dataLen()
	if _, err := io.ReadFull(p.r, dst); err != nil {
		return err
	}
	var c uint32
	if p.dataDigest {
		c = crc32.Update(0, castagnoli, dst)
	}
	rest := n - len(dst) + pad4(n)
	for rest > 0 {
		k := min(rest, len(p.skip))
		if _, err := io.ReadFull(p.r, p.skip[:k]); err != nil {
			return err
		}
		if p.dataDigest {
			c = crc32.Update(c, castagnoli, p.skip[:k])
		}
		rest -= k
	}
	if !p.dataDigest || n == 0 {
		return nil
	}
	var d [digestLen]byte
	if _, err := io.ReadFull(p.r, d[:]); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(d[:]) != c {
		return errDataDigest
	}
	return nil
}

// skipData discards the data segment of h.
func (p *pduReader) skipData(h *bhs) error { return p.readData(h, nil) }

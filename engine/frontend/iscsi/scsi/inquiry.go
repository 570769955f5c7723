package scsi

import (
	"encoding/binary"
	"fmt"
)

// Identification strings of the standard INQUIRY data (SPC-5 6.7.2).
const (
	VendorID   = "LONGHORN"
	ProductID  = "VIRTUAL-DISK"
	ProductRev = "0001"
	// ieeeOUI is the company identifier in the NAA designator (locally
	// administered, no registered OUI behind it).
	ieeeOUI = 0x000000
)

// VPD pages this device server returns, in ascending order.
var supportedVPD = []byte{0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2}

func serialFrom(sum uint64) string { return fmt.Sprintf("%016x", sum) }

// naaFrom builds an NAA IEEE Registered Extended designator (NAA 6, SPC-5
// 7.7.6.6.4): 4-bit NAA, 24-bit OUI, 100 bits of vendor-specific identifier
// taken from a hash of the volume name.
func naaFrom(sum uint64, name string) [16]byte {
	var b [16]byte
	b[0] = 0x60 | byte(ieeeOUI>>20)
	b[1] = byte(ieeeOUI >> 12)
	b[2] = byte(ieeeOUI >> 4)
	b[3] = byte(ieeeOUI<<4) | byte(sum>>60)
	binary.BigEndian.PutUint64(b[4:12], sum<<4|uint64(len(name)&0xf))
	h := uint32(2166136261)
	for i := len(name) - 1; i >= 0; i-- {
		h = (h ^ uint32(name[i])) * 16777619
	}
	binary.BigEndian.PutUint32(b[12:16], h)
	return b
}

func allocLen16(cdb []byte) int { return int(binary.BigEndian.Uint16(cdb[3:5])) }

// inquiry is INQUIRY (SPC-5 6.7): standard data, or a VPD page with EVPD.
func (lu *LU) inquiry(c *Command) (Result, *Error) {
	cdb := c.CDB
	alloc := allocLen16(cdb)
	if cdb[1]&0x02 != 0 { // CMDDT (obsolete)
		return Result{}, errInvalidCDB(1, 1)
	}
	if cdb[1]&0x01 == 0 {
		if cdb[2] != 0 {
			return Result{}, errInvalidCDB(2, -1)
		}
		return dataIn(standardInquiry(0x00), alloc, c), nil
	}
	page, e := lu.vpdPage(cdb[2])
	if e != nil {
		return Result{}, e
	}
	return dataIn(page, alloc, c), nil
}

// standardInquiry returns the 96-byte standard INQUIRY data for a device of
// the given peripheral device type.
func standardInquiry(devType byte) []byte {
	b := make([]byte, 96)
	b[0] = devType
	b[2] = 0x06 // VERSION: SPC-4
	b[3] = 0x12 // HISUP, RESPONSE DATA FORMAT 2
	b[4] = byte(len(b) - 5)
	b[5] = 0x00 // no TPGS, no 3PC, PROTECT=0
	b[7] = 0x02 // CMDQUE
	copy(b[8:16], pad(VendorID, 8))
	copy(b[16:32], pad(ProductID, 16))
	copy(b[32:36], pad(ProductRev, 4))
	// version descriptors (SPC-5 table 148)
	for i, v := range []uint16{0x00a0 /*SAM-5*/, 0x0960 /*iSCSI*/, 0x0460 /*SPC-4*/, 0x04c0 /*SBC-3*/} {
		if devType != 0 && v == 0x04c0 {
			v = 0x0000
		}
		binary.BigEndian.PutUint16(b[58+2*i:], v)
	}
	return b
}

func pad(s string, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
	}
	copy(b, s)
	return b
}

// vpdPage builds one VPD page (SPC-5 7.7, SBC-4 6.6).
func (lu *LU) vpdPage(code byte) ([]byte, *Error) {
	var body []byte
	switch code {
	case 0x00:
		body = supportedVPD
	case 0x80:
		body = []byte(lu.serial)
	case 0x83:
		body = lu.deviceIdentification()
	case 0xb0:
		body = blockLimits()
	case 0xb1:
		body = make([]byte, 0x3c)
		binary.BigEndian.PutUint16(body[0:2], 1) // MEDIUM ROTATION RATE: non-rotating
	case 0xb2:
		body = []byte{
			0,    // THRESHOLD EXPONENT
			0xe0, // LBPU, LBPWS, LBPWS10; LBPRZ=0, ANC_SUP=0, DP=0
			0x02, // PROVISIONING TYPE: thin
			0,
		}
	default:
		return nil, errInvalidCDB(2, -1)
	}
	h := []byte{0x00, code, 0, 0}
	binary.BigEndian.PutUint16(h[2:4], uint16(len(body)))
	return append(h, body...), nil
}

// blockLimits is the Block Limits VPD page body (SBC-4 6.6.4).
func blockLimits() []byte {
	b := make([]byte, 0x3c)
	b[0] = 0x01 // WSNZ
	b[1] = MaxCompareAndWrite
	binary.BigEndian.PutUint16(b[2:4], unmapGranularity) // OPTIMAL TRANSFER LENGTH GRANULARITY
	binary.BigEndian.PutUint32(b[4:8], MaxTransferBlocks)
	binary.BigEndian.PutUint32(b[8:12], OptimalXferBlocks)
	binary.BigEndian.PutUint32(b[12:16], MaxTransferBlocks) // MAXIMUM PREFETCH LENGTH
	binary.BigEndian.PutUint32(b[16:20], MaxUnmapBlocks)
	binary.BigEndian.PutUint32(b[20:24], MaxUnmapDescriptors)
	binary.BigEndian.PutUint32(b[24:28], unmapGranularity)
	binary.BigEndian.PutUint32(b[28:32], 0x80000000) // UGAVALID, alignment 0
	binary.BigEndian.PutUint64(b[32:40], MaxWriteSameBlocks)
	return b
}

// deviceIdentification is the Device Identification VPD page body (SPC-5
// 7.7.6): NAA and T10 vendor designators for the LU, the relative target
// port and the target port and target device names (iSCSI name, type 8).
func (lu *LU) deviceIdentification() []byte {
	var out []byte
	desc := func(codeSet, assocType byte, piv bool, val []byte) {
		h := []byte{codeSet, assocType, 0, byte(len(val))}
		if piv {
			h[0] |= 0x50 // PROTOCOL IDENTIFIER 5 (iSCSI)
			h[1] |= 0x80 // PIV
		}
		out = append(append(out, h...), val...)
	}
	desc(0x01, 0x03, false, lu.naa[:])                                      // binary, LU, NAA
	desc(0x02, 0x01, false, append(pad(VendorID, 8), []byte(lu.serial)...)) // ASCII, LU, T10 vendor ID
	rel := []byte{0, 0, 0, 0}
	binary.BigEndian.PutUint16(rel[2:], lu.cfg.RelativePortID)
	desc(0x01, 0x14, true, rel) // binary, target port, relative target port
	if lu.cfg.TargetName != "" {
		desc(0x03, 0x18, true, iscsiName(fmt.Sprintf("%s,t,0x%04x", lu.cfg.TargetName, lu.cfg.RelativePortID))) // UTF-8, target port, SCSI name
		desc(0x03, 0x28, true, iscsiName(lu.cfg.TargetName))                                                    // UTF-8, target device, SCSI name
	}
	return out
}

// iscsiName NUL-terminates and pads an SCSI name string to a multiple of 4.
func iscsiName(s string) []byte {
	n := len(s) + 1
	n = (n + 3) &^ 3
	b := make([]byte, n)
	copy(b, s)
	return b
}

package scsi

import "encoding/binary"

func (lu *LU) testUnitReady(*Command) (Result, *Error) { return Result{}, nil }

// requestSense is REQUEST SENSE (SPC-5 6.39): a pending unit attention is
// returned (and cleared), otherwise NO SENSE. DESC selects the format.
func (lu *LU) requestSense(c *Command) (Result, *Error) {
	alloc := int(c.CDB[4])
	s := Sense{Key: KeyNoSense}
	lu.mu.Lock()
	if asc, ok := lu.popUALocked(c.Nexus.Port); ok {
		s = Sense{Key: KeyUnitAttention, ASC: asc}
	}
	lu.mu.Unlock()
	var b []byte
	if c.CDB[1]&0x01 != 0 {
		b = s.AppendDescriptor(nil)
	} else {
		b = s.AppendFixed(nil)
	}
	return dataIn(b, alloc, c), nil
}

// readCapacity10 is READ CAPACITY (10) (SBC-4 5.20).
func (lu *LU) readCapacity10(c *Command) (Result, *Error) {
	if c.CDB[8]&0x01 == 0 && binary.BigEndian.Uint32(c.CDB[2:6]) != 0 {
		return Result{}, errInvalidCDB(2, -1) // LBA without PMI
	}
	var b [8]byte
	last := lu.Blocks() - 1
	if last > 0xffffffff {
		last = 0xffffffff
	}
	binary.BigEndian.PutUint32(b[0:4], uint32(last))
	binary.BigEndian.PutUint32(b[4:8], BlockSize)
	return dataIn(b[:], len(b), c), nil
}

// readCapacity16 is READ CAPACITY (16) (SBC-4 5.21): 4096-byte physical
// blocks, LBPME set (thin provisioned), LBPRZ clear.
func (lu *LU) readCapacity16(c *Command) (Result, *Error) {
	alloc := int(binary.BigEndian.Uint32(c.CDB[10:14]))
	b := make([]byte, 32)
	binary.BigEndian.PutUint64(b[0:8], lu.Blocks()-1)
	binary.BigEndian.PutUint32(b[8:12], BlockSize)
	b[13] = physBlockExponent
	b[14] = 0x80 // LBPME
	return dataIn(b, alloc, c), nil
}

// startStop is START STOP UNIT (SBC-4 5.25). The medium is not removable, so
// LOEJ is refused; start, stop and power conditions are accepted and the
// unit stays ready (a volume has no spindle to stop).
func (lu *LU) startStop(c *Command) (Result, *Error) {
	if c.CDB[4]&0x02 != 0 {
		return Result{}, errInvalidCDB(4, 1)
	}
	if c.CDB[4]&0x04 == 0 && c.CDB[4]&0x01 == 0 && c.CDB[4]>>4 == 0 {
		// STOP without NO_FLUSH: flush the cache as a stop would.
		if err := lu.be.Flush(); err != nil {
			return Result{}, backendError(err, true)
		}
	}
	return Result{}, nil
}

// preventAllow is PREVENT ALLOW MEDIUM REMOVAL (SBC-4 5.13): the state is
// kept per I_T nexus and cleared by resets and nexus loss.
func (lu *LU) preventAllow(c *Command) (Result, *Error) {
	p := c.CDB[4] & 0x03
	if p > 1 {
		return Result{}, errInvalidCDB(4, 1)
	}
	lu.mu.Lock()
	defer lu.mu.Unlock()
	if p == 1 {
		lu.prevent[c.Nexus.Port] = true
	} else {
		delete(lu.prevent, c.Nexus.Port)
	}
	return Result{}, nil
}

// reportLunsSelf answers REPORT LUNS with the LUN list of the configuration.
func (lu *LU) reportLunsSelf(c *Command) (Result, *Error) {
	return ReportLUNs(c, lu.cfg.LUNs)
}

// ReportLUNs builds REPORT LUNS data (SPC-5 6.33) for the given LUNs
// (single-level peripheral or flat addressing, SAM-5 4.7).
func ReportLUNs(c *Command, luns []uint16) (Result, *Error) {
	cdb := c.CDB
	if len(cdb) < 12 {
		return Result{}, errInvalidOpcode
	}
	switch cdb[2] {
	case 0x00, 0x02:
	case 0x01: // well-known LUNs only: none
		luns = nil
	default:
		return Result{}, errInvalidCDB(2, -1)
	}
	alloc := int(binary.BigEndian.Uint32(cdb[6:10]))
	if alloc < 16 {
		return Result{}, errInvalidCDB(6, -1)
	}
	b := make([]byte, 8+8*len(luns))
	binary.BigEndian.PutUint32(b[0:4], uint32(8*len(luns)))
	for i, l := range luns {
		binary.BigEndian.PutUint16(b[8+8*i:], EncodeLUN(l))
	}
	return dataIn(b, alloc, c), nil
}

// EncodeLUN returns the first two bytes of the 8-byte LUN field for lun:
// peripheral device addressing below 256, flat space addressing above
// (SAM-5 4.7.6, 4.7.7).
func EncodeLUN(lun uint16) uint16 {
	if lun < 256 {
		return lun
	}
	return 0x4000 | (lun & 0x3fff)
}

// DecodeLUN is the inverse of EncodeLUN for the 8-byte LUN field of an
// iSCSI PDU; ok is false for address methods this target does not use.
func DecodeLUN(field uint64) (uint16, bool) {
	hi := uint16(field >> 48)
	if field&0x0000ffffffffffff != 0 {
		return 0, false
	}
	switch hi >> 14 {
	case 0:
		if hi>>8 != 0 {
			return 0, false
		}
		return hi & 0xff, true
	case 1:
		return hi & 0x3fff, true
	}
	return 0, false
}

// reportTMFs is REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS (SPC-5 6.38).
func (lu *LU) reportTMFs(c *Command) (Result, *Error) {
	alloc := int(binary.BigEndian.Uint32(c.CDB[6:10]))
	if alloc < 4 {
		return Result{}, errInvalidCDB(6, -1)
	}
	// ATS, ATSS, CTSS, LURS, TRS (SPC-5 table 266)
	const supported = 0x80 | 0x40 | 0x10 | 0x08 | 0x02
	b := []byte{supported, 0, 0, 0}
	if c.CDB[2]&0x80 != 0 { // REPD: extended format
		b = make([]byte, 16)
		b[0] = supported
		b[3] = 0x0c
	}
	return dataIn(b, alloc, c), nil
}

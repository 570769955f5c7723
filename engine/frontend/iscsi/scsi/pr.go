package scsi

import (
	"encoding/binary"
	"sort"
)

// Persistent reservation types (SPC-5 table 169).
const (
	prWriteExclusive     = 1
	prExclusiveAccess    = 3
	prWriteExclusiveRO   = 5
	prExclusiveAccessRO  = 6
	prWriteExclusiveAR   = 7
	prExclusiveAccessAR  = 8
	prTypeMaskByte4      = 0x80 | 0x40 | 0x20 | 0x08 | 0x02
	prTypeMaskByte5      = 0x01
	prInReadKeys         = 0
	prInReadReservation  = 1
	prInReportCaps       = 2
	prInReadFullStatus   = 3
	prOutRegister        = 0
	prOutReserve         = 1
	prOutRelease         = 2
	prOutClear           = 3
	prOutPreempt         = 4
	prOutPreemptAbort    = 5
	prOutRegisterIgnore  = 6
	prOutParamListLength = 24
)

type prReg struct {
	key   uint64
	nexus Nexus
}

// prState is the persistent reservation state of the LU (SPC-5 5.14),
// guarded by LU.mu. Registrations are per I_T nexus (initiator port).
type prState struct {
	generation uint32
	regs       map[string]*prReg
	holder     string // reserving nexus; unused for all-registrants types
	rtype      byte   // 0 when not reserved
}

func (p *prState) init() { p.regs = map[string]*prReg{} }

func (p *prState) active() bool { return len(p.regs) > 0 || p.rtype != 0 }

func allRegistrants(t byte) bool { return t == prWriteExclusiveAR || t == prExclusiveAccessAR }

// isHolder reports whether port holds the persistent reservation.
func (p *prState) isHolder(port string) bool {
	if p.rtype == 0 {
		return false
	}
	if allRegistrants(p.rtype) {
		return p.regs[port] != nil
	}
	return p.holder == port
}

// conflictLocked returns RESERVATION CONFLICT when c may not run under the
// current SPC-2 or persistent reservation (SPC-5 5.14.1, table 78).
func (lu *LU) conflictLocked(op *opInfo, c *Command) *Error {
	port := c.Nexus.Port
	if lu.res2 != "" && lu.res2 != port && op.flags&flagRes2Exempt == 0 {
		return errConflict
	}
	p := &lu.pr
	if p.rtype == 0 || op.flags&flagPRExempt != 0 || p.isHolder(port) {
		return nil
	}
	registered := p.regs[port] != nil
	read, write := op.flags&flagRead != 0, op.flags&flagWrite != 0
	switch p.rtype {
	case prWriteExclusive:
		if write {
			return errConflict
		}
	case prExclusiveAccess:
		if read || write {
			return errConflict
		}
	case prWriteExclusiveRO, prWriteExclusiveAR:
		if write && !registered {
			return errConflict
		}
	case prExclusiveAccessRO, prExclusiveAccessAR:
		if (read || write) && !registered {
			return errConflict
		}
	}
	return nil
}

// prIn is PERSISTENT RESERVE IN (SPC-5 6.16).
func (lu *LU) prIn(c *Command) (Result, *Error) {
	alloc := int(binary.BigEndian.Uint16(c.CDB[7:9]))
	lu.mu.Lock()
	defer lu.mu.Unlock()
	p := &lu.pr
	var b []byte
	switch c.CDB[1] & 0x1f {
	case prInReadKeys:
		b = make([]byte, 8, 8+8*len(p.regs))
		for _, r := range p.sortedRegs() {
			b = binary.BigEndian.AppendUint64(b, r.key)
		}
	case prInReadReservation:
		b = make([]byte, 8)
		if p.rtype != 0 {
			d := make([]byte, 16)
			if !allRegistrants(p.rtype) {
				binary.BigEndian.PutUint64(d[0:8], p.regs[p.holder].key)
			}
			d[13] = p.rtype
			b = append(b, d...)
		}
	case prInReportCaps:
		b = []byte{0, 8, 0x10 | 0x04, 0x80, prTypeMaskByte4, prTypeMaskByte5, 0, 0} // CRH, ATP_C; TMV
		return dataIn(b, alloc, c), nil
	case prInReadFullStatus:
		b = make([]byte, 8)
		for _, r := range p.sortedRegs() {
			b = append(b, p.fullStatus(r, lu.cfg.RelativePortID)...)
		}
	default:
		return Result{}, errInvalidCDB(1, 4)
	}
	binary.BigEndian.PutUint32(b[0:4], p.generation)
	binary.BigEndian.PutUint32(b[4:8], uint32(len(b)-8))
	return dataIn(b, alloc, c), nil
}

func (p *prState) sortedRegs() []*prReg {
	out := make([]*prReg, 0, len(p.regs))
	for _, r := range p.regs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].nexus.Port < out[j].nexus.Port })
	return out
}

// fullStatus is one READ FULL STATUS descriptor with an iSCSI TransportID
// of format 01b (name,i,0xISID; SPC-5 7.6.4.6).
func (p *prState) fullStatus(r *prReg, relPort uint16) []byte {
	tid := transportID(r.nexus.Port)
	d := make([]byte, 24, 24+len(tid))
	binary.BigEndian.PutUint64(d[0:8], r.key)
	if p.isHolder(r.nexus.Port) {
		d[12] |= 0x01
		d[13] = p.rtype
	}
	binary.BigEndian.PutUint16(d[18:20], relPort)
	binary.BigEndian.PutUint32(d[20:24], uint32(len(tid)))
	return append(d, tid...)
}

func transportID(port string) []byte {
	n := (len(port) + 1 + 3) &^ 3
	if n < 20 {
		n = 20
	}
	b := make([]byte, 4+n)
	b[0] = 0x40 | 0x05
	binary.BigEndian.PutUint16(b[2:4], uint16(n))
	copy(b[4:], port)
	return b
}

func prOutLen(_ *LU, cdb []byte) (int, *Error) {
	return int(binary.BigEndian.Uint32(cdb[5:9])), nil
}

// prOut is PERSISTENT RESERVE OUT (SPC-5 6.17).
func (lu *LU) prOut(c *Command) (Result, *Error) {
	sa := c.CDB[1] & 0x1f
	if sa > prOutRegisterIgnore {
		return Result{}, errInvalidCDB(1, 4)
	}
	plen := int(binary.BigEndian.Uint32(c.CDB[5:9]))
	if plen != prOutParamListLength || len(c.Data) < plen {
		return Result{}, errParamListLength
	}
	param := c.Data[:plen]
	key := binary.BigEndian.Uint64(param[0:8])
	saKey := binary.BigEndian.Uint64(param[8:16])
	if param[20]&0x08 != 0 { // SPEC_I_PT
		return Result{}, errInvalidParam(20)
	}
	if param[20]&0x01 != 0 { // APTPL: persist through power loss unsupported
		return Result{}, errInvalidParam(20)
	}
	scope, typ := c.CDB[2]>>4, c.CDB[2]&0x0f
	lu.mu.Lock()
	defer lu.mu.Unlock()
	defer lu.updateSlowLocked()
	n := c.Nexus
	switch sa {
	case prOutRegister, prOutRegisterIgnore:
		return Result{}, lu.prRegister(n, key, saKey, sa == prOutRegisterIgnore)
	}
	reg := lu.pr.regs[n.Port]
	if reg == nil || reg.key != key {
		return Result{}, errConflict
	}
	switch sa {
	case prOutReserve:
		return Result{}, lu.prReserve(n, scope, typ)
	case prOutRelease:
		return Result{}, lu.prRelease(n, scope, typ)
	case prOutClear:
		lu.prClear(n)
		return Result{}, nil
	default: // PREEMPT, PREEMPT AND ABORT
		return Result{}, lu.prPreempt(n, saKey, scope, typ)
	}
}

func validType(scope, typ byte) *Error {
	if scope != 0 {
		return errInvalidCDB(2, 7)
	}
	switch typ {
	case prWriteExclusive, prExclusiveAccess, prWriteExclusiveRO, prExclusiveAccessRO, prWriteExclusiveAR, prExclusiveAccessAR:
		return nil
	}
	return errInvalidCDB(2, 3)
}

// prRegister is REGISTER / REGISTER AND IGNORE EXISTING KEY (SPC-5 5.14.7).
func (lu *LU) prRegister(n *Nexus, key, saKey uint64, ignore bool) *Error {
	p := &lu.pr
	reg := p.regs[n.Port]
	if reg == nil {
		if key != 0 && !ignore {
			return errConflict
		}
		if saKey != 0 {
			p.regs[n.Port] = &prReg{key: saKey, nexus: *n}
			p.generation++
		}
		return nil
	}
	if !ignore && reg.key != key {
		return errConflict
	}
	if saKey != 0 {
		reg.key = saKey
		p.generation++
		return nil
	}
	lu.prUnregister(n.Port)
	p.generation++
	return nil
}

// prUnregister removes port's registration, releasing a reservation it
// held (for all-registrants types only when the last registrant leaves).
func (lu *LU) prUnregister(port string) {
	p := &lu.pr
	holder := p.isHolder(port)
	delete(p.regs, port)
	if !holder {
		return
	}
	if allRegistrants(p.rtype) && len(p.regs) > 0 {
		return
	}
	t := p.rtype
	p.rtype, p.holder = 0, ""
	if t == prWriteExclusiveRO || t == prExclusiveAccessRO {
		for other := range p.regs {
			lu.addUALocked(other, ASCReservationsReleased)
		}
	}
}

func (lu *LU) prReserve(n *Nexus, scope, typ byte) *Error {
	if e := validType(scope, typ); e != nil {
		return e
	}
	p := &lu.pr
	if p.rtype != 0 {
		if p.isHolder(n.Port) && p.rtype == typ {
			return nil
		}
		return errConflict
	}
	p.rtype, p.holder = typ, n.Port
	return nil
}

func (lu *LU) prRelease(n *Nexus, scope, typ byte) *Error {
	p := &lu.pr
	if p.rtype == 0 || !p.isHolder(n.Port) {
		return nil
	}
	if scope != 0 || typ != p.rtype {
		return checkCondition(KeyIllegalRequest, ASCInvalidReleaseOfPR)
	}
	t := p.rtype
	p.rtype, p.holder = 0, ""
	if t != prWriteExclusive && t != prExclusiveAccess {
		for other := range p.regs {
			if other != n.Port {
				lu.addUALocked(other, ASCReservationsReleased)
			}
		}
	}
	return nil
}

func (lu *LU) prClear(n *Nexus) {
	p := &lu.pr
	for other := range p.regs {
		if other != n.Port {
			lu.addUALocked(other, ASCReservationsPreempted)
		}
	}
	clear(p.regs)
	p.rtype, p.holder = 0, ""
	p.generation++
}

// prPreempt is PREEMPT (SPC-5 5.14.11.4): remove the registrations with
// saKey and, when they held the reservation, take it over with type typ.
func (lu *LU) prPreempt(n *Nexus, saKey uint64, scope, typ byte) *Error {
	p := &lu.pr
	if p.rtype != 0 && allRegistrants(p.rtype) && saKey == 0 {
		if e := validType(scope, typ); e != nil {
			return e
		}
		for other := range p.regs {
			if other != n.Port {
				delete(p.regs, other)
				lu.addUALocked(other, ASCRegistrationsPreempted)
			}
		}
		p.rtype, p.holder = typ, n.Port
		p.generation++
		return nil
	}
	if saKey == 0 {
		return errInvalidParam(8)
	}
	holderPreempted := p.rtype != 0 && !allRegistrants(p.rtype) && p.regs[p.holder] != nil && p.regs[p.holder].key == saKey
	if holderPreempted {
		if e := validType(scope, typ); e != nil {
			return e
		}
	}
	found := false
	for other, r := range p.regs {
		if r.key != saKey {
			continue
		}
		found = true
		if other == n.Port {
			continue
		}
		delete(p.regs, other)
		lu.addUALocked(other, ASCRegistrationsPreempted)
	}
	if !found {
		return errConflict
	}
	if holderPreempted {
		p.rtype, p.holder = typ, n.Port
	}
	p.generation++
	return nil
}

// reserve is RESERVE (6)/(10) (SPC-2 7.21): an exclusive reservation of the
// whole LU for this nexus; refused while persistent reservations exist.
func (lu *LU) reserve(c *Command) (Result, *Error) {
	if c.CDB[0] == opReserve10 && c.CDB[1]&0x03 != 0 { // 3RDPTY, LONGID
		return Result{}, errInvalidCDB(1, 0)
	}
	lu.mu.Lock()
	defer lu.mu.Unlock()
	if lu.pr.active() {
		return Result{}, errConflict
	}
	if lu.res2 != "" && lu.res2 != c.Nexus.Port {
		return Result{}, errConflict
	}
	lu.res2 = c.Nexus.Port
	lu.updateSlowLocked()
	return Result{}, nil
}

// release is RELEASE (6)/(10): a no-op unless this nexus holds the reservation.
func (lu *LU) release(c *Command) (Result, *Error) {
	lu.mu.Lock()
	defer lu.mu.Unlock()
	if lu.res2 == c.Nexus.Port {
		lu.res2 = ""
		lu.updateSlowLocked()
	}
	return Result{}, nil
}

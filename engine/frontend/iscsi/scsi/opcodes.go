package scsi

import "encoding/binary"

// Command timeouts reported with RCTD (seconds).
const (
	nominalTimeout     = 5
	recommendedTimeout = 60
)

// reportOpcodes is REPORT SUPPORTED OPERATION CODES (SPC-5 6.35).
func (lu *LU) reportOpcodes(c *Command) (Result, *Error) {
	cdb := c.CDB
	rctd := cdb[2]&0x80 != 0
	opt := cdb[2] & 0x07
	reqOp := cdb[3]
	reqSA := int(binary.BigEndian.Uint16(cdb[4:6]))
	alloc := int(binary.BigEndian.Uint32(cdb[6:10]))
	if opt == 0 {
		return dataIn(allCommands(rctd), alloc, c), nil
	}
	hasSA := saTable[reqOp] != nil || (opTable[reqOp] != nil && opTable[reqOp].reportSAs != nil)
	var o *opInfo
	switch opt {
	case 1:
		if hasSA {
			return Result{}, errInvalidCDB(3, -1)
		}
		o = opTable[reqOp]
	case 2:
		if !hasSA {
			return Result{}, errInvalidCDB(3, -1)
		}
		o = lookupSA(reqOp, reqSA)
	case 3:
		if hasSA {
			o = lookupSA(reqOp, reqSA)
		} else {
			o = opTable[reqOp]
		}
	default:
		return Result{}, errInvalidCDB(2, 2)
	}
	return dataIn(oneCommand(o, reqSA, hasSA, rctd), alloc, c), nil
}

func lookupSA(op byte, sa int) *opInfo {
	if t := saTable[op]; t != nil {
		if sa < maxServiceActions {
			return t[sa]
		}
		return nil
	}
	o := opTable[op]
	if o == nil {
		return nil
	}
	for _, s := range o.reportSAs {
		if s == sa {
			return o
		}
	}
	return nil
}

func timeoutsDescriptor() []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint16(b[0:2], 0x0a)
	binary.BigEndian.PutUint32(b[4:8], nominalTimeout)
	binary.BigEndian.PutUint32(b[8:12], recommendedTimeout)
	return b
}

// allCommands is the "all commands" format: one descriptor per opcode and
// service action.
func allCommands(rctd bool) []byte {
	out := make([]byte, 4)
	add := func(o *opInfo, sa int, servactv bool) {
		d := make([]byte, 8)
		d[0] = o.code
		if servactv {
			binary.BigEndian.PutUint16(d[2:4], uint16(sa))
			d[5] |= 0x01
		}
		if rctd {
			d[5] |= 0x02
		}
		binary.BigEndian.PutUint16(d[6:8], uint16(len(o.usage)))
		out = append(out, d...)
		if rctd {
			out = append(out, timeoutsDescriptor()...)
		}
	}
	for _, o := range opList {
		switch {
		case o.sa >= 0:
			add(o, o.sa, true)
		case o.reportSAs != nil:
			for _, sa := range o.reportSAs {
				add(o, sa, true)
			}
		default:
			add(o, 0, false)
		}
	}
	binary.BigEndian.PutUint32(out[0:4], uint32(len(out)-4))
	return out
}

// oneCommand is the one-command format: support, CDB size and usage map.
func oneCommand(o *opInfo, sa int, hasSA, rctd bool) []byte {
	if o == nil {
		return []byte{0, 0x01, 0, 0} // SUPPORT 001b: not supported
	}
	usage := append([]byte(nil), o.usage...)
	if hasSA {
		if o.sa >= 0 || o.reportSAs != nil {
			// the service action field of this CDB holds exactly sa
			usage[1] = usage[1]&^0x1f | byte(sa)&0x1f
		}
	}
	b := []byte{0, 0x03, 0, 0}
	if rctd {
		b[1] |= 0x80
	}
	binary.BigEndian.PutUint16(b[2:4], uint16(len(usage)))
	b = append(b, usage...)
	if rctd {
		b = append(b, timeoutsDescriptor()...)
	}
	return b
}

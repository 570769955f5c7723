package scsi

import "encoding/binary"

// Mode pages (SPC-5 7.5, SBC-4 6.5): Caching (08h), Control (0Ah) and
// Informational Exceptions Control (1Ch). Changeable fields: WCE, D_SENSE
// and SWP. Pages cannot be saved.
const (
	pageCaching  = 0x08
	pageControl  = 0x0a
	pageIE       = 0x1c
	pageAll      = 0x3f
	subpageAll   = 0xff
	pcCurrent    = 0
	pcChangeable = 1
	pcDefault    = 2
	pcSaved      = 3
)

var modePageOrder = []byte{pageCaching, pageControl, pageIE}

// modePage builds page code with page control pc.
func (lu *LU) modePage(code byte, pc int) []byte {
	switch code {
	case pageCaching:
		b := make([]byte, 20)
		b[0], b[1] = pageCaching, 0x12
		switch pc {
		case pcChangeable:
			b[2] = 0x04
		case pcDefault:
			b[2] = 0x04
		default:
			if lu.wce.Load() {
				b[2] = 0x04
			}
		}
		return b
	case pageControl:
		b := make([]byte, 12)
		b[0], b[1] = pageControl, 0x0a
		switch pc {
		case pcChangeable:
			b[2] = 0x04 // D_SENSE
			b[4] = 0x08 // SWP
		case pcDefault:
			b[3] = 0x10 // QUEUE ALGORITHM MODIFIER 1: unrestricted reordering
		default:
			b[3] = 0x10
			if lu.dsense.Load() {
				b[2] |= 0x04
			}
			if lu.swp.Load() {
				b[4] |= 0x08
			}
		}
		binary.BigEndian.PutUint16(b[8:10], 0xffff) // BUSY TIMEOUT PERIOD: unlimited
		if pc == pcChangeable {
			binary.BigEndian.PutUint16(b[8:10], 0)
		}
		return b
	case pageIE:
		b := make([]byte, 12)
		b[0], b[1] = pageIE, 0x0a
		if pc != pcChangeable {
			b[2] = 0x08 // DEXCPT: no informational exception reporting
		}
		return b
	}
	return nil
}

// modeSense is MODE SENSE (6) and (10) (SPC-5 6.11, 6.12).
func (lu *LU) modeSense(c *Command) (Result, *Error) {
	cdb := c.CDB
	ten := cdb[0] == opModeSense10
	dbd := cdb[1]&0x08 != 0
	llbaa := ten && cdb[1]&0x10 != 0
	pc := int(cdb[2] >> 6)
	code, sub := cdb[2]&0x3f, cdb[3]
	alloc := int(cdb[4])
	if ten {
		alloc = int(binary.BigEndian.Uint16(cdb[7:9]))
	}
	if pc == pcSaved {
		return Result{}, checkCondition(KeyIllegalRequest, ASCSavingParamsNotSupported)
	}
	var pages []byte
	switch {
	case code == pageAll && (sub == 0 || sub == subpageAll):
		for _, p := range modePageOrder {
			pages = append(pages, lu.modePage(p, pc)...)
		}
	case sub != 0:
		return Result{}, errInvalidCDB(3, -1)
	default:
		pages = lu.modePage(code, pc)
		if pages == nil {
			return Result{}, errInvalidCDB(2, 5)
		}
	}
	var bd []byte
	if !dbd {
		bd = lu.blockDescriptor(llbaa)
	}
	dev := byte(0x10) // DPOFUA
	if lu.swp.Load() {
		dev |= 0x80 // WP
	}
	var out []byte
	if ten {
		out = make([]byte, 8, 8+len(bd)+len(pages))
		out[3] = dev
		if llbaa && !dbd {
			out[4] = 0x01
		}
		binary.BigEndian.PutUint16(out[6:8], uint16(len(bd)))
	} else {
		out = make([]byte, 4, 4+len(bd)+len(pages))
		out[2], out[3] = dev, byte(len(bd))
	}
	out = append(append(out, bd...), pages...)
	if ten {
		binary.BigEndian.PutUint16(out[0:2], uint16(len(out)-2))
	} else {
		out[0] = byte(len(out) - 1)
	}
	return dataIn(out, alloc, c), nil
}

func (lu *LU) blockDescriptor(long bool) []byte {
	n := lu.Blocks()
	if long {
		b := make([]byte, 16)
		binary.BigEndian.PutUint64(b[0:8], n)
		binary.BigEndian.PutUint32(b[12:16], BlockSize)
		return b
	}
	b := make([]byte, 8)
	if n > 0xffffffff {
		n = 0xffffffff
	}
	binary.BigEndian.PutUint32(b[0:4], uint32(n))
	binary.BigEndian.PutUint32(b[4:8], BlockSize) // density 0 + 24-bit length
	return b
}

func modeSelectOutLen(_ *LU, cdb []byte) (int, *Error) {
	if cdb[0] == opModeSelect10 {
		return int(binary.BigEndian.Uint16(cdb[7:9])), nil
	}
	return int(cdb[4]), nil
}

// modeSelect is MODE SELECT (6) and (10) (SPC-5 6.9, 6.10): only the
// changeable fields may differ from the current values.
func (lu *LU) modeSelect(c *Command) (Result, *Error) {
	cdb := c.CDB
	ten := cdb[0] == opModeSelect10
	if cdb[1]&0x01 != 0 { // SP
		return Result{}, errInvalidCDB(1, 0)
	}
	plen, _ := modeSelectOutLen(lu, cdb)
	if plen == 0 {
		return Result{}, nil
	}
	hlen := 4
	if ten {
		hlen = 8
	}
	if plen < hlen || len(c.Data) < plen {
		return Result{}, errParamListLength
	}
	p := c.Data[:plen]
	bdlen := int(p[3])
	if ten {
		bdlen = int(binary.BigEndian.Uint16(p[6:8]))
	}
	if hlen+bdlen > plen {
		return Result{}, errParamListLength
	}
	if e := lu.checkBlockDescriptors(p[hlen:hlen+bdlen], hlen); e != nil {
		return Result{}, e
	}
	sets, e := lu.parseModePages(p, hlen+bdlen)
	if e != nil {
		return Result{}, e
	}
	lu.applyModePages(sets, c.Nexus.Port)
	return Result{}, nil
}

// checkBlockDescriptors accepts descriptors whose block length is 512.
func (lu *LU) checkBlockDescriptors(bd []byte, base int) *Error {
	step := 8
	if len(bd)%16 == 0 && len(bd)%8 != 0 {
		step = 16
	}
	for i := 0; i+step <= len(bd); i += step {
		var bl uint32
		if step == 8 {
			bl = binary.BigEndian.Uint32(bd[i+4:i+8]) & 0xffffff
		} else {
			bl = binary.BigEndian.Uint32(bd[i+12 : i+16])
		}
		if bl != BlockSize && bl != 0 {
			return errInvalidParam(base + i + step - 3)
		}
	}
	return nil
}

type modeSettings struct {
	wce, dsense, swp *bool
}

// parseModePages validates each page in p[off:] against the current and
// changeable values and returns the new settings.
func (lu *LU) parseModePages(p []byte, off int) (modeSettings, *Error) {
	var s modeSettings
	for off < len(p) {
		if off+2 > len(p) {
			return s, errParamListLength
		}
		code := p[off] & 0x3f
		if p[off]&0x40 != 0 { // SPF: no subpages supported
			return s, errInvalidParam(off)
		}
		cur := lu.modePage(code, pcCurrent)
		if cur == nil {
			return s, errInvalidParam(off)
		}
		n := int(p[off+1]) + 2
		if n != len(cur) {
			return s, errInvalidParam(off + 1)
		}
		if off+n > len(p) {
			return s, errParamListLength
		}
		got := p[off : off+n]
		mask := lu.modePage(code, pcChangeable)
		for i := 2; i < n; i++ {
			if (got[i]^cur[i])&^mask[i] != 0 {
				return s, errInvalidParam(off + i)
			}
		}
		switch code {
		case pageCaching:
			v := got[2]&0x04 != 0
			s.wce = &v
		case pageControl:
			d, w := got[2]&0x04 != 0, got[4]&0x08 != 0
			s.dsense, s.swp = &d, &w
		}
		off += n
	}
	return s, nil
}

// applyModePages stores new settings and raises MODE PARAMETERS CHANGED on
// the other nexuses when something changed (SPC-5 5.14 / table 99).
func (lu *LU) applyModePages(s modeSettings, port string) {
	changed := false
	set := func(f interface {
		Load() bool
		Store(bool)
	}, v *bool) {
		if v != nil && f.Load() != *v {
			f.Store(*v)
			changed = true
		}
	}
	set(&lu.wce, s.wce)
	set(&lu.dsense, s.dsense)
	set(&lu.swp, s.swp)
	if !changed {
		return
	}
	lu.mu.Lock()
	defer lu.mu.Unlock()
	for other := range lu.nexuses {
		if other != port {
			lu.addUALocked(other, ASCModeParametersChanged)
		}
	}
}

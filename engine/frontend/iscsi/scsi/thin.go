package scsi

import (
	"encoding/binary"

	"github.com/longhorn-go/longhorn/engine/bufpool"
)

// AllocationReporter is an optional Backend interface for GET LBA STATUS:
// Allocated reports whether the byte at off (a multiple of 512) is mapped
// and how many bytes from off (at most max) share that state. Backends
// without it report every block as mapped.
type AllocationReporter interface {
	Allocated(off, max int64) (mapped bool, n int64, err error)
}

const unmapChunk = 1 << 30 // bytes per Backend.UnmapAt call

// unmapOutLen: the UNMAP parameter list length (SBC-4 5.31).
func unmapOutLen(_ *LU, cdb []byte) (int, *Error) {
	return int(binary.BigEndian.Uint16(cdb[7:9])), nil
}

type extent struct{ lba, n uint64 }

// unmap is UNMAP (SBC-4 5.31): validate every block descriptor, then
// discard each range.
func (lu *LU) unmap(c *Command) (Result, *Error) {
	if c.CDB[1]&0x01 != 0 { // ANCHOR: anchored blocks are not supported
		return Result{}, errInvalidCDB(1, 0)
	}
	plen := int(binary.BigEndian.Uint16(c.CDB[7:9]))
	if plen == 0 {
		return Result{}, nil
	}
	if plen < 8 || len(c.Data) < plen {
		return Result{}, errParamListLength
	}
	p := c.Data[:plen]
	dlen := int(binary.BigEndian.Uint16(p[2:4]))
	if dlen > plen-8 {
		dlen = plen - 8
	}
	dlen -= dlen % 16
	if dlen/16 > MaxUnmapDescriptors {
		return Result{}, errInvalidParam(2)
	}
	exts := make([]extent, 0, dlen/16)
	for i := 8; i < 8+dlen; i += 16 {
		lba := binary.BigEndian.Uint64(p[i : i+8])
		n := uint64(binary.BigEndian.Uint32(p[i+8 : i+12]))
		if lba+n > lu.Blocks() || lba+n < lba {
			return Result{}, errLBAOutOfRange
		}
		if n > MaxUnmapBlocks {
			return Result{}, errInvalidParam(i + 8)
		}
		exts = append(exts, extent{lba, n})
	}
	if lu.swp.Load() {
		return Result{}, errWriteProtected
	}
	for _, x := range exts {
		if e := lu.discard(x.lba, x.n); e != nil {
			return Result{}, e
		}
	}
	return Result{}, nil
}

// discard unmaps n blocks at lba under the shared range lock.
func (lu *LU) discard(lba, n uint64) *Error {
	off := int64(lba) * BlockSize
	end := off + int64(n)*BlockSize
	for off < end {
		l := min(end-off, unmapChunk)
		s := lu.locks.lockShared(off, l)
		_, err := lu.be.UnmapAt(uint32(l), off)
		lu.locks.unlockShared(s)
		if err != nil {
			return backendError(err, true)
		}
		off += l
	}
	return nil
}

func writeSameOutLen(lu *LU, cdb []byte) (int, *Error) {
	if _, e := lu.checkWriteSame(cdb); e != nil {
		return 0, e
	}
	if cdb[0] == opWriteSame16 && cdb[1]&0x01 != 0 { // NDOB: no Data-Out
		return 0, nil
	}
	return BlockSize, nil
}

func (lu *LU) checkWriteSame(cdb []byte) (rwCDB, *Error) {
	cdb = cdbOf(cdb)
	d := decodeRW(cdb)
	if d.protect != 0 {
		return d, errInvalidCDB(1, 7)
	}
	if cdb[1]&0x10 != 0 { // ANCHOR
		return d, errInvalidCDB(1, 4)
	}
	if cdb[1]&0x06 != 0 { // PBDATA, LBDATA: no protection information
		return d, errInvalidCDB(1, 2)
	}
	if d.lba+d.n > lu.Blocks() || d.lba+d.n < d.lba {
		return d, errLBAOutOfRange
	}
	if d.n == 0 { // WSNZ=1 in the Block Limits page
		return d, errInvalidCDB(d.lenByte, -1)
	}
	if d.n > MaxWriteSameBlocks {
		return d, errInvalidCDB(d.lenByte, -1)
	}
	return d, nil
}

// writeSame is WRITE SAME (10/16) (SBC-4 5.48, 5.49). With the UNMAP bit and
// a zero block the range is unmapped, then checked to read back as zeroes
// (an older snapshot may show through, SBC-4 4.7.3.4 LBPRZ=0) and rewritten
// where it does not; otherwise the block is written to every LBA.
func (lu *LU) writeSame(c *Command) (Result, *Error) {
	d, e := lu.checkWriteSame(c.CDB)
	if e != nil {
		return Result{}, e
	}
	if lu.swp.Load() {
		return Result{}, errWriteProtected
	}
	ndob := c.CDB[0] == opWriteSame16 && c.CDB[1]&0x01 != 0
	block := make([]byte, BlockSize)
	if !ndob {
		if c.ExpectedOut != BlockSize { // SBC-4 5.48: exactly one block of Data-Out
			return Result{}, errInvalidCDB(d.lenByte, -1)
		}
		if len(c.Data) < BlockSize {
			return Result{}, ErrInvalidInfoUnit
		}
		copy(block, c.Data[:BlockSize])
	}
	unmap := c.CDB[1]&0x08 != 0
	if unmap && isZero(block) {
		if e := lu.discard(d.lba, d.n); e != nil {
			return Result{}, e
		}
		return Result{}, lu.zeroFixup(d.lba, d.n)
	}
	return Result{}, lu.fill(block, d.lba, d.n)
}

// fill writes block to n blocks at lba in chunks of up to 1 MiB.
func (lu *LU) fill(block []byte, lba, n uint64) *Error {
	const chunkBlocks = 2048
	buf := bufpool.GetShared(int(min(n, chunkBlocks)) * BlockSize)
	defer bufpool.Put(buf)
	for i := 0; i < len(buf); i += BlockSize {
		copy(buf[i:], block)
	}
	for n > 0 {
		k := min(n, chunkBlocks)
		if e := lu.writeBlocks(buf[:k*BlockSize], lba, false); e != nil {
			return e
		}
		lba += k
		n -= k
	}
	return nil
}

// zeroFixup reads n blocks at lba and writes zeroes over any chunk that
// did not read back as zeroes after an unmap.
func (lu *LU) zeroFixup(lba, n uint64) *Error {
	const chunkBlocks = 2048
	buf := bufpool.GetShared(int(min(n, chunkBlocks)) * BlockSize)
	defer bufpool.Put(buf)
	for n > 0 {
		k := min(n, chunkBlocks)
		b := buf[:k*BlockSize]
		if _, err := lu.be.ReadAt(b, int64(lba)*BlockSize); err != nil {
			return backendError(err, false)
		}
		if !isZero(b) {
			clear(b)
			if e := lu.writeBlocks(b, lba, false); e != nil {
				return e
			}
		}
		lba += k
		n -= k
	}
	return nil
}

func isZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// getLBAStatus is GET LBA STATUS (SBC-4 5.7): one descriptor per run of
// mapped or deallocated blocks from the starting LBA, as far as the
// allocation length allows.
func (lu *LU) getLBAStatus(c *Command) (Result, *Error) {
	lba := binary.BigEndian.Uint64(c.CDB[2:10])
	alloc := int(binary.BigEndian.Uint32(c.CDB[10:14]))
	blocks := lu.Blocks()
	if lba >= blocks {
		return Result{}, errLBAOutOfRange
	}
	maxDesc := 64
	if alloc >= 8 {
		maxDesc = min(maxDesc, max((alloc-8)/16, 1))
	}
	out := make([]byte, 8, 8+16*maxDesc)
	ar, _ := lu.be.(AllocationReporter)
	for len(out) < 8+16*maxDesc && lba < blocks {
		mapped, n := true, (blocks - lba)
		if ar != nil {
			m, nb, err := ar.Allocated(int64(lba)*BlockSize, int64(n)*BlockSize)
			if err != nil {
				return Result{}, backendError(err, false)
			}
			mapped, n = m, uint64(nb)/BlockSize
			if n == 0 {
				n = 1
			}
		}
		n = min(n, 0xffffffff, blocks-lba)
		var d [16]byte
		binary.BigEndian.PutUint64(d[0:8], lba)
		binary.BigEndian.PutUint32(d[8:12], uint32(n))
		if !mapped {
			d[12] = 1 // deallocated
		}
		out = append(out, d[:]...)
		lba += n
	}
	binary.BigEndian.PutUint32(out[0:4], uint32(len(out)-4))
	return dataIn(out, alloc, c), nil
}

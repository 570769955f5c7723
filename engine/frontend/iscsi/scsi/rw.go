package scsi

import (
	"bytes"
	"encoding/binary"

	"github.com/longhorn-go/longhorn/engine/bufpool"
)

// rwCDB is a decoded READ/WRITE/VERIFY CDB (SBC-4 5.*): the LBA, the number
// of blocks and the flag fields.
type rwCDB struct {
	lba     uint64
	n       uint64
	protect byte // RDPROTECT/WRPROTECT/VRPROTECT
	fua     bool
	bytchk  byte
	lenByte int // CDB byte of the transfer length (for sense field pointers)
}

// decodeRW decodes the LBA and length of the 6/10/12/16-byte forms.
func decodeRW(cdb []byte) rwCDB {
	var d rwCDB
	switch len(cdb) {
	case 6:
		d.lba = uint64(cdb[1]&0x1f)<<16 | uint64(cdb[2])<<8 | uint64(cdb[3])
		d.n = uint64(cdb[4])
		d.lenByte = 4
		return d
	case 10:
		d.lba = uint64(binary.BigEndian.Uint32(cdb[2:6]))
		d.n = uint64(binary.BigEndian.Uint16(cdb[7:9]))
		d.lenByte = 7
	case 12:
		d.lba = uint64(binary.BigEndian.Uint32(cdb[2:6]))
		d.n = uint64(binary.BigEndian.Uint32(cdb[6:10]))
		d.lenByte = 6
	default:
		d.lba = binary.BigEndian.Uint64(cdb[2:10])
		d.n = uint64(binary.BigEndian.Uint32(cdb[10:14]))
		d.lenByte = 10
	}
	d.protect = cdb[1] >> 5
	d.fua = cdb[1]&0x08 != 0
	d.bytchk = (cdb[1] >> 1) & 0x03
	return d
}

// cdbOf trims the CDB to the length its opcode group defines (SPC-5 4.2.5.1).
func cdbOf(cdb []byte) []byte {
	n := 16
	switch cdb[0] >> 5 {
	case 0:
		n = 6
	case 1, 2:
		n = 10
	case 5:
		n = 12
	}
	if len(cdb) < n {
		return cdb
	}
	return cdb[:n]
}

// checkRW validates protection, transfer length and range; read6 and
// write6 treat a length of 0 as 256 blocks.
func (lu *LU) checkRW(cdb []byte) (rwCDB, *Error) {
	cdb = cdbOf(cdb)
	d := decodeRW(cdb)
	if len(cdb) == 6 && d.n == 0 {
		d.n = 256
	}
	if d.protect != 0 {
		return d, errInvalidCDB(1, 7)
	}
	if d.lba+d.n > lu.Blocks() || d.lba+d.n < d.lba {
		return d, errLBAOutOfRange
	}
	if d.n > MaxTransferBlocks {
		return d, errInvalidCDB(d.lenByte, -1)
	}
	return d, nil
}

func (lu *LU) read(c *Command) (Result, *Error) {
	d, e := lu.checkRW(c.CDB)
	if e != nil {
		return Result{XferLen: int(min(d.n, MaxTransferBlocks)) * BlockSize}, e
	}
	full := int(d.n) * BlockSize
	n := min(full, c.AllocIn)
	res := Result{XferLen: full}
	if n == 0 {
		return res, nil
	}
	buf := bufpool.GetShared(n)
	if _, err := lu.be.ReadAt(buf, int64(d.lba)*BlockSize); err != nil {
		bufpool.Put(buf)
		return res, backendError(err, false)
	}
	res.Data, res.Pooled = buf, true
	return res, nil
}

// writeOutLen is the Data-Out length of WRITE and WRITE AND VERIFY.
func writeOutLen(lu *LU, cdb []byte) (int, *Error) {
	d, e := lu.checkRW(cdb)
	if e != nil {
		return 0, e
	}
	return int(d.n) * BlockSize, nil
}

// writeData returns the part of c.Data to write: whole blocks only. When the
// initiator sent fewer bytes than the CDB asked for (iSCSI overflow), only
// the blocks it sent are written; a partial block is an error.
func writeData(c *Command, n uint64) ([]byte, *Error) {
	want := int(n) * BlockSize
	data := c.Data
	if len(data) >= want {
		return data[:want], nil
	}
	if len(data)%BlockSize != 0 {
		return nil, ErrInvalidInfoUnit
	}
	return data, nil
}

func (lu *LU) write(c *Command) (Result, *Error) {
	d, e := lu.checkRW(c.CDB)
	if e != nil {
		return Result{}, e
	}
	if lu.swp.Load() {
		return Result{}, errWriteProtected
	}
	data, e := writeData(c, d.n)
	if e != nil {
		return Result{}, e
	}
	return Result{}, lu.writeBlocks(data, d.lba, d.fua)
}

// writeBlocks writes data at lba under the shared range lock, then flushes
// when FUA is set or the write cache is off.
func (lu *LU) writeBlocks(data []byte, lba uint64, fua bool) *Error {
	if len(data) == 0 {
		return nil
	}
	off := int64(lba) * BlockSize
	s := lu.locks.lockShared(off, int64(len(data)))
	_, err := lu.be.WriteAt(data, off)
	lu.locks.unlockShared(s)
	if err != nil {
		return backendError(err, true)
	}
	if fua || !lu.wce.Load() {
		if err := lu.be.Flush(); err != nil {
			return backendError(err, true)
		}
	}
	return nil
}

// writeVerify is WRITE AND VERIFY: write, then read back and compare
// (BYTCHK=1) or just read back (BYTCHK=0) (SBC-4 5.41).
func (lu *LU) writeVerify(c *Command) (Result, *Error) {
	d, e := lu.checkRW(c.CDB)
	if e != nil {
		return Result{}, e
	}
	if d.bytchk > 1 {
		return Result{}, errInvalidCDB(1, 2)
	}
	if lu.swp.Load() {
		return Result{}, errWriteProtected
	}
	data, e := writeData(c, d.n)
	if e != nil {
		return Result{}, e
	}
	if e := lu.writeBlocks(data, d.lba, true); e != nil {
		return Result{}, e
	}
	if _, e := lu.compare(data, d.lba); e != nil {
		return Result{}, e
	}
	return Result{}, nil
}

// verifyOutLen: BYTCHK 01b sends n blocks, 11b one block, 00b none.
func verifyOutLen(lu *LU, cdb []byte) (int, *Error) {
	d, e := lu.checkRW(cdb)
	if e != nil {
		return 0, e
	}
	switch d.bytchk {
	case 0:
		return 0, nil
	case 1:
		return int(d.n) * BlockSize, nil
	case 3:
		if d.n == 0 {
			return 0, nil
		}
		return BlockSize, nil
	}
	return 0, errInvalidCDB(1, 2)
}

// verify is VERIFY (SBC-4 5.32): BYTCHK 0 checks the medium is readable,
// 1 compares the Data-Out to the blocks, 3 compares one block to every block.
func (lu *LU) verify(c *Command) (Result, *Error) {
	d, e := lu.checkRW(c.CDB)
	if e != nil {
		return Result{}, e
	}
	if d.n == 0 {
		return Result{}, nil
	}
	switch d.bytchk {
	case 0:
		buf := bufpool.GetShared(int(d.n) * BlockSize)
		defer bufpool.Put(buf)
		if _, err := lu.be.ReadAt(buf, int64(d.lba)*BlockSize); err != nil {
			return Result{}, backendError(err, false)
		}
		return Result{}, nil
	case 1:
		want := int(d.n) * BlockSize
		if len(c.Data) < want {
			return Result{}, ErrInvalidInfoUnit
		}
		_, e := lu.compare(c.Data[:want], d.lba)
		return Result{}, e
	case 3:
		if len(c.Data) < BlockSize {
			return Result{}, ErrInvalidInfoUnit
		}
		pattern := bytes.Repeat(c.Data[:BlockSize], int(d.n))
		_, e := lu.compare(pattern, d.lba)
		return Result{}, e
	}
	return Result{}, errInvalidCDB(1, 2)
}

// compare reads len(want) bytes at lba and returns MISCOMPARE with the
// offset of the first differing byte in INFORMATION (SBC-4 5.32).
func (lu *LU) compare(want []byte, lba uint64) (int, *Error) {
	buf := bufpool.GetShared(len(want))
	defer bufpool.Put(buf)
	if _, err := lu.be.ReadAt(buf, int64(lba)*BlockSize); err != nil {
		return 0, backendError(err, false)
	}
	if i := firstDiff(buf, want); i >= 0 {
		e := checkCondition(KeyMiscompare, ASCMiscompareDuringVerify)
		e.Sense.HasInfo, e.Sense.Info = true, uint64(i)
		return i, e
	}
	return -1, nil
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// prefetch is PRE-FETCH (SBC-4 5.9): the data is served from the replicas,
// so there is nothing to load; it checks the range and returns CONDITION MET
// (the "cache" can hold the range).
func (lu *LU) prefetch(c *Command) (Result, *Error) {
	cdb := cdbOf(c.CDB)
	d := decodeRW(cdb)
	if d.lba+d.n > lu.Blocks() || d.lba+d.n < d.lba {
		return Result{}, errLBAOutOfRange
	}
	return Result{}, &Error{Status: StatusConditionMet}
}

// syncCache is SYNCHRONIZE CACHE (10/16): flush everything acknowledged.
func (lu *LU) syncCache(c *Command) (Result, *Error) {
	d := decodeRW(cdbOf(c.CDB))
	if d.lba+d.n > lu.Blocks() || d.lba+d.n < d.lba {
		return Result{}, errLBAOutOfRange
	}
	if err := lu.be.Flush(); err != nil {
		return Result{}, backendError(err, true)
	}
	return Result{}, nil
}

// cawOutLen: COMPARE AND WRITE carries the verify and the write data, 2*n blocks.
func cawOutLen(lu *LU, cdb []byte) (int, *Error) {
	n, _, e := lu.checkCAW(cdb)
	return 2 * int(n) * BlockSize, e
}

func (lu *LU) checkCAW(cdb []byte) (uint64, uint64, *Error) {
	lba := binary.BigEndian.Uint64(cdb[2:10])
	n := uint64(cdb[13])
	if cdb[1]>>5 != 0 {
		return 0, 0, errInvalidCDB(1, 7)
	}
	if n > MaxCompareAndWrite {
		return 0, 0, errInvalidCDB(13, -1)
	}
	if lba+n > lu.Blocks() || lba+n < lba {
		return 0, 0, errLBAOutOfRange
	}
	return n, lba, nil
}

// compareAndWrite is COMPARE AND WRITE (SBC-4 5.3): atomically, compare n
// blocks with the first half of the Data-Out and, when equal, write the
// second half. Writes to the same blocks wait on the exclusive range lock.
func (lu *LU) compareAndWrite(c *Command) (Result, *Error) {
	n, lba, e := lu.checkCAW(c.CDB)
	if e != nil {
		return Result{}, e
	}
	if c.ExpectedOut != 2*int(n)*BlockSize { // SBC-4 5.3: Data-Out is exactly 2*n blocks
		return Result{}, errInvalidCDB(13, -1)
	}
	if n == 0 {
		return Result{}, nil
	}
	if lu.swp.Load() {
		return Result{}, errWriteProtected
	}
	size := int(n) * BlockSize
	if len(c.Data) != 2*size {
		return Result{}, ErrInvalidInfoUnit
	}
	off := int64(lba) * BlockSize
	s := lu.locks.lockExclusive(off, int64(size))
	defer lu.locks.unlockExclusive(s)
	if _, e := lu.compare(c.Data[:size], lba); e != nil {
		return Result{}, e
	}
	if _, err := lu.be.WriteAt(c.Data[size:], off); err != nil {
		return Result{}, backendError(err, true)
	}
	if c.CDB[1]&0x08 != 0 || !lu.wce.Load() {
		if err := lu.be.Flush(); err != nil {
			return Result{}, backendError(err, true)
		}
	}
	return Result{}, nil
}

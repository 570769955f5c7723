package syncagent

import (
	"cmp"
	"slices"
	gosync "sync"
)

// CRC-64 over runs of zero bytes without reading them: Go's crc64 keeps the
// register r = ^crc and advances it by one zero byte with
// r' = tab[byte(r)] ^ r>>8, a linear map Z of r over GF(2). Advancing by n
// zero bytes is Z^n, applied as the product of the precomputed Z^(2^k) for
// the bits k of n (zlib's crc32_combine, for CRC-64/ISO), so a hole costs
// a few thousand operations instead of a pass over its length.

// gf2Matrix is a linear map of 64-bit vectors: column i is the image of
// bit i.
type gf2Matrix [64]uint64

func (m *gf2Matrix) apply(v uint64) uint64 {
	var out uint64
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			out ^= m[i]
		}
	}
	return out
}

// zeroPowers[k] is Z^(2^k) for the ISO table (enough for any int64 length).
var zeroPowers = func() [63]gf2Matrix {
	var p [63]gf2Matrix
	for i := range p[0] {
		r := uint64(1) << i
		p[0][i] = crcTable[byte(r)] ^ r>>8
	}
	for k := 1; k < len(p); k++ {
		for i := range p[k] {
			p[k][i] = p[k-1].apply(p[k-1][i])
		}
	}
	return p
}()

// advanceZeros applies Z^n to the register r.
func advanceZeros(r uint64, n int64) uint64 {
	for k := 0; n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			r = zeroPowers[k].apply(r)
		}
	}
	return r
}

// crc64Zeros is crc64.Update(crc, crcTable, n zero bytes).
func crc64Zeros(crc uint64, n int64) uint64 {
	if n <= 0 {
		return crc
	}
	return ^advanceZeros(^crc, n)
}

// crc64Combine is the CRC of A followed by B from crcA, crcB and len(B):
// Update(c, B) = Z^len(B)(c) ^ Update(0, B).
func crc64Combine(crcA, crcB uint64, lenB int64) uint64 {
	return advanceZeros(crcA, lenB) ^ crcB
}

// crcPiece is the CRC-64 of the data bytes [off, off+n) of a file.
type crcPiece struct {
	off, n int64
	crc    uint64
}

// crcPieces collects the CRCs of a file's data ranges, computed in any
// order by the sender's workers, into the CRC of the whole file (holes as
// zeroes): the snapshot checksum without a second read of the file.
type crcPieces struct {
	mu     gosync.Mutex
	pieces []crcPiece
}

// add hashes b, the bytes at off.
func (c *crcPieces) add(off int64, b []byte) {
	p := crcPiece{off: off, n: int64(len(b)), crc: crc64Sum(b)}
	c.mu.Lock()
	c.pieces = append(c.pieces, p)
	c.mu.Unlock()
}

// sum is the CRC of a file of size bytes whose data are the pieces added
// (disjoint); the rest reads as zeroes.
func (c *crcPieces) sum(size int64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.SortFunc(c.pieces, func(a, b crcPiece) int { return cmp.Compare(a.off, b.off) })
	var crc uint64
	pos := int64(0)
	for _, p := range c.pieces {
		crc = crc64Combine(crc64Zeros(crc, p.off-pos), p.crc, p.n)
		pos = p.off + p.n
	}
	return crc64Zeros(crc, size-pos)
}

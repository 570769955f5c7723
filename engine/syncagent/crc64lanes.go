package syncagent

import (
	"encoding/binary"
	"hash/crc64"
)

// A faster CRC-64/ISO of a long buffer, the same value as crc64.Checksum
// with crcTable: the buffer is cut into four lanes of equal length that
// one loop advances together, 8 bytes per step, and the lanes' CRCs are
// joined with crc64Combine. A step needs no table: the ISO polynomial
// P = x^64 + x^4 + x^3 + x + 1 is so sparse that multiplying the register
// by x^64 modulo P is a few shifts and XORs (crcStep), and four
// independent lanes keep the CPU's ALUs busy where one chain would wait.

// crcStep returns v*x^64 mod P in the reflected bit order of Go's crc64
// (bit j is the coefficient of x^(63-j), so a shift right multiplies by
// x): the register after 64 zero bits, as 8 slicing-by-8 table lookups
// would give it. x^64 = Q (mod P) with Q = x^4+x^3+x+1 = (1+x)(1+x^3),
// so v*x^64 = v*Q: the shifts right (v>>s) are the part of degree < 64,
// and the bits shifted out (o = v<<60 ^ v<<61 ^ v<<63 for s = 4, 3, 1)
// are the factor of x^64 of the rest, of degree < 4, whose product with Q
// has degree < 8 and needs no further reduction.
func crcStep(v uint64) uint64 {
	o := v<<60 ^ v<<61 ^ v<<63
	a := v ^ v>>1
	a ^= a >> 3
	c := o ^ o>>1
	c ^= c >> 3
	return a ^ c
}

// crcLanesMin is the shortest buffer worth cutting into lanes.
const crcLanesMin = 4096

// crc64Sum is crc64.Checksum(b, crcTable).
func crc64Sum(b []byte) uint64 {
	if len(b) < crcLanesMin {
		return crc64.Checksum(b, crcTable)
	}
	q := len(b) / 4 &^ 7
	r0, r1, r2, r3 := crcLanes(b[:q], b[q:2*q], b[2*q:3*q], b[3*q:4*q])
	crc := crc64Combine(^r0, ^r1, int64(q))
	crc = crc64Combine(crc, ^r2, int64(q))
	crc = crc64Combine(crc, ^r3, int64(q))
	return crc64.Update(crc, crcTable, b[4*q:])
}

// crcLanes advances four registers (each from the initial all-ones) over
// four lanes of the same length, a multiple of 8.
func crcLanes(a, b, c, d []byte) (uint64, uint64, uint64, uint64) {
	r0, r1, r2, r3 := ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)
	for i := 0; i+8 <= len(a) && i+8 <= len(b) && i+8 <= len(c) && i+8 <= len(d); i += 8 {
		r0 = crcStep(r0 ^ binary.LittleEndian.Uint64(a[i:]))
		r1 = crcStep(r1 ^ binary.LittleEndian.Uint64(b[i:]))
		r2 = crcStep(r2 ^ binary.LittleEndian.Uint64(c[i:]))
		r3 = crcStep(r3 ^ binary.LittleEndian.Uint64(d[i:]))
	}
	return r0, r1, r2, r3
}

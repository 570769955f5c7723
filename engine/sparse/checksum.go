package sparse

import (
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
)

// checksumChunk is the read size of Checksum.
const checksumChunk = 1 << 20

// Checksum returns the SHA-512 of the bytes [off, off+length) of f, the
// digest sparse-tools' ssync compares (GET /v1-ssync/getChecksum) to skip
// ranges that already match on the receiver. Holes and bytes beyond the end
// of the file count as zeroes, so two files with the same content have the
// same checksum whatever their allocation.
func Checksum(f *os.File, off, length int64) ([]byte, error) {
	return ChecksumWith(sha512.New(), f, off, length)
}

// ChecksumWith is Checksum with a caller-chosen hash (reset before use).
// Holes are hashed as zeroes without reading them.
func ChecksumWith(h hash.Hash, f *os.File, off, length int64) ([]byte, error) {
	if off < 0 || length < 0 {
		return nil, fmt.Errorf("%w: offset %d length %d", ErrInvalidRange, off, length)
	}
	h.Reset()
	buf := make([]byte, min(length, checksumChunk))
	zero := make([]byte, len(buf))
	pos, end := off, off+length
	err := WalkData(f, off, end, func(e Extent) error {
		hashZeroes(h, zero, e.Offset-pos)
		if err := hashFile(h, f, buf, e.Offset, e.Length); err != nil {
			return err
		}
		pos = e.End()
		return nil
	})
	if err != nil {
		return nil, err
	}
	hashZeroes(h, zero, end-pos)
	return h.Sum(nil), nil
}

func hashZeroes(h hash.Hash, zero []byte, n int64) {
	for n > 0 {
		c := min(n, int64(len(zero)))
		h.Write(zero[:c])
		n -= c
	}
}

func hashFile(h hash.Hash, f *os.File, buf []byte, off, n int64) error {
	for n > 0 {
		c, err := f.ReadAt(buf[:min(n, int64(len(buf)))], off)
		h.Write(buf[:c])
		off += int64(c)
		n -= int64(c)
		if errors.Is(err, io.EOF) {
			clear(buf)
			hashZeroes(h, buf, n) // the file shrank under us: the rest reads as zeroes
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// SumBytes is the SHA-512 of b, the digest Checksum gives for a range
// holding b.
func SumBytes(b []byte) []byte {
	s := sha512.Sum512(b)
	return s[:]
}

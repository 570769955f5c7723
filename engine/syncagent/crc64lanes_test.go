package syncagent

import (
	"hash/crc64"
	"math/rand"
	"testing"
)

// TestCRC64Sum: the lane CRC is the standard library's CRC-64/ISO for
// every length around the lane cut-over and odd tails.
func TestCRC64Sum(t *testing.T) {
	b := make([]byte, 1<<20+13)
	rand.New(rand.NewSource(5)).Read(b)
	for _, n := range []int{0, 1, 7, 4095, 4096, 4097, 4103, 65536, 65536 + 31, 1 << 20, len(b)} {
		if got, want := crc64Sum(b[:n]), crc64.Checksum(b[:n], crcTable); got != want {
			t.Fatalf("len %d: %#x, want %#x", n, got, want)
		}
	}
}

func BenchmarkCRC64Sum(b *testing.B) {
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		crc64Sum(buf)
	}
}

func BenchmarkCRC64Stdlib(b *testing.B) {
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		crc64.Checksum(buf, crcTable)
	}
}

// TestCRCStep: the shift-and-XOR step is the slicing-by-8 step of the
// standard library's CRC-64/ISO table (the register after 8 zero bytes).
func TestCRCStep(t *testing.T) {
	tab := crc64.MakeTable(crc64.ISO)
	byTable := func(r uint64) uint64 {
		for i := 0; i < 8; i++ {
			r = tab[byte(r)] ^ r>>8
		}
		return r
	}
	rng := rand.New(rand.NewSource(9))
	for i := 0; i < 100000; i++ {
		v := rng.Uint64()
		if i < 64 {
			v = 1 << i
		}
		if got, want := crcStep(v), byTable(v); got != want {
			t.Fatalf("crcStep(%#x) = %#x, want %#x", v, got, want)
		}
	}
}

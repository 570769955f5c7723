package syncagent

import (
	"context"
	"fmt"
	"hash/crc64"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

func TestCRC64Zeros(t *testing.T) {
	zeros := make([]byte, 1<<20+7)
	for _, start := range []uint64{0, 1, 0xdeadbeefcafef00d, ^uint64(0)} {
		for _, n := range []int{0, 1, 2, 3, 8, 255, 4096, 65537, len(zeros)} {
			want := crc64.Update(start, crcTable, zeros[:n])
			if got := crc64Zeros(start, int64(n)); got != want {
				t.Fatalf("crc64Zeros(%#x, %d) = %#x, want %#x", start, n, got, want)
			}
		}
	}
}

// TestCRC64FileSparse: the hole-skipping file CRC is the CRC of the whole
// content, holes read as zeroes, whatever the layout.
func TestCRC64FileSparse(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	for i, size := range []int64{0, 4096, 3 << 20, 5<<20 + 4096} {
		p := filepath.Join(dir, fmt.Sprint(i))
		if size == 0 {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			writeSparse(t, p, size, int64(i))
		}
		if i == 3 { // data up to the end, and a leading hole
			f, _ := os.OpenFile(p, os.O_RDWR, 0)
			b := make([]byte, 8192)
			rng.Read(b)
			_, _ = f.WriteAt(b, size-8192)
			f.Close()
		}
		all, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := crc64File(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%016x", crc64.Checksum(all, crcTable)); got != want {
			t.Fatalf("size %d: crc64File %s, want %s", size, got, want)
		}
	}
}

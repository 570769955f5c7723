package shm

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCreateRejectsBadSizes(t *testing.T) {
	for _, size := range []int{0, -4096, 4095, MaxMapSize + 4096} {
		if _, err := Create("t", size); err == nil {
			t.Errorf("size %d accepted", size)
		}
	}
}

func TestGetPutOffsetSlice(t *testing.T) {
	r, err := Create("t", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	a := r.Get(4096)
	b := r.Get(100 << 10) // 128 KiB class
	if len(a) != 4096 || len(b) != 100<<10 || cap(b) != 128<<10 {
		t.Fatalf("len/cap %d/%d %d/%d", len(a), cap(a), len(b), cap(b))
	}
	offA, okA := r.Offset(a)
	offB, okB := r.Offset(b)
	if !okA || !okB || offA%4096 != 0 || offB%4096 != 0 || offA == offB {
		t.Fatalf("offsets %d %v, %d %v", offA, okA, offB, okB)
	}
	copy(b, "hello")
	s, err := r.Slice(offB, 5)
	if err != nil || string(s) != "hello" {
		t.Fatalf("slice %q %v", s, err)
	}
	if _, ok := r.Offset(make([]byte, 10)); ok {
		t.Error("heap slice reported inside the region")
	}
	if _, ok := r.Offset(nil); ok {
		t.Error("empty slice reported inside the region")
	}
	for _, c := range []struct {
		off int64
		n   uint32
	}{{-1, 1}, {1 << 20, 1}, {1<<20 - 4, 8}, {0, 1<<20 + 1}} {
		if _, err := r.Slice(c.off, c.n); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Slice(%d, %d): %v, want ErrOutOfRange", c.off, c.n, err)
		}
	}
	if !r.Put(b) {
		t.Fatal("Put refused a block of the region")
	}
	if c := r.Get(128 << 10); &c[0] != &b[0] {
		t.Error("a freed block was not reused")
	}
	if r.Put(make([]byte, 4096)) { // not ours: left alone
		t.Error("Put took a heap slice")
	}
	if r.Get(MaxBlock+1) != nil || r.Get(0) != nil {
		t.Error("out-of-range sizes got a block")
	}
	// Exhaust the region: Get then returns nil.
	n := 0
	for r.Get(64<<10) != nil {
		n++
	}
	if n == 0 || n > 16 {
		t.Errorf("%d blocks of 64 KiB from a 1 MiB region", n)
	}
	var nilRegion *Region
	if nilRegion.Get(4096) != nil || nilRegion.Put(b) {
		t.Error("nil region gave a block")
	}
}

func TestMapSharesAndChecksSeals(t *testing.T) {
	r, err := Create("t", 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := Map(r.Fd(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	b := r.Get(4096)
	off, _ := r.Offset(b)
	copy(b, "shared")
	s, err := peer.Slice(off, 6)
	if err != nil || string(s) != "shared" {
		t.Fatalf("peer sees %q %v", s, err)
	}
	copy(s, "SHARED")
	if string(b[:6]) != "SHARED" {
		t.Fatalf("creator sees %q", b[:6])
	}

	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	_ = unix.Ftruncate(fd, 4096)
	if _, err := Map(fd, false); !errors.Is(err, ErrNotSealed) {
		t.Errorf("unsealed memfd: %v, want ErrNotSealed", err)
	}
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Map(int(f.Fd()), false); !errors.Is(err, ErrNotSealed) {
		t.Errorf("regular file: %v, want ErrNotSealed", err)
	}
}

func TestArena(t *testing.T) {
	a := Arena()
	if a == nil || a != Arena() || a.Size() != ArenaSize {
		t.Fatalf("arena %v", a)
	}
	b := a.Get(128 << 10)
	if _, ok := a.Offset(b); !ok {
		t.Fatal("arena block not in the arena")
	}
	a.Put(b)
}

package bufpool

import "testing"

func TestGetPut(t *testing.T) {
	for _, n := range []int{1, 511, 512, 513, 4096, 4097, 1 << 20, 1<<25 + 1} {
		b := Get(n)
		if len(b) != n {
			t.Fatalf("Get(%d) len %d", n, len(b))
		}
		if cap(b) < n {
			t.Fatalf("Get(%d) cap %d", n, cap(b))
		}
		Put(b)
	}
	if Get(0) != nil {
		t.Fatal("Get(0) should be nil")
	}
	Put(make([]byte, 100)) // foreign buffer: ignored
}

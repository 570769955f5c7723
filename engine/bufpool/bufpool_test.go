package bufpool

import "testing"

func TestGetPutSizes(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 65536, 1 << 20, MaxSize, MaxSize + 1} {
		b := Get(n)
		if len(b) != n {
			t.Fatalf("Get(%d) len %d", n, len(b))
		}
		if n <= MaxSize && cap(b)&(cap(b)-1) != 0 {
			t.Fatalf("Get(%d) cap %d not a power of two", n, cap(b))
		}
		Put(b)
	}
	Put(make([]byte, 5000)) // odd capacity: dropped, no panic
}

func BenchmarkGetPut4K(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Put(Get(4096))
	}
}

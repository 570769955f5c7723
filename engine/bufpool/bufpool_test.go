package bufpool

import "testing"

func TestGetPutSizes(t *testing.T) {
	for _, n := range []int{1, 511, 512, 513, 4095, 4096, 4097, 65536, 1 << 20, 1<<25 + 1, MaxSize, MaxSize + 1} {
		b := Get(n)
		if len(b) != n {
			t.Fatalf("Get(%d) len %d", n, len(b))
		}
		if n <= MaxSize && (cap(b)&(cap(b)-1) != 0 || cap(b) < max(n, 512)) {
			t.Fatalf("Get(%d) cap %d", n, cap(b))
		}
		Put(b)
	}
	if Get(0) != nil || GetShared(0) != nil {
		t.Fatal("Get(0) should be nil")
	}
	Put(nil)
	Put(make([]byte, 5000)) // odd capacity: dropped, no panic
	Put(make([]byte, 100))  // below the smallest class: dropped
}

// TestSharedRoundTrip: buffers of 4 KiB and more come from the shared
// region when there is one, smaller ones from the pool; Put takes both.
func TestSharedRoundTrip(t *testing.T) {
	for _, n := range []int{512, 4096, 128 << 10} {
		b := GetShared(n)
		if len(b) != n {
			t.Fatalf("GetShared(%d) len %d", n, len(b))
		}
		b[0], b[n-1] = 1, 2
		Put(b)
	}
}

func TestAligned(t *testing.T) {
	b := Get(4096)
	defer Put(b)
	if !Aligned(b) {
		t.Skip("this allocator does not align 4 KiB buffers")
	}
	if Aligned(b[1:]) || Aligned(nil) {
		t.Fatal("Aligned of an offset slice")
	}
}

func BenchmarkGetPut4K(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Put(Get(4096))
	}
}

func BenchmarkGetPutShared128K(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Put(GetShared(128 << 10))
	}
}

package dataconn

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// procSyscalls returns this process's read-like and write-like syscall counts
// (/proc/self/io syscr, syscw).
func procSyscalls(t testing.TB) (r, w int64) {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			r = n
		case "syscw":
			w = n
		}
	}
	return r, w
}

// BenchmarkWrite4K measures 4 KiB writes through one client to one in-memory
// replica at queue depth 1 and 32, and reports read and write syscalls per
// request (both sides run in this process, so both are counted).
func BenchmarkWrite4K(b *testing.B) {
	for _, qd := range []int{1, 32} {
		for _, conns := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("qd%d/conns%d", qd, conns), func(b *testing.B) {
				benchIO(b, TypeWrite, qd, conns)
			})
		}
	}
}

// BenchmarkRead4K is BenchmarkWrite4K for reads.
func BenchmarkRead4K(b *testing.B) {
	for _, qd := range []int{1, 32} {
		b.Run(fmt.Sprintf("qd%d/conns2", qd), func(b *testing.B) { benchIO(b, TypeRead, qd, 2) })
	}
}

func benchIO(b *testing.B, typ MsgType, qd, conns int) {
	st := newMemStore(64 << 20)
	_, addr := startServer(b, st)
	c := dial(b, addr, Options{Conns: conns})
	b.SetBytes(4096)
	b.ReportAllocs()
	r0, w0 := procSyscalls(b)
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / qd
	for g := 0; g < qd; g++ {
		n := per
		if g == 0 {
			n += b.N % qd
		}
		wg.Add(1)
		go func(g, n int) {
			defer wg.Done()
			buf := make([]byte, 4096)
			for i := 0; i < n; i++ {
				off := int64((g*n+i)%16384) * 4096
				if _, err := c.Start(typ, buf, off, 4096).Wait(); err != nil {
					b.Error(err)
					return
				}
			}
		}(g, n)
	}
	wg.Wait()
	b.StopTimer()
	r1, w1 := procSyscalls(b)
	b.ReportMetric(float64(r1-r0)/float64(b.N), "syscr/op")
	b.ReportMetric(float64(w1-w0)/float64(b.N), "syscw/op")
}

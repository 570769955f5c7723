package controller

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/longhorn-go/longhorn/engine/dataconn"
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

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkReplicatedWrite4K measures a 4 KiB write replicated to 1 or 3
// in-memory replicas over loopback dataconn, at queue depth 1 and 32. It
// reports read and write syscalls per replicated write; engine and replicas
// run in this process, so both sides are counted (the engine's share alone is
// about half).
func BenchmarkReplicatedWrite4K(b *testing.B) {
	for _, nrep := range []int{1, 3} {
		for _, qd := range []int{1, 32} {
			b.Run(fmt.Sprintf("replicas%d/qd%d", nrep, qd), func(b *testing.B) {
				benchReplicated(b, nrep, qd, true)
			})
		}
	}
}

// BenchmarkReplicatedRead4K is the read counterpart (reads go to one replica).
func BenchmarkReplicatedRead4K(b *testing.B) {
	for _, qd := range []int{1, 32} {
		b.Run(fmt.Sprintf("replicas3/qd%d", qd), func(b *testing.B) { benchReplicated(b, 3, qd, false) })
	}
}

// BenchmarkReplicatedSeq128K measures 128 KiB sequential writes and reads at
// queue depth 16 with 1 and 3 replicas.
func BenchmarkReplicatedSeq128K(b *testing.B) {
	for _, nrep := range []int{1, 3} {
		for _, write := range []bool{true, false} {
			name := "read"
			if write {
				name = "write"
			}
			b.Run(fmt.Sprintf("%s/replicas%d", name, nrep), func(b *testing.B) { benchIO(b, nrep, 16, write, 128<<10) })
		}
	}
}

func benchReplicated(b *testing.B, nrep, qd int, write bool) { benchIO(b, nrep, qd, write, 4096) }

func benchIO(b *testing.B, nrep, qd int, write bool, bs int) {
	const size = 64 << 20
	var reps []*memReplica
	for i := 0; i < nrep; i++ {
		reps = append(reps, newMemReplica(b, size))
	}
	r := newTestReplicator(b, size, reps, dataconn.Options{})
	b.SetBytes(int64(bs))
	b.ReportAllocs()
	r0, w0 := procSyscalls(b)
	cpu0 := cpuTime()
	b.ResetTimer()
	var wg sync.WaitGroup
	for g := 0; g < qd; g++ {
		n := b.N / qd
		if g == 0 {
			n += b.N % qd
		}
		wg.Add(1)
		go func(g, n int) {
			defer wg.Done()
			buf := make([]byte, bs)
			for i := 0; i < n; i++ {
				off := int64((g*7919+i)%(size/bs)) * int64(bs)
				var err error
				if write {
					_, err = r.WriteAt(buf, off)
				} else {
					_, err = r.ReadAt(buf, off)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}(g, n)
	}
	wg.Wait()
	b.StopTimer()
	r1, w1 := procSyscalls(b)
	b.ReportMetric(float64(cpuTime()-cpu0)/1e3/float64(b.N), "cpu-us/op")
	b.ReportMetric(float64(r1-r0)/float64(b.N), "syscr/op")
	b.ReportMetric(float64(w1-w0)/float64(b.N), "syscw/op")
}

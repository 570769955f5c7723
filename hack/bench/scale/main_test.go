package main

import (
	"testing"

	"github.com/longhorn-go/longhorn/internal/procstat"
)

func TestParseGoroutineHeader(t *testing.T) {
	if n, err := parseGoroutineHeader("goroutine profile: total 18\n"); err != nil || n != 18 {
		t.Fatalf("= %d, %v; want 18", n, err)
	}
	for _, bad := range []string{"", "heap profile: 1", "goroutine profile: total x"} {
		if _, err := parseGoroutineHeader(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestParseFio(t *testing.T) {
	js := `{"jobs":[{"error":0,"read":{"iops":0,"bw_bytes":0,"io_bytes":0},
	  "write":{"iops":2000.5,"bw_bytes":8388608,"io_bytes":1000,"clat_ns":{"percentile":{"50.000000":150000,"99.000000":900000}}}}]}`
	r, err := parseFio([]byte("\nfio: terminating on signal 2\n"+js), false)
	if err != nil || r.IOPS != 2000.5 || r.MiBps != 8 || r.P50us != 150 || r.P99us != 900 {
		t.Fatalf("parseFio = %+v, %v", r, err)
	}
	if _, err := parseFio([]byte(js), true); err == nil {
		t.Fatal("read side did no I/O: want an error")
	}
	if _, err := parseFio([]byte(`{"jobs":[]}`), false); err == nil {
		t.Fatal("no jobs: want an error")
	}
}

func TestAggregate(t *testing.T) {
	ss := []Sample{
		{Mem: procstat.Mem{RSS: 10240, PSS: 2048, PrivateDirty: 1024, Threads: 6}, FDs: 10, Goroutines: 15, CPUPct: 1},
		{Mem: procstat.Mem{RSS: 20480, PSS: 4096, PrivateDirty: 3072, Threads: 8}, FDs: 20, Goroutines: 17, CPUPct: 3},
	}
	a := aggregate(ss)
	if a.N != 2 || a.RSSMiB != 15 || a.MaxRSSMiB != 20 || a.PSSMiB != 3 || a.USSMiB != 2 || a.Threads != 7 ||
		a.FDs != 15 || a.Goroutines != 16 || a.CPUPct != 2 {
		t.Fatalf("aggregate = %+v", a)
	}
	if aggregate(nil).N != 0 {
		t.Fatal("aggregate(nil)")
	}
}

func TestIntList(t *testing.T) {
	if got, err := intList("1, 10,50"); err != nil || len(got) != 3 || got[2] != 50 {
		t.Fatalf("intList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "x"} {
		if _, err := intList(bad); err == nil {
			t.Errorf("intList(%q): want an error", bad)
		}
	}
}

func TestPortsDistinct(t *testing.T) {
	var pp ports
	seen := map[int]bool{}
	for i := 0; i < 20; i++ {
		base, err := pp.rangeOf(11)
		if err != nil {
			t.Fatal(err)
		}
		if base < portLow || base+11 > portHigh {
			t.Fatalf("range %d outside %d-%d", base, portLow, portHigh)
		}
		for p := base; p < base+11; p++ {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
}

package main

import (
	"strings"
	"testing"
	"time"

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

func TestWallVerdict(t *testing.T) {
	all := []PartTime{{Part: "1", Secs: 150}, {Part: "2", Secs: 160}, {Part: "3", Secs: 700}}
	if got := wallVerdict(all, 19*time.Minute+59*time.Second); got != "met" {
		t.Errorf("19m59s: %q, want met", got)
	}
	if got := wallVerdict(all, 20*time.Minute); got != "MISSED" {
		t.Errorf("20m: %q, want MISSED", got)
	}
	if got := wallVerdict(all[:2], time.Minute); !strings.Contains(got, "part 3 did not run") {
		t.Errorf("parts 1,2: %q, want part 3 named", got)
	}
	failed := append([]PartTime{}, all...)
	failed[1].Failed = true
	if got := wallVerdict(failed, time.Minute); !strings.Contains(got, "part 2 failed") {
		t.Errorf("part 2 failed: %q", got)
	}
	if !cpFailed(CPRun{Failover: Failover{Owned: 3, Moved: 2}}) || cpFailed(CPRun{Failover: Failover{Owned: 3, Moved: 3}}) {
		t.Error("cpFailed: a volume left without a new owner is a failure, none is not")
	}
	if !cpFailed(CPRun{Phases: []Latency{{Failed: 1}}}) || !rebuildFailed([]RebuildRun{{}, {Err: "x"}}) || costFailed([]CostRun{{}}) {
		t.Error("failed phase / rebuild error / clean cost run")
	}
	var b strings.Builder
	printWall(&b, all, 1010*time.Second)
	for _, want := range []string{"part 1: 2m30s", "part 3: 11m40s", "total (parts 1,2,3): 16m50s", "< 20m00s: met"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printWall output lacks %q:\n%s", want, b.String())
		}
	}
}

func TestPickVariants(t *testing.T) {
	vs, err := pickVariants("")
	if err != nil || len(vs) != 1 || vs[0].Name != imVariant {
		t.Fatalf("default = %+v, %v; want only %s", vs, err, imVariant)
	}
	if vs, err = pickVariants("all"); err != nil || len(vs) != len(variants) {
		t.Fatalf("all = %+v, %v", vs, err)
	}
	if vs, err = pickVariants("direct,no-trim"); err != nil || len(vs) != 2 || vs[1].Env == nil {
		t.Fatalf("direct,no-trim = %+v, %v", vs, err)
	}
	if _, err = pickVariants("gogc50"); err == nil || !strings.Contains(err.Error(), "gogc50") {
		t.Fatalf("unknown variant: %v", err)
	}
}

package rawio

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// noPressure makes DepthOne see no CPU pressure for the rest of the test
// (the machine running the tests may be busy).
func noPressure(t *testing.T) {
	old := cpuPressure
	cpuPressure = &pressure{failed: true}
	t.Cleanup(func() { cpuPressure = old })
}

func TestDepthOneSpinsAfterARunOfLoneRequests(t *testing.T) {
	noPressure(t)
	var d DepthOne
	for i := 0; i < SpinRun-1; i++ {
		d.Observe(true)
		if got := d.Spin(); got != 0 {
			t.Fatalf("after %d lone requests: spin %v, want 0", i+1, got)
		}
	}
	d.Observe(true)
	if got := d.Spin(); got != RequestSpin {
		t.Fatalf("after %d lone requests: spin %v, want %v", SpinRun, got, RequestSpin)
	}
	for i := 0; i < 100; i++ {
		d.Observe(true)
	}
	if got := d.Spin(); got != RequestSpin {
		t.Fatalf("after a long run: spin %v, want %v", got, RequestSpin)
	}
	d.Observe(false)
	if got := d.Spin(); got != 0 {
		t.Fatalf("after a request that was not alone: spin %v, want 0", got)
	}
}

func TestSetReadSpinOnlyOnRawConns(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	SetReadSpin(a, RequestSpin) // not a *Conn: no effect, no panic
	c := &Conn{Conn: a}
	SetReadSpin(c, RequestSpin)
	if c.spin != RequestSpin {
		t.Fatalf("spin %v, want %v", c.spin, RequestSpin)
	}
}

func TestDepthOneBacksOffAfterSpinsRunOut(t *testing.T) {
	noPressure(t)
	var d DepthOne
	lone := func(n int) {
		for i := 0; i < n; i++ {
			d.Observe(true)
		}
	}
	lone(SpinRun)
	if d.Spin() == 0 {
		t.Fatal("no spin after a run of lone requests")
	}
	d.Spun(true) // ran out: the next spin needs twice the run
	lone(2*SpinRun - 1)
	if got := d.Spin(); got != 0 {
		t.Fatalf("spin %v one request before the doubled run", got)
	}
	lone(1)
	if d.Spin() == 0 {
		t.Fatal("no spin after the doubled run")
	}
	for i := 0; i < 20; i++ { // many spins out: bounded by MaxSpinRun
		d.Spun(true)
		lone(MaxSpinRun)
	}
	if d.Spin() == 0 || d.needed() != MaxSpinRun {
		t.Fatalf("after many spins out: spin %v, run needed %d, want %d", d.Spin(), d.needed(), MaxSpinRun)
	}
	d.Spun(false) // caught its request: back to SpinRun
	if d.needed() != SpinRun || d.Spin() == 0 {
		t.Fatalf("after a spin that caught its request: run needed %d, spin %v", d.needed(), d.Spin())
	}
}

func TestPressureGatesTheSpin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu")
	put := func(total uint64) {
		t.Helper()
		line := fmt.Sprintf("some avg10=1.00 avg60=0.50 avg300=0.10 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", total)
		if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := &pressure{path: path}
	t0 := time.Unix(1000, 0)
	put(1_000_000)
	if p.busy(t0) {
		t.Fatal("busy on the first reading (no window yet)")
	}
	put(1_000_000 + 5_000) // 5 ms of 100 ms stalled: 5 %
	if p.busy(t0.Add(pressureWindow)) {
		t.Fatal("busy at 5 % stalled")
	}
	put(1_005_000 + 30_000) // 30 ms of 100 ms: 30 %
	if p.busy(t0.Add(pressureWindow / 2 * 3)) {
		t.Fatal("read again within the window")
	}
	if !p.busy(t0.Add(2 * pressureWindow)) {
		t.Fatal("not busy at 30 % stalled")
	}
	old := cpuPressure
	cpuPressure = p
	t.Cleanup(func() { cpuPressure = old })
	var d DepthOne
	for i := 0; i < SpinRun; i++ {
		d.Observe(true)
	}
	put(1_035_000 + 50_000_000) // a long stall: no spin however long the run
	p.at = time.Now().Add(-time.Second)
	if got := d.Spin(); got != 0 {
		t.Fatalf("spin %v under CPU pressure", got)
	}
}

func TestPressureWithoutPSI(t *testing.T) {
	p := &pressure{path: filepath.Join(t.TempDir(), "missing")}
	if p.busy(time.Now()) || !p.failed {
		t.Fatal("a missing pressure file must read as not busy, once")
	}
	for _, bad := range []string{"", "full total=3\n", "some avg10=1 total=x\n", "some avg10=1\n"} {
		if _, ok := parseSomeTotal([]byte(bad)); ok {
			t.Fatalf("parseSomeTotal(%q) ok", bad)
		}
	}
	if v, ok := parseSomeTotal([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n")); !ok || v != 42 {
		t.Fatalf("parseSomeTotal: %d %v", v, ok)
	}
}

package rawio

import (
	"net"
	"testing"
)

func TestDepthOneSpinsAfterARunOfLoneRequests(t *testing.T) {
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

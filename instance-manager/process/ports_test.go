package process

import (
	"errors"
	"testing"
)

func TestParsePortRange(t *testing.T) {
	cases := []struct {
		in      string
		want    PortRange
		wantErr bool
	}{
		{"10000-30000", PortRange{10000, 30000}, false},
		{" 1-1 ", PortRange{1, 1}, false},
		{"1-65535", PortRange{1, 65535}, false},
		{"0-10", PortRange{}, true},
		{"10-9", PortRange{}, true},
		{"10-65536", PortRange{}, true},
		{"10000", PortRange{}, true},
		{"a-b", PortRange{}, true},
		{"", PortRange{}, true},
	}
	for _, c := range cases {
		got, err := ParsePortRange(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("ParsePortRange(%q) = %v, %v; want %v, err %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

// allocOp is one step of an allocator scenario: allocate count ports (release
// = false) expecting start (or exhausted when start is 0 and !badCount), or
// release start..start+count-1 expecting success unless wantErr.
type allocOp struct {
	release  bool
	count    int32
	start    int32
	wantErr  bool
	exhaust  bool
	wantUsed int
}

func TestPortAllocator(t *testing.T) {
	r := PortRange{100, 119} // 20 ports
	cases := []struct {
		name  string
		busy  map[int32]bool // ports the host probe reports taken
		steps []allocOp
	}{
		{"sequential next-fit", nil, []allocOp{
			{count: 1, start: 100, wantUsed: 1},
			{count: 10, start: 101, wantUsed: 11},
			{count: 1, start: 111, wantUsed: 12},
		}},
		{"freed ports are reused last", nil, []allocOp{
			{count: 5, start: 100, wantUsed: 5},
			{release: true, count: 5, start: 100, wantUsed: 0},
			{count: 5, start: 105, wantUsed: 5},
			{count: 10, start: 110, wantUsed: 15},
			{count: 5, start: 100, wantUsed: 20}, // wraps to the freed block
		}},
		{"block never wraps past the end", nil, []allocOp{
			{count: 15, start: 100, wantUsed: 15},
			{release: true, count: 15, start: 100, wantUsed: 0},
			{count: 10, start: 100, wantUsed: 10}, // 115-119 too short: wrap to 100
		}},
		{"exhaustion is an error and changes nothing", nil, []allocOp{
			{count: 10, start: 100, wantUsed: 10},
			{count: 10, start: 110, wantUsed: 20},
			{count: 1, exhaust: true, wantErr: true, wantUsed: 20},
		}},
		{"fragmented space has no block", nil, []allocOp{
			{count: 10, start: 100, wantUsed: 10},
			{count: 10, start: 110, wantUsed: 20},
			{release: true, count: 5, start: 100, wantUsed: 15},
			{release: true, count: 5, start: 115, wantUsed: 10},
			{count: 10, exhaust: true, wantErr: true, wantUsed: 10},
			{count: 5, start: 100, wantUsed: 15}, // next-fit wrapped after 119
			{count: 5, start: 115, wantUsed: 20},
		}},
		{"bad counts", nil, []allocOp{
			{count: 0, wantErr: true},
			{count: -1, wantErr: true},
			{count: 21, wantErr: true},
			{count: 20, start: 100, wantUsed: 20},
		}},
		{"bad releases change nothing", nil, []allocOp{
			{count: 2, start: 100, wantUsed: 2},
			{release: true, count: 3, start: 100, wantErr: true, wantUsed: 2},
			{release: true, count: 1, start: 99, wantErr: true, wantUsed: 2},
			{release: true, count: 1, start: 120, wantErr: true, wantUsed: 2},
			{release: true, count: 2, start: 100, wantUsed: 0},
			{release: true, count: 2, start: 100, wantErr: true, wantUsed: 0},
		}},
		{"host-busy ports are skipped", map[int32]bool{102: true, 115: true}, []allocOp{
			{count: 1, start: 100, wantUsed: 1},
			{count: 10, start: 103, wantUsed: 11},
			{count: 5, exhaust: true, wantErr: true, wantUsed: 11}, // 113-114, 116-119, 101: no 5 in a row
			{count: 4, start: 116, wantUsed: 15},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var probe func(int32) bool
			if c.busy != nil {
				probe = func(p int32) bool { return !c.busy[p] }
			}
			a := NewPortAllocator(r, probe)
			for i, s := range c.steps {
				var err error
				var start int32
				if s.release {
					err = a.Release(s.start, s.start+s.count-1)
				} else {
					start, _, err = a.Allocate(s.count)
				}
				if (err != nil) != s.wantErr {
					t.Fatalf("step %d %+v: err %v", i, s, err)
				}
				if s.exhaust != errors.Is(err, ErrPortsExhausted) {
					t.Fatalf("step %d %+v: err %v, want exhausted %v", i, s, err, s.exhaust)
				}
				if !s.release && !s.wantErr && start != s.start {
					t.Fatalf("step %d: allocated at %d, want %d", i, start, s.start)
				}
				if a.InUse() != s.wantUsed {
					t.Fatalf("step %d: %d ports in use, want %d", i, a.InUse(), s.wantUsed)
				}
			}
		})
	}
}

package process

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrPortsExhausted is returned when no block of the requested number of
// consecutive free ports is left in the range.
var ErrPortsExhausted = errors.New("no free port range")

// PortRange is an inclusive range of TCP ports, e.g. Longhorn's process range
// 10000-30000.
type PortRange struct {
	Start, End int32
}

// DefaultPortRange is the range engine and replica processes get ports from.
var DefaultPortRange = PortRange{Start: 10000, End: 30000}

// Size is the number of ports in the range.
func (r PortRange) Size() int32 { return r.End - r.Start + 1 }

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Start, r.End) }

// ParsePortRange parses "START-END" (inclusive, 1 <= START <= END <= 65535).
func ParsePortRange(s string) (PortRange, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return PortRange{}, fmt.Errorf("port range %q: want START-END", s)
	}
	start, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return PortRange{}, fmt.Errorf("port range %q: START and END must be integers", s)
	}
	if start < 1 || end > 65535 || start > end {
		return PortRange{}, fmt.Errorf("port range %q: want 1 <= START <= END <= 65535", s)
	}
	return PortRange{Start: int32(start), End: int32(end)}, nil
}

// PortAllocator hands out blocks of consecutive ports from a range. It searches
// next-fit (from where the last block ended, wrapping around), so a port that
// was just freed is reused as late as possible and a stale client address is
// less likely to reach a new process. It is not safe for concurrent use; the
// Manager calls it under its lock.
type PortAllocator struct {
	r    PortRange
	used []bool // used[p-r.Start]
	next int32  // offset where the next search starts
	n    int32  // ports in use
	// probe, when set, reports whether a port is free on the host; blocks
	// containing a port held by another program are skipped.
	probe func(port int32) bool
}

// NewPortAllocator returns an allocator over r. probe may be nil.
func NewPortAllocator(r PortRange, probe func(port int32) bool) *PortAllocator {
	return &PortAllocator{r: r, used: make([]bool, r.Size()), probe: probe}
}

// Range returns the range the allocator serves.
func (a *PortAllocator) Range() PortRange { return a.r }

// InUse returns the number of allocated ports.
func (a *PortAllocator) InUse() int { return int(a.n) }

// Allocate reserves count consecutive ports and returns the first and last
// (inclusive). It returns ErrPortsExhausted when no such block is free, and an
// error for count < 1 or count larger than the range.
func (a *PortAllocator) Allocate(count int32) (start, end int32, err error) {
	size := a.r.Size()
	if count < 1 || count > size {
		return 0, 0, fmt.Errorf("port count %d: want 1..%d", count, size)
	}
	// Try every block start once, beginning at a.next and wrapping.
	for tried := int32(0); tried < size; {
		off := (a.next + tried) % size
		if off+count > size { // a block cannot wrap past the end
			tried += size - off
			continue
		}
		if bad := a.lastUnusable(off, count); bad >= 0 {
			tried += bad - off + 1
			continue
		}
		for i := off; i < off+count; i++ {
			a.used[i] = true
		}
		a.n += count
		a.next = (off + count) % size
		return a.r.Start + off, a.r.Start + off + count - 1, nil
	}
	return 0, 0, fmt.Errorf("%w: %d consecutive ports in %s (%d in use)", ErrPortsExhausted, count, a.r, a.n)
}

// lastUnusable returns the offset of the last port in [off, off+count) that is
// allocated or busy on the host, or -1 when the whole block is usable. Returning
// the last one lets the search skip past it.
func (a *PortAllocator) lastUnusable(off, count int32) int32 {
	for i := off + count - 1; i >= off; i-- {
		if a.used[i] {
			return i
		}
	}
	if a.probe != nil {
		for i := off + count - 1; i >= off; i-- {
			if !a.probe(a.r.Start + i) {
				return i
			}
		}
	}
	return -1
}

// Release frees ports start..end (inclusive). It returns an error, and frees
// nothing, when the block is outside the range or not fully allocated.
func (a *PortAllocator) Release(start, end int32) error {
	if start < a.r.Start || end > a.r.End || start > end {
		return fmt.Errorf("release ports %d-%d: outside range %s", start, end, a.r)
	}
	for p := start; p <= end; p++ {
		if !a.used[p-a.r.Start] {
			return fmt.Errorf("release ports %d-%d: port %d is not allocated", start, end, p)
		}
	}
	for p := start; p <= end; p++ {
		a.used[p-a.r.Start] = false
	}
	a.n -= end - start + 1
	return nil
}

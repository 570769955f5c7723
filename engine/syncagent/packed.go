package syncagent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

// The packed extension of the ssync wire, between our own sender and
// receiver only (a Longhorn peer neither offers nor sends it, so both
// directions with Longhorn stay sparse-tools' protocol). A receiver of
// ours lists extPacked in the open answer's ExtensionsHeader, whatever its
// file holds; a sender that sees it moves the file with three requests
// instead of sparse-tools' per-extent ones:
//
//	GET  /v1-ssync/extentMap                       the receiver's data extents: "<off>+<len>,..." (absolute, bytes; "" = none)
//	POST /v1-ssync/getChecksums?begin=B&end=E      DataRangesHeader names ranges relative to B; body out: 32 bytes
//	                                               per range, the SHA-256 of a range the file holds as data
//	                                               throughout, all zeroes for a range with a hole
//	POST /v1-ssync/writePacked?begin=B&end=E       HoleRangesHeader: ranges to punch; DataRangesHeader: ranges
//	                                               to write, whose bytes the body carries back to back
//	                                               (no holes, no zeroes); SkippedHeader: bytes the sender found
//	                                               equal in [B,E) (progress only)
//
// The sender reads the receiver's extent map once, punches only the
// source's holes the receiver holds data in, asks the checksums of only
// the source data the receiver holds as data (in compareChunk pieces,
// one request per window), and writes the rest packed. The receiver's
// file then has the source's content and extent map: data where the
// source has data (an allocated page of zeroes in a snapshot layer hides
// the older layers' data and must stay allocated), holes elsewhere.
const (
	extPacked = "packed"
	// HoleRangesHeader names the ranges writePacked punches, relative to
	// its begin, in DataRangesHeader's format.
	HoleRangesHeader = "X-Ssync-Hole-Ranges"
	// SkippedHeader is the number of bytes of a writePacked's interval
	// the sender skipped as equal (decimal; the receiver's progress).
	SkippedHeader = "X-Ssync-Skipped-Bytes"
	// compareChunk is the piece of data the checksums compare: a change
	// costs at most this much rewrite around it.
	compareChunk = 64 << 10
	// packedData is the most data bytes one writePacked carries.
	packedData = 4 << 20
	// maxExtentMap is the most extents an extentMap answer lists; a more
	// fragmented file answers 500 and the sender compares everything.
	maxExtentMap = 1 << 18
	// sumSize is the size of one getChecksums answer entry (SHA-256).
	sumSize = 32
)

// formatExtents renders exts relative to base in DataRangesHeader's
// format ("" for none).
func formatExtents(base int64, exts []sparse.Extent) string {
	var b strings.Builder
	b.Grow(len(exts) * 16)
	for i, e := range exts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(e.Offset-base, 10))
		b.WriteByte('+')
		b.WriteString(strconv.FormatInt(e.Length, 10))
	}
	return b.String()
}

// parseRanges parses "<offset>+<length>" pairs (decimal bytes,
// comma-separated, sorted, disjoint, each non-empty and inside [0,n)); at
// most max pairs. "" is no range. Errors name the header, the pair and the
// rule it breaks.
func parseRanges(name, v string, n int64, max int) ([]sparse.Extent, error) {
	if v == "" {
		return nil, nil
	}
	if c := strings.Count(v, ",") + 1; c > max {
		return nil, fmt.Errorf("ssync: %s: %d ranges > %d", name, c, max)
	}
	out := make([]sparse.Extent, 0, strings.Count(v, ",")+1)
	end := int64(0)
	for i := 0; v != ""; i++ {
		p := v
		if k := strings.IndexByte(v, ','); k >= 0 {
			p, v = v[:k], v[k+1:]
			if v == "" {
				return nil, fmt.Errorf("ssync: %s: trailing comma", name)
			}
		} else {
			v = ""
		}
		o, l, ok := strings.Cut(p, "+")
		off, err1 := strconv.ParseInt(o, 10, 64)
		length, err2 := strconv.ParseInt(l, 10, 64)
		switch {
		case !ok || err1 != nil || err2 != nil:
			return nil, fmt.Errorf("ssync: %s range %d %q: want <offset>+<length>", name, i, p)
		case length <= 0 || off < end:
			return nil, fmt.Errorf("ssync: %s range %d %q: empty, or before the previous range's end %d", name, i, p, end)
		case off > n || length > n-off:
			return nil, fmt.Errorf("ssync: %s range %d %q: past the interval's %d bytes", name, i, p, n)
		}
		out = append(out, sparse.Extent{Offset: off, Length: length})
		end = off + length
	}
	return out, nil
}

// extentsLen is the sum of the lengths of exts.
func extentsLen(exts []sparse.Extent) int64 {
	var n int64
	for _, e := range exts {
		n += e.Length
	}
	return n
}

// subtract returns the parts of a that b does not cover (both sorted and
// disjoint; so is the result).
func subtract(a, b []sparse.Extent) []sparse.Extent {
	var out []sparse.Extent
	j := 0
	for _, e := range a {
		pos, end := e.Offset, e.End()
		for j < len(b) && b[j].End() <= pos {
			j++
		}
		for k := j; k < len(b) && b[k].Offset < end; k++ {
			if b[k].Offset > pos {
				out = append(out, sparse.Extent{Offset: pos, Length: b[k].Offset - pos})
			}
			pos = max(pos, b[k].End())
		}
		if pos < end {
			out = append(out, sparse.Extent{Offset: pos, Length: end - pos})
		}
	}
	return out
}

// piece is a range of source data and whether the receiver holds it all
// as data (then its checksum is compared before it is written).
type piece struct {
	sparse.Extent
	compare bool
}

// splitPieces cuts the source data extents src (sorted, disjoint) where
// the receiver's extents dst begin and end, and the parts on receiver data
// further at compareChunk boundaries: each piece lies wholly on receiver
// data (compare) or wholly on receiver holes (written without asking).
func splitPieces(src, dst []sparse.Extent) []piece {
	var out []piece
	j := 0
	for _, e := range src {
		pos, end := e.Offset, e.End()
		for pos < end {
			for j < len(dst) && dst[j].End() <= pos {
				j++
			}
			if j == len(dst) || dst[j].Offset >= end {
				out = append(out, piece{Extent: sparse.Extent{Offset: pos, Length: end - pos}})
				break
			}
			if dst[j].Offset > pos {
				out = append(out, piece{Extent: sparse.Extent{Offset: pos, Length: dst[j].Offset - pos}})
				pos = dst[j].Offset
			}
			stop := min(end, dst[j].End())
			for pos < stop {
				n := min(stop, (pos/compareChunk+1)*compareChunk) - pos
				out = append(out, piece{Extent: sparse.Extent{Offset: pos, Length: n}, compare: true})
				pos += n
			}
		}
	}
	return out
}

// packWindows groups pieces (sorted) into windows of at most packedData
// data bytes and maxDataRanges pieces each; a piece longer than packedData
// is cut.
func packWindows(ps []piece) [][]piece {
	var out [][]piece
	var win []piece
	var n int64
	flush := func() {
		if len(win) > 0 {
			out = append(out, win)
		}
		win, n = nil, 0
	}
	for _, p := range ps {
		for p.Length > 0 {
			if n == packedData || len(win) == maxDataRanges {
				flush()
			}
			c := min(p.Length, packedData-n)
			win = append(win, piece{Extent: sparse.Extent{Offset: p.Offset, Length: c}, compare: p.compare})
			n += c
			p.Offset, p.Length = p.Offset+c, p.Length-c
		}
	}
	flush()
	return out
}

// mergeAdjacent joins extents that touch (sorted, disjoint input).
func mergeAdjacent(exts []sparse.Extent) []sparse.Extent {
	var out []sparse.Extent
	for _, e := range exts {
		if k := len(out) - 1; k >= 0 && out[k].End() == e.Offset {
			out[k].Length += e.Length
			continue
		}
		out = append(out, e)
	}
	return out
}

// holeBatches cuts holes into groups of at most maxDataRanges.
func holeBatches(holes []sparse.Extent) [][]sparse.Extent {
	var out [][]sparse.Extent
	for len(holes) > 0 {
		n := min(len(holes), maxDataRanges)
		out = append(out, holes[:n])
		holes = holes[n:]
	}
	return out
}

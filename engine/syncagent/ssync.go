// Package syncagent moves replica files between replica processes for
// rebuild and serves a replica's SyncAgentService (rebuild file sync, purge,
// hashing, clone).
//
// The file transfer is sparse-tools' ssync HTTP protocol, as Longhorn's
// sync agents speak it both ways (longhorn/sparse-tools sparse/rest and
// sparse/client.go; ../../shared/reference/longhorn-engine-wire.md §5): the
// receiving replica opens a one-shot HTTP server for one file on a transfer
// port, and the sender calls
//
//	GET  /v1-ssync/getRecordedMetadata            the receiver's <file>.checksum (fast rebuild)
//	GET  /v1-ssync/open?begin=0&directIO=B&end=N  open/create the file, size N; JSON bool: did it exist
//	POST /v1-ssync/sendHole?begin=B&end=E         punch [B,E) (a hole in the source)
//	GET  /v1-ssync/getChecksum?begin=B&end=E      JSON base64 SHA-512 of [B,E), or null
//	POST /v1-ssync/writeData?begin=B&end=E        body = the E-B bytes of [B,E)
//	POST /v1-ssync/close?checksum=C&checksumMethod=M  sync, close, record C, stop the server
//
// Offsets are bytes. A failed request answers 500 with the error text, a
// missing <file>.checksum 404, a wrong method 405.
package syncagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

const (
	ssyncPrefix = "/v1-ssync/"
	// BatchSize is the largest range one writeData or getChecksum covers
	// (sparse-tools: 512 blocks of 4 KiB).
	BatchSize = 2 << 20
	// MaxWriteData is the largest writeData body a receiver accepts.
	MaxWriteData = 32 << 20
	// DefaultWorkers is the number of concurrent requests of a sender.
	DefaultWorkers = 4
	// DefaultTimeout bounds one HTTP request (Longhorn's
	// file-sync-http-client-timeout default, 30 s).
	DefaultTimeout = 30 * time.Second
	// directIOAlign is the alignment O_DIRECT transfers need (sizes of
	// files sent with directIO must be multiples of it).
	directIOAlign = 4096
)

// An extension of the ssync wire between our own sender and receiver,
// invisible to Longhorn's (which neither sends nor reads these headers, so
// both directions stay Longhorn's protocol): a receiver whose file holds
// no data after open (it did not exist, or is all holes) answers open with
// ExtensionsHeader: data-ranges. A sender that sees it skips the checksum
// comparison (nothing to compare) and may send several nearby data extents
// in one writeData, the holes between them as zeroes, naming the extents
// in the request header DataRangesHeader; the receiver then writes exactly
// those ranges and leaves the rest of the body unwritten, so the new file
// has the source's extent map (which the replica's location index reads:
// an allocated page of zeroes in a snapshot layer hides the older layers'
// data and must stay allocated) with a fraction of the requests. Sent only
// for a range the receiver never wrote before.
const (
	// ExtensionsHeader is the open answer's header listing the receiver's
	// extensions.
	ExtensionsHeader = "X-Ssync-Extensions"
	// DataRangesHeader names the data ranges of a writeData body:
	// "<offset>+<length>" pairs in bytes relative to the body's begin,
	// comma-separated, sorted, not overlapping (formatDataRanges).
	DataRangesHeader = "X-Ssync-Data-Ranges"
	extDataRanges    = "data-ranges"
	// maxDataRanges bounds the ranges of one DataRangesHeader (a 2 MiB
	// window of 4 KiB extents has 512).
	maxDataRanges = 1024
)

// formatDataRanges renders exts, which lie inside iv, as a DataRangesHeader
// value.
func formatDataRanges(iv Interval, exts []sparse.Extent) string {
	var b strings.Builder
	for i, e := range exts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(e.Offset-iv.Begin, 10))
		b.WriteByte('+')
		b.WriteString(strconv.FormatInt(e.Length, 10))
	}
	return b.String()
}

// parseDataRanges parses a DataRangesHeader value for a body of n bytes.
// Errors name the pair and the rule it breaks: not "<offset>+<length>" in
// decimal, a length of 0, a range before the previous one's end (unsorted
// or overlapping), past the body's n bytes, or more than maxDataRanges.
func parseDataRanges(v string, n int64) ([]sparse.Extent, error) {
	pairs := strings.Split(v, ",")
	if len(pairs) > maxDataRanges {
		return nil, fmt.Errorf("ssync: %s: %d ranges > %d", DataRangesHeader, len(pairs), maxDataRanges)
	}
	out := make([]sparse.Extent, 0, len(pairs))
	end := int64(0)
	for i, p := range pairs {
		o, l, ok := strings.Cut(p, "+")
		off, err1 := strconv.ParseInt(o, 10, 64)
		length, err2 := strconv.ParseInt(l, 10, 64)
		switch {
		case !ok || err1 != nil || err2 != nil:
			return nil, fmt.Errorf("ssync: %s range %d %q: want <offset>+<length>", DataRangesHeader, i, p)
		case length <= 0 || off < end:
			return nil, fmt.Errorf("ssync: %s range %d %q: empty, or before the previous range's end %d", DataRangesHeader, i, p, end)
		case off > n || length > n-off:
			return nil, fmt.Errorf("ssync: %s range %d %q: past the body's %d bytes", DataRangesHeader, i, p, n)
		}
		out = append(out, sparse.Extent{Offset: off, Length: length})
		end = off + length
	}
	return out, nil
}

// ErrBadInterval is a begin/end query that is missing, not a number, or not
// inside the file.
var ErrBadInterval = errors.New("ssync: bad interval")

// Interval is a byte range [Begin, End).
type Interval struct{ Begin, End int64 }

// Len is End-Begin.
func (iv Interval) Len() int64 { return iv.End - iv.Begin }

func (iv Interval) values() url.Values {
	return url.Values{"begin": {strconv.FormatInt(iv.Begin, 10)}, "end": {strconv.FormatInt(iv.End, 10)}}
}

// ParseInterval reads the begin and end query parameters of an ssync request.
// Both must be decimal, 0 <= begin <= end <= limit.
func ParseInterval(q url.Values, limit int64) (Interval, error) {
	bs, es := q.Get("begin"), q.Get("end")
	if bs == "" || es == "" {
		return Interval{}, fmt.Errorf("%w: begin and end are required", ErrBadInterval)
	}
	b, err := strconv.ParseInt(bs, 10, 64)
	if err != nil {
		return Interval{}, fmt.Errorf("%w: begin %q: %v", ErrBadInterval, bs, err)
	}
	e, err := strconv.ParseInt(es, 10, 64)
	if err != nil {
		return Interval{}, fmt.Errorf("%w: end %q: %v", ErrBadInterval, es, err)
	}
	if b < 0 || e < b || e > limit {
		return Interval{}, fmt.Errorf("%w: [%d,%d) not inside [0,%d)", ErrBadInterval, b, e, limit)
	}
	return Interval{Begin: b, End: e}, nil
}

// ParseOpen reads the query of open: begin and end (end is the file size,
// at most limit) and directIO (Go's strconv.ParseBool forms, required: a
// Longhorn receiver refuses an open without it). With directIO the size
// must be a multiple of 4096.
func ParseOpen(q url.Values, limit int64) (Interval, bool, error) {
	iv, err := ParseInterval(q, limit)
	if err != nil {
		return Interval{}, false, err
	}
	ds, ok := q["directIO"]
	if !ok || len(ds) == 0 {
		return Interval{}, false, fmt.Errorf("ssync: directIO does not exist in the queries %v", q)
	}
	direct, err := strconv.ParseBool(ds[0])
	if err != nil {
		return Interval{}, false, fmt.Errorf("ssync: directIO %q: %v", ds[0], err)
	}
	if direct && iv.End%directIOAlign != 0 {
		return Interval{}, false, fmt.Errorf("ssync: file size %d is not a multiple of %d, as directIO needs", iv.End, directIOAlign)
	}
	return iv, direct, nil
}

// DecodeOpenAnswer reads the body of a 200 answer to open: the bare JSON
// boolean saying whether the receiver's file existed.
func DecodeOpenAnswer(b []byte) (bool, error) {
	var existed bool
	if err := json.Unmarshal(b, &existed); err != nil {
		return false, fmt.Errorf("ssync: open answer %q is not a JSON boolean: %w", truncate(b, 64), err)
	}
	return existed, nil
}

// DecodeChecksumAnswer reads the body of a 200 answer to getChecksum: JSON
// null (no checksum) or a base64 string; a checksum must be 64 bytes
// (SHA-512).
func DecodeChecksumAnswer(b []byte) ([]byte, error) {
	var sum []byte
	if err := json.Unmarshal(b, &sum); err != nil {
		return nil, fmt.Errorf("ssync: checksum answer %q: %w", truncate(b, 64), err)
	}
	if sum != nil && len(sum) != 64 {
		return nil, fmt.Errorf("ssync: checksum answer of %d bytes, want 64 (SHA-512)", len(sum))
	}
	return sum, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// hostPort joins host and port for a URL.
func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

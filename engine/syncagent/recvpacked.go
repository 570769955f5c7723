package syncagent

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// The receiver's side of the packed extension (packed.go).

// handleExtentMap answers the file's data extents, or 500 when it has more
// than maxExtentMap.
func (r *Receiver) handleExtentMap(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	f, size := r.f, r.size
	r.mu.Unlock()
	if f == nil {
		httpErr(w, http.StatusInternalServerError, errors.New("ssync: file not open"))
		return
	}
	var exts []sparse.Extent
	tooMany := errors.New("too many extents")
	err := sparse.WalkData(f, 0, size, func(e sparse.Extent) error {
		if len(exts) == maxExtentMap {
			return tooMany
		}
		exts = append(exts, e)
		return nil
	})
	if errors.Is(err, tooMany) {
		err = fmt.Errorf("ssync: the file has more than %d extents", maxExtentMap)
	}
	if err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, formatExtents(0, exts))
}

// handleChecksums answers, for each DataRangesHeader range of the request
// (at most maxDataRanges, MaxWriteData bytes in all), the SHA-256 of the
// range when the file holds it as data throughout, else 32 zero bytes.
func (r *Receiver) handleChecksums(w http.ResponseWriter, req *http.Request) {
	f, iv := r.file(w, req)
	if f == nil {
		return
	}
	ranges, err := parseRanges(DataRangesHeader, req.Header.Get(DataRangesHeader), iv.Len(), maxDataRanges)
	if err == nil && extentsLen(ranges) > MaxWriteData {
		err = fmt.Errorf("ssync: getChecksums of %d bytes > %d", extentsLen(ranges), MaxWriteData)
	}
	if err != nil {
		httpErr(w, http.StatusBadRequest, err)
		return
	}
	allocated, err := sparse.DataExtents(f, iv.Begin, iv.End)
	if err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	out := make([]byte, len(ranges)*sumSize)
	var buf []byte
	for i, e := range ranges {
		abs := sparse.Extent{Offset: iv.Begin + e.Offset, Length: e.Length}
		if len(subtract([]sparse.Extent{abs}, allocated)) > 0 {
			continue // a hole in the range: zeroes, never equal
		}
		if int64(cap(buf)) < e.Length {
			bufpool.Put(buf)
			buf = bufpool.Get(int(e.Length))
		}
		b := buf[:e.Length]
		if n, err := f.ReadAt(b, abs.Offset); err != nil {
			if !errors.Is(err, io.EOF) {
				httpErr(w, http.StatusInternalServerError, err)
				return
			}
			clear(b[n:])
		}
		sum := sha256.Sum256(b)
		copy(out[i*sumSize:], sum[:])
	}
	bufpool.Put(buf)
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(out)
}

// packedRequest is a parsed writePacked: the interval, the ranges to punch
// and to write (relative to iv.Begin) and the bytes the sender skipped.
type packedRequest struct {
	iv            Interval
	holes, ranges []sparse.Extent
	// skipped and local: bytes of iv the sender found equal and wrote
	// into the file itself (local.go).
	skipped, local int64
}

// parsePacked reads a writePacked's headers for the interval iv: the hole
// and data ranges (each at most maxDataRanges, inside iv), data of at most
// MaxWriteData bytes in all, and SkippedHeader (optional, 0..iv.Len()).
func parsePacked(iv Interval, h http.Header) (packedRequest, error) {
	p := packedRequest{iv: iv}
	var err error
	if p.holes, err = parseRanges(HoleRangesHeader, h.Get(HoleRangesHeader), iv.Len(), maxDataRanges); err != nil {
		return p, err
	}
	if p.ranges, err = parseRanges(DataRangesHeader, h.Get(DataRangesHeader), iv.Len(), maxDataRanges); err != nil {
		return p, err
	}
	if n := extentsLen(p.ranges); n > MaxWriteData {
		return p, fmt.Errorf("ssync: writePacked of %d data bytes > %d", n, MaxWriteData)
	}
	if p.skipped, err = parseCount(h, SkippedHeader, iv.Len()); err != nil {
		return p, err
	}
	if p.local, err = parseCount(h, LocalBytesHeader, iv.Len()-p.skipped); err != nil {
		return p, err
	}
	return p, nil
}

// parseCount reads the optional decimal header name, 0 to limit bytes.
func parseCount(h http.Header, name string, limit int64) (int64, error) {
	v := h.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > limit {
		return 0, fmt.Errorf("ssync: %s %q: want 0 to %d", name, v, limit)
	}
	return n, nil
}

// handlePacked punches the HoleRangesHeader ranges and writes the body's
// bytes to the DataRangesHeader ranges, back to back (the body must be
// exactly their length).
func (r *Receiver) handlePacked(w http.ResponseWriter, req *http.Request) {
	f, iv := r.file(w, req)
	if f == nil {
		return
	}
	p, err := parsePacked(iv, req.Header)
	if err != nil {
		httpErr(w, http.StatusBadRequest, err)
		return
	}
	n := extentsLen(p.ranges)
	if req.ContentLength != n {
		httpErr(w, http.StatusBadRequest, fmt.Errorf("ssync: writePacked body of %d bytes, the ranges hold %d", req.ContentLength, n))
		return
	}
	buf := bufpool.Get(int(n))
	defer bufpool.Put(buf)
	if _, err := io.ReadFull(req.Body, buf); err != nil {
		httpErr(w, http.StatusInternalServerError, fmt.Errorf("ssync: body shorter than %d bytes: %w", n, err))
		return
	}
	r.mu.Lock()
	pace := r.pace
	r.mu.Unlock()
	if err := waitPace(req.Context(), pace, int(n+p.local)); err != nil {
		httpErr(w, http.StatusServiceUnavailable, fmt.Errorf("ssync: writePacked abandoned while paced: %w", err))
		return
	}
	if err := applyPacked(f, p, buf); err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	r.processed.Add(n + p.skipped + p.local)
}

// applyPacked punches p's holes and writes p's ranges from data (back to
// back), then starts the writeback of what it wrote (so a rebuild does
// not pile up dirty pages that then stall the disk and the volume's
// clients at close's fsync).
func applyPacked(f *os.File, p packedRequest, data []byte) error {
	for _, h := range p.holes {
		if err := sparse.PunchHole(f, p.iv.Begin+h.Offset, h.Length); err != nil {
			return err
		}
	}
	off := int64(0)
	for _, e := range p.ranges {
		if _, err := f.WriteAt(data[off:off+e.Length], p.iv.Begin+e.Offset); err != nil {
			return err
		}
		off += e.Length
	}
	if len(p.ranges) > 0 {
		first, last := p.ranges[0], p.ranges[len(p.ranges)-1]
		_ = unix.SyncFileRange(int(f.Fd()), p.iv.Begin+first.Offset, last.End()-first.Offset, unix.SYNC_FILE_RANGE_WRITE)
	}
	return nil
}

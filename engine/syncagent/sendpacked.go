package syncagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	gosync "sync"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// packedJob is one request of a packed transfer: a window of pieces to
// compare and write, or a batch of holes to punch.
type packedJob struct {
	pieces []piece
	holes  []sparse.Extent
}

// runPacked moves s.f (size bytes) with the packed extension (packed.go):
// with existed, the receiver's extent map first (all of the file when it
// cannot say), then the holes it must punch and the windows of data, by
// s.opts.Workers workers.
func (s *sender) runPacked(ctx context.Context, size int64, existed bool) error {
	if s.localFile != "" {
		if s.dst = openLocal(s.localFile, s.f.Name()); s.dst != nil {
			s.mirror = s.dst.Name()
			defer func() { s.dst.Close(); s.dst = nil }()
			// A local copy is CPU-bound (the CRC was a third of the
			// sender's CPU): the file is hashed after the transfer.
			s.crc = nil
		}
	}
	var dst []sparse.Extent
	if existed {
		var err error
		if s.dst != nil {
			dst, err = sparse.DataExtents(s.dst, 0, size)
		} else {
			dst, err = s.extentMap(ctx, size)
		}
		if err != nil {
			return err
		}
	}
	src, err := sparse.DataExtents(s.f, 0, size)
	if err != nil {
		return err
	}
	var jobs []packedJob
	for _, h := range holeBatches(subtract(dst, src)) {
		jobs = append(jobs, packedJob{holes: h})
	}
	for _, w := range packWindows(splitPieces(src, dst)) {
		jobs = append(jobs, packedJob{pieces: w})
	}
	return s.runJobs(ctx, jobs)
}

// runJobs runs jobs on s.opts.Workers workers and returns the first error.
func (s *sender) runJobs(ctx context.Context, jobs []packedJob) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan packedJob)
	var wg gosync.WaitGroup
	for i := 0; i < s.opts.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				if err := s.doPacked(ctx, j); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case next <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// extentMap asks the receiver for its file's data extents; a receiver that
// cannot list them (too fragmented) is taken as all data, so everything is
// compared and every source hole punched.
func (s *sender) extentMap(ctx context.Context, size int64) ([]sparse.Extent, error) {
	var raw []byte
	err := s.retry(ctx, func() error { return s.request(ctx, http.MethodGet, "extentMap", nil, nil, nil, &raw, 32<<20) })
	var he *httpError
	if errors.As(err, &he) {
		return []sparse.Extent{{Offset: 0, Length: size}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ssync extentMap: %w", err)
	}
	return parseRanges("extentMap", string(raw), size, maxExtentMap)
}

// doPacked runs one job: punches its holes, or reads its pieces, drops
// those the receiver holds equal, and writes the rest packed.
func (s *sender) doPacked(ctx context.Context, j packedJob) error {
	if len(j.holes) > 0 && s.dst != nil {
		for _, h := range j.holes {
			if err := sparse.PunchHole(s.dst, h.Offset, h.Length); err != nil {
				return err
			}
		}
		s.holes.Add(extentsLen(j.holes))
		return nil
	}
	if len(j.holes) > 0 {
		begin, end := j.holes[0].Offset, j.holes[len(j.holes)-1].End()
		hdr := http.Header{HoleRangesHeader: {formatExtents(begin, j.holes)}}
		if err := s.retry(ctx, func() error {
			return s.callWith(ctx, http.MethodPost, "writePacked", Interval{begin, end}.values(), hdr, []byte{}, nil)
		}); err != nil {
			return fmt.Errorf("ssync writePacked holes [%d,%d): %w", begin, end, err)
		}
		s.holes.Add(extentsLen(j.holes))
		return nil
	}
	exts := make([]sparse.Extent, len(j.pieces))
	for i, p := range j.pieces {
		exts[i] = p.Extent
	}
	n := extentsLen(exts)
	buf := bufpool.Get(int(n))
	defer bufpool.Put(buf)
	if err := readPacked(s.f, buf, exts); err != nil {
		return err
	}
	if s.crc != nil {
		off := int64(0)
		for _, e := range mergeAdjacent(exts) {
			s.crc.add(e.Offset, buf[off:off+e.Length])
			off += e.Length
		}
	}
	ps := j.pieces
	var keep []bool
	var err error
	if s.dst != nil {
		ps, keep, err = localDiff(s.dst, ps, buf)
	} else {
		keep, err = s.dropEqual(ctx, ps, buf)
	}
	if err != nil {
		return err
	}
	exts = exts[:0]
	off, w := int64(0), int64(0)
	for i, p := range ps {
		if keep[i] {
			copy(buf[w:], buf[off:off+p.Length])
			w += p.Length
			exts = append(exts, p.Extent)
		}
		off += p.Length
	}
	s.skipped.Add(n - w)
	win := Interval{j.pieces[0].Offset, j.pieces[len(j.pieces)-1].End()}
	return s.writePacked(ctx, win, mergeAdjacent(exts), buf[:w], n-w)
}

// writePacked sends the bytes data of exts (back to back, inside win) in
// one request, with the count of bytes of win skipped as equal (a request
// without data still tells the receiver's progress).
func (s *sender) writePacked(ctx context.Context, win Interval, exts []sparse.Extent, data []byte, skipped int64) error {
	if err := waitPace(ctx, s.pace, len(data)); err != nil {
		return err
	}
	begin, end := win.Begin, win.End
	hdr := http.Header{SkippedHeader: {strconv.FormatInt(skipped, 10)}}
	body := data
	if s.dst != nil {
		if err := writeLocal(s.dst, exts, data); err != nil {
			return err
		}
		hdr.Set(LocalBytesHeader, strconv.Itoa(len(data)))
		body = []byte{}
	} else if len(exts) > 0 {
		hdr.Set(DataRangesHeader, formatExtents(begin, exts))
	}
	if err := s.retry(ctx, func() error {
		return s.callWith(ctx, http.MethodPost, "writePacked", Interval{begin, end}.values(), hdr, body, nil)
	}); err != nil {
		return fmt.Errorf("ssync writePacked [%d,%d): %w", begin, end, err)
	}
	s.sent.Add(int64(len(data)))
	s.progress(int64(len(data)) + skipped)
	return nil
}

// readPacked reads exts of f back to back into buf (one pread per run of
// touching extents); bytes past the end of f read as zeroes.
func readPacked(f io.ReaderAt, buf []byte, exts []sparse.Extent) error {
	off := int64(0)
	for _, e := range mergeAdjacent(exts) {
		b := buf[off : off+e.Length]
		if n, err := f.ReadAt(b, e.Offset); err != nil {
			if !errors.Is(err, io.EOF) {
				return err
			}
			clear(b[n:])
		}
		off += e.Length
	}
	return nil
}

// dropEqual asks the receiver for the checksums of the compare pieces of
// ps (whose bytes are back to back in buf) and says which pieces to write:
// every piece but those whose SHA-256 the receiver returned equal.
func (s *sender) dropEqual(ctx context.Context, ps []piece, buf []byte) ([]bool, error) {
	keep := make([]bool, len(ps))
	var cmp []sparse.Extent
	var local [][sumSize]byte
	off := int64(0)
	for i, p := range ps {
		keep[i] = true
		if p.compare {
			cmp = append(cmp, p.Extent)
			local = append(local, sha256.Sum256(buf[off:off+p.Length]))
		}
		off += p.Length
	}
	if len(cmp) == 0 {
		return keep, nil
	}
	begin, end := cmp[0].Offset, cmp[len(cmp)-1].End()
	hdr := http.Header{DataRangesHeader: {formatExtents(begin, cmp)}}
	var raw []byte
	if err := s.retry(ctx, func() error {
		return s.callWith(ctx, http.MethodPost, "getChecksums", Interval{begin, end}.values(), hdr, []byte{}, &raw)
	}); err != nil {
		return nil, fmt.Errorf("ssync getChecksums [%d,%d): %w", begin, end, err)
	}
	if len(raw) != len(cmp)*sumSize {
		return nil, fmt.Errorf("ssync getChecksums [%d,%d): %d bytes for %d ranges, want %d", begin, end, len(raw), len(cmp), len(cmp)*sumSize)
	}
	k := 0
	for i, p := range ps {
		if p.compare {
			keep[i] = !bytes.Equal(raw[k*sumSize:(k+1)*sumSize], local[k][:])
			k++
		}
	}
	return keep, nil
}

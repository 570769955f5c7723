package syncagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// SendOptions tune SendFile. Zero values take the defaults.
type SendOptions struct {
	// FastSync skips the whole transfer when the receiver's recorded
	// checksum equals the source's and both are current (Longhorn's fast
	// replica rebuild); only for .img files.
	FastSync bool
	// DirectIO asks the receiver to write with O_DIRECT (Longhorn: every
	// file but .meta files); the file size must be a multiple of 4096.
	DirectIO bool
	// Timeout bounds each HTTP request (default DefaultTimeout).
	Timeout time.Duration
	// Workers is the number of concurrent requests (default DefaultWorkers).
	Workers int
	// Progress, when set, is called with the data bytes processed so far.
	Progress func(done int64)
	// BandwidthLimit caps the data the writeData requests carry at this
	// many bytes per second over the transfer (a token bucket of one
	// batch, shared by the workers, taken before each request; the zeroes
	// a coalesced request carries between its data ranges are not
	// written and do not count); 0 = no limit.
	BandwidthLimit int64
}

// SendStats counts what a transfer did, in bytes.
type SendStats struct {
	Sent    int64 // data bytes sent with writeData
	Skipped int64 // data bytes whose checksum already matched (or the whole file, fast path)
	Holes   int64 // bytes punched on the receiver
	// Unhashed: a snapshot disk file without a current record was copied
	// locally (local.go) without hashing it on the way, so neither side
	// recorded a checksum; the caller hashes both files afterwards
	// (Agent.hashLater), off the rebuild's critical path.
	Unhashed bool
	// Mirror is the receiver's file when a local copy wrote it (local.go):
	// after a transfer without error it holds the bytes of the file sent,
	// so the caller may record the sent file's checksum for it too
	// (Agent.hashLater).
	Mirror string
}

// Retry policy of the data requests (sparse-tools client): sendHole,
// writeData, getChecksum and getRecordedMetadata are tried up to
// retryAttempts times with exponential backoff from retryFirst to
// retryMax; open retries transport errors for openRetryFor. Variables so
// tests can shorten them.
var (
	retryAttempts = 6
	retryFirst    = 2 * time.Second
	retryMax      = 30 * time.Second
	openRetryFor  = 120 * time.Second
)

// SendFile sends the file at path to the ssync receiver at hostport
// (HOST:PORT) as sparse-tools' sender does (longhorn-engine-wire.md §5):
// the fast path first (FastSync, .img files), then open, the data and
// holes, and close with the source's recorded checksum, which the receiver
// records. It returns when close was answered; close's own result is
// ignored, as sparse-tools does.
func SendFile(ctx context.Context, path, hostport string, opts SendOptions) (SendStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return SendStats{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return SendStats{}, err
	}
	size := fi.Size()
	if opts.DirectIO && size%directIOAlign != 0 {
		return SendStats{}, fmt.Errorf("ssync: %s: size %d is not a multiple of %d, as directIO needs", path, size, directIOAlign)
	}
	s := newSender(f, hostport, opts)
	defer s.client.CloseIdleConnections()
	var rec RecordedMetadata
	if strings.HasSuffix(path, ".img") {
		rec, _, _ = ReadRecorded(path) // a missing or bad record only disables the fast path
	}
	if opts.FastSync && strings.HasSuffix(path, ".img") && s.remoteHasSame(ctx, path, &rec) {
		s.skipped.Add(size)
		s.progress(size)
		s.sendClose(rec)
		return s.stats(), nil
	}
	// A snapshot disk file without a current record is hashed from the
	// bytes it sends, and close carries the result (see hashWhileSending).
	ct0 := s.hashWhileSending(path, rec)
	defer func() { s.sendClose(rec) }()
	existed, err := s.open(ctx, size, opts.DirectIO)
	if err != nil {
		return SendStats{}, err
	}
	// A file the receiver did not have is all holes after open: only the
	// data is sent (half the requests for a fragmented file). Our receiver
	// offers data ranges for a file without data (new, or the empty
	// snapshot the rebuild target took itself): nothing to compare, and
	// nearby extents go in one request.
	if s.dataRanges {
		existed = false
	}
	s.coalesce = s.dataRanges && !noCoalesce
	if s.packed {
		err = s.runPacked(ctx, size, existed)
	} else {
		err = s.run(ctx, size, existed, existed)
	}
	if err != nil {
		return s.stats(), err
	}
	st := s.stats()
	if s.crc != nil {
		rec = recordSent(path, ct0, s.crc.sum(size), rec)
	} else if ct0 != "" {
		st.Unhashed = true // armed, then dropped by a local copy (runPacked)
		st.Mirror = s.mirror
	}
	return st, nil
}

// isSnapshotDisk reports whether path is a snapshot disk file
// (volume-snap-*.img), which does not change once taken.
func isSnapshotDisk(path string) bool {
	b := filepath.Base(path)
	return strings.HasPrefix(b, "volume-snap-") && strings.HasSuffix(b, ".img")
}

// isCurrent reports whether rec is a checksum recorded at path's present
// change time.
func isCurrent(path string, rec RecordedMetadata) bool {
	if rec.Method == "" || rec.Checksum == "" || rec.ChangeTime == "" {
		return false
	}
	ct, err := ChangeTime(path)
	return err == nil && ct == rec.ChangeTime
}

// hashRecord hashes the snapshot disk file at path (HashDisk: one
// sequential read, without the node's hash lock, as the rebuild reads the
// file anyway) and returns the new record; on failure rec unchanged.
func hashRecord(ctx context.Context, path string, rec RecordedMetadata) RecordedMetadata {
	if _, _, err := HashDisk(ctx, path, false); err != nil {
		return rec
	}
	if r, _, err := ReadRecorded(path); err == nil {
		return r
	}
	return rec
}

// hashWhileSending arms the sender to hash the file's data as it reads
// it, for a snapshot disk file without a current record, and returns the
// file's change time before the transfer. The receiver records the
// checksum close carries, so the next fast rebuild of that replica skips
// the file whole instead of comparing it range by range. A local copy
// drops the hash again (runPacked; SendStats.Unhashed): both agents hash
// their file after the transfer instead (Agent.hashLater).
func (s *sender) hashWhileSending(path string, rec RecordedMetadata) string {
	if !isSnapshotDisk(path) || isCurrent(path, rec) {
		return ""
	}
	ct, err := ChangeTime(path)
	if err != nil {
		return ""
	}
	s.crc = &crcPieces{}
	return ct
}

// recordSent records sum, the CRC of the file sent, as its checksum when
// the file did not change during the transfer (its change time is still
// ct0), and returns the new record; otherwise rec.
func recordSent(path, ct0 string, sum uint64, rec RecordedMetadata) RecordedMetadata {
	if ct, err := ChangeTime(path); err != nil || ct != ct0 {
		return rec
	}
	m := RecordedMetadata{Method: HashMethod, Checksum: fmt.Sprintf("%016x", sum), ChangeTime: ct0,
		LastHashedAt: time.Now().UTC().Format(time.RFC3339)}
	if err := WriteRecorded(path, m); err != nil {
		return rec
	}
	return m
}

// remoteHasSame is the fast path: the receiver's recorded checksum is the
// local one, which is current. A snapshot disk file without a current
// local record is hashed first when the receiver has a record (the file
// may then be skipped whole); *rec is updated.
func (s *sender) remoteHasSame(ctx context.Context, path string, rec *RecordedMetadata) bool {
	var remote RecordedMetadata
	if err := s.retry(ctx, func() error {
		return s.call(ctx, http.MethodGet, "getRecordedMetadata", nil, nil, &remote)
	}); err != nil || remote.Checksum == "" {
		return false
	}
	if !isCurrent(path, *rec) && isSnapshotDisk(path) {
		*rec = hashRecord(ctx, path, *rec)
	}
	return isCurrent(path, *rec) && remote.Checksum == rec.Checksum
}

// SendLayers sends the flattened content of a chain of layer files (oldest
// first, each a sparse file of at most size bytes) to the ssync receiver at
// hostport (VolumeExport): the receiver's file is sized to size and each
// layer's data extents are written over the previous layers', one layer at
// a time; a file that existed on the receiver is first punched whole.
func SendLayers(ctx context.Context, layers []string, size int64, hostport string, opts SendOptions) (SendStats, error) {
	s := newSender(nil, hostport, opts)
	defer s.client.CloseIdleConnections()
	defer s.sendClose(RecordedMetadata{})
	existed, err := s.open(ctx, size, opts.DirectIO)
	if err != nil {
		return SendStats{}, err
	}
	if existed && size > 0 {
		if err := s.do(ctx, job{iv: Interval{0, size}, hole: true}, false); err != nil {
			return SendStats{}, err
		}
	}
	for _, path := range layers {
		f, err := os.Open(path)
		if err != nil {
			return s.stats(), err
		}
		s.f = f
		err = s.run(ctx, size, false, false)
		f.Close()
		if err != nil {
			return s.stats(), err
		}
	}
	return s.stats(), nil
}

func newSender(f *os.File, hostport string, opts SendOptions) *sender {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	return &sender{
		f: f, base: "http://" + hostport + ssyncPrefix, opts: opts, pace: newPacer(opts.BandwidthLimit),
		client: &http.Client{Timeout: opts.Timeout, Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: opts.Timeout}).DialContext,
			ResponseHeaderTimeout: opts.Timeout,
			IdleConnTimeout:       120 * time.Second,
			MaxIdleConnsPerHost:   opts.Workers,
			DisableCompression:    true,
		}},
	}
}

type sender struct {
	f      *os.File
	base   string
	opts   SendOptions
	client *http.Client

	// dataRanges: the receiver writes only the DataRangesHeader ranges of
	// a writeData body (its open answer said so); coalesce: the data walk
	// groups nearby extents into one writeData each.
	dataRanges, coalesce bool
	// packed: the receiver offers the packed extension (packed.go);
	// localFile is its LocalFileHeader, and dst the receiver's file when
	// this sender writes it itself (local.go).
	packed    bool
	localFile string
	dst       *os.File
	// mirror is the path of dst once a local copy opened it.
	mirror string
	// crc, when set, hashes every data range read (hashWhileSending).
	crc *crcPieces
	// pace, when set, paces the writeData bodies (opts.BandwidthLimit).
	pace *rate.Limiter

	sent, skipped, holes, done atomic.Int64
}

func (s *sender) stats() SendStats {
	return SendStats{Sent: s.sent.Load(), Skipped: s.skipped.Load(), Holes: s.holes.Load()}
}

// open asks the receiver to open the file with size bytes and returns
// whether it existed there. Transport errors are retried for openRetryFor;
// an HTTP error is final.
func (s *sender) open(ctx context.Context, size int64, direct bool) (bool, error) {
	q := Interval{0, size}.values()
	q.Set("directIO", fmt.Sprint(direct))
	deadline := time.Now().Add(openRetryFor)
	for try := 0; ; try++ {
		var ans answer
		err := s.call(ctx, http.MethodGet, "open", q, nil, &ans)
		if err == nil {
			ext := ans.header.Get(ExtensionsHeader)
			s.dataRanges = hasToken(ext, extDataRanges)
			s.packed = hasToken(ext, extPacked) && !noPacked
			if s.packed && hasToken(ext, extLocal) {
				s.localFile = ans.header.Get(LocalFileHeader)
			}
			return DecodeOpenAnswer(ans.body)
		}
		var he *httpError
		if errors.As(err, &he) || ctx.Err() != nil || time.Now().After(deadline) {
			return false, fmt.Errorf("ssync open %s: %w", s.base, err)
		}
		if try > 0 {
			if err := sleepCtx(ctx, time.Second); err != nil {
				return false, err
			}
		}
	}
}

// sendClose closes the transfer with the source's recorded checksum (empty
// values when there is none); its result is ignored.
func (s *sender) sendClose(rec RecordedMetadata) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	q := url.Values{"checksum": {rec.Checksum}, "checksumMethod": {rec.Method}}
	_ = s.call(ctx, http.MethodPost, "close", q, nil, nil)
}

type job struct {
	iv   Interval
	hole bool
	// data is the bytes of iv that are data (iv.Len() unless coalesced).
	data int64
	// exts are the data extents in iv when coalesced (else iv is one);
	// the bytes between them are sent as zeroes and named in
	// DataRangesHeader, so the receiver leaves them unwritten.
	exts []sparse.Extent
}

// coalesceGap is the largest hole the data walk sends as zeroes to join
// two extents in one request (s.coalesce): a request costs about as much
// as moving this many more bytes over the network.
const coalesceGap = 256 << 10

// noCoalesce turns coalescing off, noPacked the packed extension (tests
// of the older paths).
var noCoalesce, noPacked bool

// hasToken reports whether the comma-separated list v holds tok.
func hasToken(v, tok string) bool {
	for _, t := range strings.Split(v, ",") {
		if strings.TrimSpace(t) == tok {
			return true
		}
	}
	return false
}

// run walks s.f up to size and feeds data batches (and, with holes, the
// holes between them) to the workers; it returns when all are done. With
// existed the receiver's checksum of each batch is asked for first.
func (s *sender) run(ctx context.Context, size int64, holes, existed bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job, s.opts.Workers*2)
	var wg gosync.WaitGroup
	var firstErr error
	var errOnce gosync.Once
	for i := 0; i < s.opts.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := s.do(ctx, j, existed); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
	walkErr := s.walk(ctx, jobs, size, holes)
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return walkErr
}

func (s *sender) walk(ctx context.Context, jobs chan<- job, size int64, holes bool) error {
	pos := int64(0)
	var win job // the coalesced window being built (s.coalesce); empty while win.data == 0
	err := sparse.WalkData(s.f, 0, size, func(e sparse.Extent) error {
		if holes && e.Offset > pos {
			if err := feed(ctx, jobs, job{iv: Interval{pos, e.Offset}, hole: true}); err != nil {
				return err
			}
		}
		pos = e.End()
		if s.coalesce {
			return coalesceExtent(ctx, jobs, e, &win)
		}
		for b := e.Offset; b < e.End(); b += BatchSize {
			n := min(BatchSize, e.End()-b)
			if err := feed(ctx, jobs, job{iv: Interval{b, b + n}, data: n}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && win.data > 0 {
		err = feed(ctx, jobs, win)
	}
	if err == nil && holes && pos < size {
		err = feed(ctx, jobs, job{iv: Interval{pos, size}, hole: true})
	}
	return err
}

// coalesceExtent adds extent e to the window *win, first feeding the window
// when e is too far from it or would make it longer than BatchSize (then e,
// or its rest, starts a new one).
func coalesceExtent(ctx context.Context, jobs chan<- job, e sparse.Extent, win *job) error {
	for b := e.Offset; b < e.End(); {
		n := min(BatchSize, e.End()-b)
		if win.data > 0 && (b-win.iv.End > coalesceGap || b+n-win.iv.Begin > BatchSize || len(win.exts) == maxDataRanges) {
			if err := feed(ctx, jobs, *win); err != nil {
				return err
			}
			*win = job{}
		}
		if win.data == 0 {
			win.iv.Begin = b
		}
		n = min(n, win.iv.Begin+BatchSize-b)
		win.iv.End, win.data = b+n, win.data+n
		win.exts = append(win.exts, sparse.Extent{Offset: b, Length: n})
		b += n
	}
	return nil
}

func feed(ctx context.Context, jobs chan<- job, j job) error {
	select {
	case jobs <- j:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *sender) do(ctx context.Context, j job, existed bool) error {
	if j.hole {
		if err := s.retry(ctx, func() error { return s.call(ctx, http.MethodPost, "sendHole", j.iv.values(), nil, nil) }); err != nil {
			return fmt.Errorf("ssync sendHole [%d,%d): %w", j.iv.Begin, j.iv.End, err)
		}
		s.holes.Add(j.iv.Len())
		return nil
	}
	buf := bufpool.Get(int(j.iv.Len()))
	defer bufpool.Put(buf)
	if n, err := s.f.ReadAt(buf, j.iv.Begin); err != nil {
		if !errors.Is(err, io.EOF) {
			return err
		}
		clear(buf[n:])
	}
	if s.crc != nil {
		s.hashJob(j, buf)
	}
	if existed {
		same, err := s.sameChecksum(ctx, j.iv, buf)
		if err != nil {
			return err
		}
		if same {
			s.skipped.Add(j.data)
			s.progress(j.data)
			return nil
		}
	}
	if err := waitPace(ctx, s.pace, int(j.data)); err != nil {
		return err
	}
	var hdr http.Header
	if len(j.exts) > 0 {
		hdr = http.Header{DataRangesHeader: {formatDataRanges(j.iv, j.exts)}}
	}
	if err := s.retry(ctx, func() error {
		return s.callWith(ctx, http.MethodPost, "writeData", j.iv.values(), hdr, buf, nil)
	}); err != nil {
		return fmt.Errorf("ssync writeData [%d,%d): %w", j.iv.Begin, j.iv.End, err)
	}
	s.sent.Add(j.data)
	s.progress(j.data)
	return nil
}

// hashJob adds the data of j (read into buf) to s.crc.
func (s *sender) hashJob(j job, buf []byte) {
	if len(j.exts) == 0 {
		s.crc.add(j.iv.Begin, buf)
		return
	}
	for _, e := range j.exts {
		o := e.Offset - j.iv.Begin
		s.crc.add(e.Offset, buf[o:o+e.Length])
	}
}

func (s *sender) progress(n int64) {
	d := s.done.Add(n)
	if s.opts.Progress != nil {
		s.opts.Progress(d)
	}
}

// sameChecksum asks the receiver for the checksum of iv while hashing the
// local bytes, and compares.
func (s *sender) sameChecksum(ctx context.Context, iv Interval, data []byte) (bool, error) {
	local := make(chan []byte, 1)
	go func() { local <- sparse.SumBytes(data) }()
	var raw []byte
	err := s.retry(ctx, func() error { return s.call(ctx, http.MethodGet, "getChecksum", iv.values(), nil, &raw) })
	sum := <-local
	if err != nil {
		return false, fmt.Errorf("ssync getChecksum [%d,%d): %w", iv.Begin, iv.End, err)
	}
	remote, err := DecodeChecksumAnswer(raw)
	if err != nil {
		return false, err
	}
	return remote != nil && bytes.Equal(sum, remote), nil
}

// httpError is a non-200 answer.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.msg) }

// retryable: transport errors, 5xx and 429; not other 3xx/4xx (sparse-tools).
func retryable(err error) bool {
	var he *httpError
	if errors.As(err, &he) {
		return he.code == http.StatusTooManyRequests || he.code >= 500
	}
	return !errors.Is(err, context.Canceled)
}

// retry runs fn up to retryAttempts times with exponential backoff.
func (s *sender) retry(ctx context.Context, fn func() error) error {
	wait := retryFirst
	for try := 1; ; try++ {
		err := fn()
		if err == nil || try >= retryAttempts || !retryable(err) || ctx.Err() != nil {
			return err
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
		wait = min(wait*2, retryMax)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// answer is a 200 answer's raw body and header, for call's out.
type answer struct {
	body   []byte
	header http.Header
}

// call performs one ssync request with the query q (keys sorted, as Go's
// url.Values.Encode writes them); out, when set, receives the raw body of a
// 200 answer (*[]byte), body and header (*answer) or the body's JSON
// decoding (anything else).
func (s *sender) call(ctx context.Context, method, op string, q url.Values, body []byte, out any) error {
	return s.callWith(ctx, method, op, q, nil, body, out)
}

// callWith is call with extra request headers hdr.
func (s *sender) callWith(ctx context.Context, method, op string, q url.Values, hdr http.Header, body []byte, out any) error {
	return s.request(ctx, method, op, q, hdr, body, out, 1<<20)
}

// request is callWith reading at most limit bytes of the answer.
func (s *sender) request(ctx context.Context, method, op string, q url.Values, hdr http.Header, body []byte, out any, limit int64) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	u := s.base + op
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &httpError{code: resp.StatusCode, msg: string(bytes.TrimSpace(b))}
	}
	switch o := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*o = b
		return nil
	case *answer:
		o.body, o.header = b, resp.Header
		return nil
	default:
		return json.Unmarshal(b, out)
	}
}

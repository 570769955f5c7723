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
	"os"
	"strconv"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// SendOptions tune SendFile. Zero values take the defaults.
type SendOptions struct {
	// FastSync asks the receiver for a checksum of each batch and skips
	// batches that already match.
	FastSync bool
	// Timeout bounds each HTTP request (default DefaultTimeout).
	Timeout time.Duration
	// Workers is the number of concurrent requests (default DefaultWorkers).
	Workers int
	// Progress, when set, is called with the data bytes processed so far.
	Progress func(done int64)
}

// SendStats counts what a transfer did, in bytes.
type SendStats struct {
	Sent    int64 // data bytes sent with writeData
	Skipped int64 // data bytes whose checksum already matched
	Holes   int64 // bytes punched on the receiver
}

// SendFile sends the file at path to the ssync receiver at hostport (HOST:PORT)
// and closes the receiver. It returns when the receiver acknowledged close.
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
	s := newSender(f, hostport, opts)
	defer s.client.CloseIdleConnections()
	size := fi.Size()
	if err := s.call(ctx, http.MethodGet, "open", Interval{0, size}, nil, nil); err != nil {
		return SendStats{}, fmt.Errorf("ssync open %s: %w", hostport, err)
	}
	if err := s.run(ctx, size, true); err != nil {
		return s.stats(), err
	}
	if err := s.call(ctx, http.MethodPost, "close", Interval{}, nil, nil); err != nil {
		return s.stats(), fmt.Errorf("ssync close %s: %w", hostport, err)
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
		f: f, base: "http://" + hostport + ssyncPrefix, opts: opts,
		client: &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: opts.Timeout}).DialContext,
			MaxIdleConnsPerHost: opts.Workers,
			DisableCompression:  true,
		}},
	}
}

// SendLayers sends the flattened content of a chain of layer files (oldest
// first, each a sparse file of at most size bytes) to the ssync receiver at
// hostport: the receiver's file is sized to size and each layer's data
// extents are written over the previous layers', one layer at a time. The
// receiver's file must be new (holes are not sent).
func SendLayers(ctx context.Context, layers []string, size int64, hostport string, opts SendOptions) (SendStats, error) {
	s := newSender(nil, hostport, opts)
	defer s.client.CloseIdleConnections()
	if err := s.call(ctx, http.MethodGet, "open", Interval{0, size}, nil, nil); err != nil {
		return SendStats{}, fmt.Errorf("ssync open %s: %w", hostport, err)
	}
	for _, path := range layers {
		f, err := os.Open(path)
		if err != nil {
			return s.stats(), err
		}
		s.f = f
		err = s.run(ctx, size, false)
		f.Close()
		if err != nil {
			return s.stats(), err
		}
	}
	if err := s.call(ctx, http.MethodPost, "close", Interval{}, nil, nil); err != nil {
		return s.stats(), fmt.Errorf("ssync close %s: %w", hostport, err)
	}
	return s.stats(), nil
}

type sender struct {
	f      *os.File
	base   string
	opts   SendOptions
	client *http.Client

	sent, skipped, holes, done atomic.Int64
}

func (s *sender) stats() SendStats {
	return SendStats{Sent: s.sent.Load(), Skipped: s.skipped.Load(), Holes: s.holes.Load()}
}

type job struct {
	iv   Interval
	hole bool
}

// run walks s.f up to size and feeds data batches (and, with holes, the
// holes between them) to the workers; it returns when all are done.
func (s *sender) run(ctx context.Context, size int64, holes bool) error {
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
				if err := s.do(ctx, j); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
	pos := int64(0)
	walkErr := sparse.WalkData(s.f, 0, size, func(e sparse.Extent) error {
		if holes && e.Offset > pos {
			if err := feed(ctx, jobs, job{iv: Interval{pos, e.Offset}, hole: true}); err != nil {
				return err
			}
		}
		for b := e.Offset; b < e.End(); b += BatchSize {
			if err := feed(ctx, jobs, job{iv: Interval{b, min(b+BatchSize, e.End())}}); err != nil {
				return err
			}
		}
		pos = e.End()
		return nil
	})
	if walkErr == nil && holes && pos < size {
		walkErr = feed(ctx, jobs, job{iv: Interval{pos, size}, hole: true})
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return walkErr
}

func feed(ctx context.Context, jobs chan<- job, j job) error {
	select {
	case jobs <- j:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *sender) do(ctx context.Context, j job) error {
	if j.hole {
		if err := s.call(ctx, http.MethodPost, "sendHole", j.iv, nil, nil); err != nil {
			return fmt.Errorf("ssync sendHole [%d,%d): %w", j.iv.Begin, j.iv.End, err)
		}
		s.holes.Add(j.iv.Len())
		return nil
	}
	if s.opts.FastSync {
		same, err := s.sameChecksum(ctx, j.iv)
		if err != nil {
			return err
		}
		if same {
			s.skipped.Add(j.iv.Len())
			s.progress(j.iv.Len())
			return nil
		}
	}
	buf := bufpool.Get(int(j.iv.Len()))
	defer bufpool.Put(buf)
	if n, err := s.f.ReadAt(buf, j.iv.Begin); err != nil {
		if !errors.Is(err, io.EOF) {
			return err
		}
		clear(buf[n:])
	}
	if err := s.call(ctx, http.MethodPost, "writeData", j.iv, buf, nil); err != nil {
		return fmt.Errorf("ssync writeData [%d,%d): %w", j.iv.Begin, j.iv.End, err)
	}
	s.sent.Add(j.iv.Len())
	s.progress(j.iv.Len())
	return nil
}

func (s *sender) progress(n int64) {
	d := s.done.Add(n)
	if s.opts.Progress != nil {
		s.opts.Progress(d)
	}
}

func (s *sender) sameChecksum(ctx context.Context, iv Interval) (bool, error) {
	var remote []byte
	if err := s.call(ctx, http.MethodGet, "getChecksum", iv, nil, &remote); err != nil {
		return false, fmt.Errorf("ssync getChecksum [%d,%d): %w", iv.Begin, iv.End, err)
	}
	if len(remote) == 0 {
		return false, nil
	}
	local, err := sparse.Checksum(s.f, iv.Begin, iv.Len())
	if err != nil {
		return false, err
	}
	return bytes.Equal(local, remote), nil
}

// call performs one ssync request; out, when set, receives the JSON answer.
func (s *sender) call(ctx context.Context, method, op string, iv Interval, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	u := s.base + op
	if op != "close" {
		u += "?" + iv.query()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	if out != nil {
		return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return nil
}

// hostPort joins host and port for a URL.
func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// Package sync moves replica files between replica processes for rebuild, and
// serves a replica's SyncAgentService (rebuild file sync, purge).
//
// The file transfer is sparse-tools' ssync HTTP protocol (longhorn/sparse-tools
// sparse/rest): the receiving replica opens a one-shot HTTP server for one file
// on a transfer port, and the sender walks its file's data extents and calls
//
//	GET  /v1-ssync/open?begin=0&end=SIZE       create/open the file, set its size
//	POST /v1-ssync/sendHole?begin=B&end=E      punch [B,E) (a hole in the source)
//	GET  /v1-ssync/getChecksum?begin=B&end=E   JSON SHA-512 of [B,E), null unless fully allocated
//	POST /v1-ssync/writeData?begin=B&end=E     body = the E-B bytes of [B,E)
//	POST /v1-ssync/close                       fsync, close, stop the server
//
// Only data extents are sent, in batches of at most 2 MiB by 4 workers; with
// fast sync a batch is skipped when the receiver's checksum equals the
// sender's. Offsets are bytes.
package syncagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/longhorn-go/longhorn/engine/bufpool"
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
)

// ErrBadInterval is a begin/end query that is missing, not a number, or not
// inside the file.
var ErrBadInterval = errors.New("ssync: bad interval")

// Interval is a byte range [Begin, End).
type Interval struct{ Begin, End int64 }

// Len is End-Begin.
func (iv Interval) Len() int64 { return iv.End - iv.Begin }

func (iv Interval) query() string {
	return "begin=" + strconv.FormatInt(iv.Begin, 10) + "&end=" + strconv.FormatInt(iv.End, 10)
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

// Receiver is the receiving end of one file transfer: an HTTP server on its
// own listener writing into one file. It stops after close, on Close, or when
// no request came for the idle timeout.
type Receiver struct {
	path string
	srv  *http.Server
	ln   net.Listener

	mu      gosync.Mutex
	f       *os.File
	size    int64
	checked map[int64]int64 // ranges whose checksum was asked, counted once

	processed atomic.Int64
	done      chan struct{}
	doneOnce  gosync.Once
	err       error
	idle      *time.Timer
}

// maxFileSize bounds the size an open request may set (16 TiB, above any
// Longhorn volume).
const maxFileSize = 16 << 40

// NewReceiver starts serving on ln, writing to path (created 0644 if
// missing). idle stops an abandoned receiver (0 = 2 minutes).
func NewReceiver(ln net.Listener, path string, idle time.Duration) *Receiver {
	if idle <= 0 {
		idle = 2 * time.Minute
	}
	r := &Receiver{path: path, ln: ln, done: make(chan struct{}), checked: map[int64]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ssyncPrefix+"open", r.handleOpen)
	mux.HandleFunc("POST "+ssyncPrefix+"sendHole", r.handleHole)
	mux.HandleFunc("GET "+ssyncPrefix+"getChecksum", r.handleChecksum)
	mux.HandleFunc("POST "+ssyncPrefix+"writeData", r.handleWrite)
	mux.HandleFunc("POST "+ssyncPrefix+"close", r.handleClose)
	r.srv = &http.Server{Handler: r.touch(mux), ReadHeaderTimeout: 30 * time.Second}
	r.idle = time.AfterFunc(idle, func() { r.finish(fmt.Errorf("ssync receiver for %s: idle for %v", path, idle)) })
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.finish(err)
		}
	}()
	return r
}

func (r *Receiver) touch(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.idle.Reset(2 * time.Minute)
		h.ServeHTTP(w, req)
	})
}

// Port is the TCP port the receiver listens on.
func (r *Receiver) Port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// Done is closed when the receiver stopped; Err says whether it completed.
func (r *Receiver) Done() <-chan struct{} { return r.done }

// Err is nil after a completed transfer (close received), otherwise why the
// receiver stopped.
func (r *Receiver) Err() error {
	<-r.done
	return r.err
}

// Processed is the number of data bytes written or found equal so far.
func (r *Receiver) Processed() int64 { return r.processed.Load() }

// Close stops the receiver without completing the transfer.
func (r *Receiver) Close() { r.finish(errors.New("ssync receiver closed")) }

func (r *Receiver) finish(err error) {
	r.doneOnce.Do(func() {
		r.idle.Stop()
		r.mu.Lock()
		if r.f != nil {
			if cerr := r.f.Close(); err == nil && cerr != nil {
				err = cerr
			}
			r.f = nil
		}
		r.mu.Unlock()
		r.err = err
		close(r.done)
		go r.srv.Close()
	})
}

func httpErr(w http.ResponseWriter, code int, err error) {
	http.Error(w, err.Error(), code)
}

func (r *Receiver) handleOpen(w http.ResponseWriter, req *http.Request) {
	iv, err := ParseInterval(req.URL.Query(), maxFileSize)
	if err != nil {
		httpErr(w, http.StatusBadRequest, err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		f, err := os.OpenFile(r.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			httpErr(w, http.StatusInternalServerError, err)
			return
		}
		r.f = f
	}
	if err := r.f.Truncate(iv.End); err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	r.size = iv.End
}

// file returns the open file and the interval of the request, or writes the
// error response and returns nil.
func (r *Receiver) file(w http.ResponseWriter, req *http.Request) (*os.File, Interval) {
	r.mu.Lock()
	f, size := r.f, r.size
	r.mu.Unlock()
	if f == nil {
		httpErr(w, http.StatusConflict, errors.New("ssync: file not open"))
		return nil, Interval{}
	}
	iv, err := ParseInterval(req.URL.Query(), size)
	if err != nil {
		httpErr(w, http.StatusBadRequest, err)
		return nil, Interval{}
	}
	return f, iv
}

func (r *Receiver) handleHole(w http.ResponseWriter, req *http.Request) {
	f, iv := r.file(w, req)
	if f == nil {
		return
	}
	if err := sparse.PunchHole(f, iv.Begin, iv.Len()); err != nil {
		httpErr(w, http.StatusInternalServerError, err)
	}
}

func (r *Receiver) handleChecksum(w http.ResponseWriter, req *http.Request) {
	f, iv := r.file(w, req)
	if f == nil {
		return
	}
	var sum []byte
	if iv.Len() > 0 && iv.Len() <= MaxWriteData {
		allocated, err := sparse.DataBytes(f, iv.Begin, iv.End)
		if err != nil {
			httpErr(w, http.StatusInternalServerError, err)
			return
		}
		if allocated == iv.Len() {
			if sum, err = sparse.Checksum(f, iv.Begin, iv.Len()); err != nil {
				httpErr(w, http.StatusInternalServerError, err)
				return
			}
			r.mu.Lock()
			if _, seen := r.checked[iv.Begin]; !seen {
				r.checked[iv.Begin] = iv.Len()
				r.processed.Add(iv.Len())
			}
			r.mu.Unlock()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(sum)
}

func (r *Receiver) handleWrite(w http.ResponseWriter, req *http.Request) {
	f, iv := r.file(w, req)
	if f == nil {
		return
	}
	if iv.Len() > MaxWriteData {
		httpErr(w, http.StatusRequestEntityTooLarge, fmt.Errorf("ssync: writeData of %d bytes > %d", iv.Len(), MaxWriteData))
		return
	}
	buf := bufpool.Get(int(iv.Len()))
	defer bufpool.Put(buf)
	if _, err := io.ReadFull(req.Body, buf); err != nil {
		httpErr(w, http.StatusBadRequest, fmt.Errorf("ssync: body shorter than %d bytes: %w", iv.Len(), err))
		return
	}
	if _, err := f.WriteAt(buf, iv.Begin); err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	r.mu.Lock()
	_, seen := r.checked[iv.Begin]
	r.mu.Unlock()
	if !seen {
		r.processed.Add(iv.Len())
	}
}

func (r *Receiver) handleClose(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	f := r.f
	r.mu.Unlock()
	var err error
	if f != nil {
		err = f.Sync()
	}
	if err != nil {
		httpErr(w, http.StatusInternalServerError, err)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	r.finish(err)
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func rename(from, to string) error { return os.Rename(from, to) }

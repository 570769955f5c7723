package syncagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/time/rate"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// Receiver timeouts (sparse-tools rest/server.go): the HTTP server's idle
// timeout, and how long a receiver waits with no request in flight before
// it gives up.
const (
	receiverIdleConn = 240 * time.Second
	receiverIdle     = 300 * time.Second
)

// Receiver is the receiving end of one file transfer: an HTTP server on its
// own listener writing into one file. It stops after close, on Close, or
// when no request was in flight for the idle time.
type Receiver struct {
	path string
	srv  *http.Server
	ln   net.Listener
	// existed: the file existed when the receiver started (the open answer).
	existed bool
	idleFor time.Duration
	// empty: the file held no data after open (new, or all holes), so
	// writeData may leave the bytes outside its DataRangesHeader unwritten.
	empty bool

	mu      gosync.Mutex
	f       *os.File // buffered
	df      *os.File // O_DIRECT, when the sender asked for directIO and the file system allows it
	size    int64
	checked map[int64]int64 // ranges whose checksum was asked, counted once
	pace    *rate.Limiter   // SetPace
	active  int
	idle    *time.Timer

	processed atomic.Int64
	done      chan struct{}
	doneOnce  gosync.Once
	err       error
}

// maxFileSize bounds the size an open request may set (16 TiB, above any
// Longhorn volume).
const maxFileSize = 16 << 40

// NewReceiver starts serving on ln, writing to path (created 0644 if
// missing). idle stops an abandoned receiver (0 = 300 s, sparse-tools').
func NewReceiver(ln net.Listener, path string, idle time.Duration) *Receiver {
	if idle <= 0 {
		idle = receiverIdle
	}
	_, statErr := os.Stat(path)
	r := &Receiver{path: path, ln: ln, existed: statErr == nil, idleFor: idle, done: make(chan struct{}),
		checked: map[int64]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ssyncPrefix+"open", r.handleOpen)
	mux.HandleFunc("POST "+ssyncPrefix+"sendHole", r.handleHole)
	mux.HandleFunc("GET "+ssyncPrefix+"getChecksum", r.handleChecksum)
	mux.HandleFunc("GET "+ssyncPrefix+"getRecordedMetadata", r.handleRecorded)
	mux.HandleFunc("POST "+ssyncPrefix+"writeData", r.handleWrite)
	mux.HandleFunc("POST "+ssyncPrefix+"close", r.handleClose)
	mux.HandleFunc("GET "+ssyncPrefix+"extentMap", r.handleExtentMap)
	mux.HandleFunc("POST "+ssyncPrefix+"getChecksums", r.handleChecksums)
	mux.HandleFunc("POST "+ssyncPrefix+"writePacked", r.handlePacked)
	r.srv = &http.Server{Handler: r.track(mux), ReadHeaderTimeout: 30 * time.Second, IdleTimeout: receiverIdleConn}
	r.idle = time.AfterFunc(idle, r.expire)
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.finish(err)
		}
	}()
	return r
}

func (r *Receiver) expire() {
	r.finish(fmt.Errorf("ssync receiver for %s: no request for %v", r.path, r.idleFor))
}

// track counts requests in flight; the idle timer runs only while none is.
func (r *Receiver) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.active++
		r.idle.Stop()
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.active--
			if r.active == 0 {
				r.idle.Reset(r.idleFor)
			}
			r.mu.Unlock()
		}()
		h.ServeHTTP(w, req)
	})
}

// SetPace makes every later writeData wait for its body's bytes from l, a
// token bucket the receivers of one rebuild share (nil: no limit), so that
// the rebuild's writes stay within its bandwidth limit however many
// sources send at once.
func (r *Receiver) SetPace(l *rate.Limiter) {
	r.mu.Lock()
	r.pace = l
	r.mu.Unlock()
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
		r.mu.Lock()
		r.idle.Stop()
		if cerr := r.closeFilesLocked(); err == nil && cerr != nil {
			err = cerr
		}
		r.mu.Unlock()
		r.err = err
		close(r.done)
		go r.srv.Close()
	})
}

func (r *Receiver) closeFilesLocked() error {
	var err error
	for _, f := range []*os.File{r.df, r.f} {
		if f != nil {
			err = errors.Join(err, f.Close())
		}
	}
	r.f, r.df = nil, nil
	return err
}

// httpErr answers as sparse-tools does: 500 (or code), text/plain, the
// error text and a newline.
func httpErr(w http.ResponseWriter, code int, err error) {
	http.Error(w, err.Error(), code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (r *Receiver) handleOpen(w http.ResponseWriter, req *http.Request) {
	iv, direct, err := ParseOpen(req.URL.Query(), maxFileSize)
	if err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.openLocked(direct); err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	if err := r.f.Truncate(iv.End); err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	r.size = iv.End
	r.empty = !r.existed || !hasData(r.f, iv.End)
	ext := extPacked
	if r.empty {
		ext = extDataRanges + "," + extPacked
	}
	if v := localFileValue(r.f, r.path); v != "" {
		ext += "," + extLocal
		w.Header().Set(LocalFileHeader, v)
	}
	w.Header().Set(ExtensionsHeader, ext)
	writeJSON(w, r.existed)
}

// hasData reports whether f holds a data extent below size (true when
// that cannot be told).
func hasData(f *os.File, size int64) bool {
	found := errors.New("data")
	err := sparse.WalkData(f, 0, size, func(sparse.Extent) error { return found })
	return err != nil
}

// openLocked opens the file (once); with direct also an O_DIRECT
// descriptor, used for aligned writes, when the file system takes O_DIRECT.
func (r *Receiver) openLocked(direct bool) error {
	if r.f == nil {
		f, err := os.OpenFile(r.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		r.f = f
	}
	if direct && r.df == nil {
		df, err := os.OpenFile(r.path, os.O_RDWR|syscall.O_DIRECT, 0)
		if err == nil {
			r.df = df
		}
	}
	return nil
}

// file returns the open file and the interval of the request, or writes the
// error response and returns nil.
func (r *Receiver) file(w http.ResponseWriter, req *http.Request) (*os.File, Interval) {
	r.mu.Lock()
	f, size := r.f, r.size
	r.mu.Unlock()
	if f == nil {
		httpErr(w, http.StatusInternalServerError, errors.New("ssync: file not open"))
		return nil, Interval{}
	}
	iv, err := ParseInterval(req.URL.Query(), size)
	if err != nil {
		httpErr(w, http.StatusInternalServerError, err)
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

// handleChecksum answers the SHA-512 of a fully allocated range, null for a
// range with holes (whose data the sender then sends), as Longhorn's
// receiver: a hole where the source holds data, zeroes included, is a
// difference (the replica's location index reads allocation, so an
// allocated page of zeroes hides the older layers' data).
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
	writeJSON(w, sum)
}

// handleRecorded answers the file's recorded checksum while it is current:
// 404 without one, 500 when the file changed since.
func (r *Receiver) handleRecorded(w http.ResponseWriter, _ *http.Request) {
	_, raw, err := CurrentRecorded(r.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		httpErr(w, http.StatusNotFound, err)
	case err != nil:
		httpErr(w, http.StatusInternalServerError, err)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	}
}

func (r *Receiver) handleWrite(w http.ResponseWriter, req *http.Request) {
	f, iv := r.file(w, req)
	if f == nil {
		return
	}
	if iv.Len() > MaxWriteData {
		httpErr(w, http.StatusInternalServerError, fmt.Errorf("ssync: writeData of %d bytes > %d", iv.Len(), MaxWriteData))
		return
	}
	buf := bufpool.Get(int(iv.Len()))
	defer bufpool.Put(buf)
	if _, err := io.ReadFull(req.Body, buf); err != nil {
		httpErr(w, http.StatusInternalServerError, fmt.Errorf("ssync: body shorter than %d bytes: %w", iv.Len(), err))
		return
	}
	n := iv.Len()
	var err error
	r.mu.Lock()
	empty, pace := r.empty, r.pace
	r.mu.Unlock()
	var ranges []sparse.Extent
	v := req.Header.Get(DataRangesHeader)
	named := v != "" && empty
	if named {
		if ranges, err = parseDataRanges(v, iv.Len()); err != nil {
			httpErr(w, http.StatusBadRequest, err)
			return
		}
	}
	if err := waitPace(req.Context(), pace, int(dataBytes(iv, ranges, named))); err != nil {
		httpErr(w, http.StatusServiceUnavailable, fmt.Errorf("ssync: writeData abandoned while paced: %w", err))
		return
	}
	if named {
		n, err = writeRanges(f, buf, iv.Begin, ranges)
		if err == nil && n > 0 {
			// Start the writeback now rather than at close's fsync, so
			// a rebuild does not pile up dirty pages that then stall
			// the disk (and the volume's clients) at once.
			_ = unix.SyncFileRange(int(f.Fd()), iv.Begin, iv.Len(), unix.SYNC_FILE_RANGE_WRITE)
		}
	} else {
		err = r.writeAt(f, buf, iv.Begin)
	}
	if err != nil {
		httpErr(w, http.StatusInternalServerError, err)
		return
	}
	r.mu.Lock()
	_, seen := r.checked[iv.Begin]
	r.mu.Unlock()
	if !seen {
		r.processed.Add(n)
	}
}

// dataBytes is what a writeData of iv writes: the bytes of its data
// ranges when it names them (named), else all of iv.
func dataBytes(iv Interval, ranges []sparse.Extent, named bool) int64 {
	if !named {
		return iv.Len()
	}
	var n int64
	for _, e := range ranges {
		n += e.Length
	}
	return n
}

// writeRanges writes the ranges of buf (offsets relative to buf, which
// belongs at off) and leaves the bytes between them unwritten: holes of the
// source, in a file that was all holes. It returns the bytes written.
func writeRanges(f *os.File, buf []byte, off int64, ranges []sparse.Extent) (int64, error) {
	var written int64
	for _, e := range ranges {
		if _, err := f.WriteAt(buf[e.Offset:e.End()], off+e.Offset); err != nil {
			return written, err
		}
		written += e.Length
	}
	return written, nil
}

// writeAt writes through the O_DIRECT descriptor when there is one and the
// request is aligned (pooled buffers are page aligned), else buffered.
func (r *Receiver) writeAt(f *os.File, buf []byte, off int64) error {
	r.mu.Lock()
	df := r.df
	r.mu.Unlock()
	if df != nil && off%directIOAlign == 0 && len(buf)%directIOAlign == 0 && bufpool.Aligned(buf) {
		if _, err := df.WriteAt(buf, off); err == nil {
			return nil
		}
	}
	_, err := f.WriteAt(buf, off)
	return err
}

// handleClose syncs and closes the file, records the sender's checksum
// (when it sent one) with the file's change time, answers, and stops.
func (r *Receiver) handleClose(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	r.mu.Lock()
	var err error
	for _, f := range []*os.File{r.df, r.f} {
		if f != nil && err == nil {
			err = f.Sync()
		}
	}
	if cerr := r.closeFilesLocked(); err == nil {
		err = cerr
	}
	r.mu.Unlock()
	if method, sum := q.Get("checksumMethod"), q.Get("checksum"); err == nil && method != "" && sum != "" {
		err = r.record(method, sum)
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

func (r *Receiver) record(method, sum string) error {
	ct, err := ChangeTime(r.path)
	if err != nil {
		return err
	}
	return WriteRecorded(r.path, RecordedMetadata{Method: method, Checksum: sum, ChangeTime: ct})
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func rename(from, to string) error { return os.Rename(from, to) }
